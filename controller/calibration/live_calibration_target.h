#pragma once
// The Calibrator's target in a live consumer: a KafkaSource feeding a WorkerPool.

#include "controller/calibration/calibrator.h"
#include "controller/kafka/kafka_source.h"
#include "controller/pool/worker_pool.h"

namespace lagpilot {

// A KafkaSource feeding a WorkerPool. Lag is KafkaSource::refreshed_stats().total_lag (watermarks
// queried from the brokers: about 1 ms per partition on loopback), completed is
// WorkerPool::completed(). Use it from the source's control thread (KafkaSource::stats()).
class LiveCalibrationTarget final : public CalibrationTarget {
 public:
  LiveCalibrationTarget(KafkaSource& source, WorkerPool& pool) : source_(source), pool_(pool) {}
  bool ready() override { return source_.joined(); }
  int set_workers(int workers) override { return pool_.resize(workers); }
  Reading read() override;
  PoolWindow take_window() override { return pool_.take_window(); }
  int assigned_partitions() const { return assigned_partitions_; }

 private:
  KafkaSource& source_;
  WorkerPool& pool_;
  int assigned_partitions_ = 0;  // at the last read()
};

}  // namespace lagpilot
