#include "controller/calibration/live_calibration.h"

#include <utility>

#include "controller/calibration/live_calibration_target.h"
#include "controller/kafka/kafka_source.h"

namespace lagpilot {

LiveCalibration calibrate_live(LiveCalibrationSetup setup, const Clock& clock) {
  const std::vector<int> steps = setup.options.effective_steps();
  setup.pool.initial_workers = steps.front();
  setup.pool.max_workers = steps.back();
  WorkerPool pool(setup.pool, clock);
  KafkaSource source(setup.kafka, pool, std::move(setup.handler), clock);
  if (setup.producer.bootstrap.empty()) setup.producer.bootstrap = setup.kafka.bootstrap_servers;
  if (setup.producer.topic.empty()) setup.producer.topic = setup.kafka.topics.front();
  SaturatingProducer producer(
      setup.producer, [&pool] { return pool.completed(); }, clock);
  producer.start();
  source.start();
  LiveCalibrationTarget target(source, pool);
  Calibrator calibrator(setup.options, target, clock, std::move(setup.sleep),
                        std::move(setup.progress));
  // The backlog is synthetic: the consumer need not finish it.
  auto stop_all = [&] {
    producer.stop(1.0);
    source.stop(1.0);
    pool.shutdown(0);
  };
  LiveCalibration run;
  try {
    run.result = calibrator.run();
  } catch (...) {
    stop_all();
    throw;
  }
  run.partitions = target.assigned_partitions();
  stop_all();
  run.produced = producer.stats();
  return run;
}

}  // namespace lagpilot
