#pragma once
// One live calibration: a KafkaSource on the given topic feeding a WorkerPool that the
// Calibrator steps through its pool sizes, while a SaturatingProducer keeps a backlog ahead of
// the consumer. `lagpilot calibrate`, the calibration tests and bench/calibration_bench.cpp
// all run it.
//
// Thread-safety: calibrate_live() blocks the calling thread for the whole calibration (about
// dwell_seconds per step); the handler runs on the pool's workers.

#include <functional>

#include "controller/calibration/calibrator.h"
#include "controller/calibration/saturating_producer.h"
#include "controller/kafka/kafka_config.h"
#include "controller/kafka/source_message.h"
#include "controller/pool/worker_pool.h"
#include "policies/clock.h"

namespace lagpilot {

struct LiveCalibrationSetup {
  KafkaSourceConfig kafka;             // bootstrap_servers, topics (one), group_id, properties
  WorkerPoolOptions pool;              // initial and max workers come from the steps
  MessageHandler handler;              // the consumer's work
  SaturatingProducerOptions producer;  // bootstrap and topic default to kafka's
  CalibrationOptions options;
  Calibrator::Sleeper sleep;  // waits between reads; returns true to interrupt
  Calibrator::ProgressCallback progress = {};
};

struct LiveCalibration {
  CalibrationResult result;
  SaturatingProducerStats produced;
  int partitions = 0;  // assigned to the consumer at the end
};

// Runs it against a real clock; stops the producer, the source and the pool before returning
// (or rethrowing what the calibrator threw).
LiveCalibration calibrate_live(LiveCalibrationSetup setup, const Clock& clock);

}  // namespace lagpilot
