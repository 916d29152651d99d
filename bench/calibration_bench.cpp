// Live calibration figures, against the embedded broker with real handlers (a few seconds
// each). They depend on the machine's load, so they are printed here with their goals rather
// than asserted in the tests (tests/kafka/calibration_test.cpp keeps the logical checks):
//  * independent 5 ms handlers (cv 0.3): lambda within 15 % of 200/s, throughput grows with
//    workers (each step > 1.5x the last), efficiency at 4 workers > 0.85;
//  * 3 ms alone plus 2 ms inside one shared lock: lambda 150-220/s, at most ~520/s at 4
//    workers, efficiency < 0.75, and the fit sees contention (sigma + 4 kappa > 0.1).
//
//   build/release/bench/calibration_bench [--dwell 1.5]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "controller/calibration/live_calibration.h"
#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/synthetic_handler.h"
#include "controller/steady_clock.h"

namespace {

using namespace lagpilot;

LiveCalibration run(const std::string& topic, MessageHandler handler, double dwell) {
  EmbeddedBroker broker(EmbeddedBrokerOptions{1, {{topic, 4}}});
  LiveCalibrationSetup setup;
  setup.kafka.bootstrap_servers = broker.bootstrap_servers();
  setup.kafka.topics = {topic};
  setup.kafka.group_id = "calibration-bench-" + topic;
  setup.kafka.properties = {{"session.timeout.ms", "6000"}, {"heartbeat.interval.ms", "300"}};
  setup.handler = std::move(handler);
  setup.options.steps = {1, 2, 4};
  setup.options.dwell_seconds = dwell;
  setup.options.warmup_seconds = dwell / 3;
  setup.sleep = [](double s) {
    std::this_thread::sleep_for(std::chrono::duration<double>(s));
    return false;
  };
  SteadyClock clock;
  return calibrate_live(std::move(setup), clock);
}

const char* mark(bool ok) {
  return ok ? "met" : "MISSED";
}

}  // namespace

int main(int argc, char** argv) {
  double dwell = 1.5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--dwell") dwell = std::atof(argv[i + 1]);
  }
  bool all = true;

  SyntheticHandlerConfig hc;
  hc.service_mean_seconds = 0.005;
  hc.service_cv = 0.3;
  auto synthetic = std::make_shared<SyntheticHandler>(hc);
  const LiveCalibration linear = run(
      "calib-linear", [synthetic](const SourceMessage& m) { (*synthetic)(m); }, dwell);
  const CalibrationResult& a = linear.result;
  std::printf("independent 5 ms handlers:\n%s", a.format_table().c_str());
  if (a.steps.size() != 3 || !a.fit.valid) {
    std::printf("calibration incomplete\n");
    return 1;
  }
  const bool lambda_ok = std::abs(a.fit.lambda - 200) <= 30;
  const bool grows = a.steps[1].throughput > 1.5 * a.steps[0].throughput &&
                     a.steps[2].throughput > 1.5 * a.steps[1].throughput;
  const bool linear_ok = a.steps[2].efficiency > 0.85;
  std::printf("  lambda %.1f/s (goal 200 +- 15 %%): %s\n", a.fit.lambda, mark(lambda_ok));
  std::printf("  throughput %.0f, %.0f, %.0f/s (each > 1.5x the last): %s\n", a.steps[0].throughput,
              a.steps[1].throughput, a.steps[2].throughput, mark(grows));
  std::printf("  efficiency at 4 workers %.2f (goal > 0.85): %s\n", a.steps[2].efficiency,
              mark(linear_ok));
  all = all && lambda_ok && grows && linear_ok;

  auto lock = std::make_shared<std::mutex>();
  const LiveCalibration contended = run(
      "calib-contended",
      [lock](const SourceMessage&) {
        std::this_thread::sleep_for(std::chrono::microseconds(3000));
        std::lock_guard guard(*lock);
        std::this_thread::sleep_for(std::chrono::microseconds(2000));
      },
      dwell);
  const CalibrationResult& b = contended.result;
  std::printf("3 ms alone + 2 ms in a shared lock:\n%s", b.format_table().c_str());
  if (b.steps.size() != 3 || !b.fit.valid) {
    std::printf("calibration incomplete\n");
    return 1;
  }
  const bool b_lambda = b.fit.lambda > 150 && b.fit.lambda < 220;
  const bool ceiling = b.steps[2].throughput < 520;
  const bool not_linear = b.steps[2].efficiency < 0.75;
  const bool seen = b.fit.sigma + 4 * b.fit.kappa > 0.1;
  std::printf("  lambda %.1f/s (goal 150-220): %s\n", b.fit.lambda, mark(b_lambda));
  std::printf("  throughput at 4 workers %.0f/s (the lock's ceiling ~500): %s\n",
              b.steps[2].throughput, mark(ceiling));
  std::printf("  efficiency at 4 workers %.2f (goal < 0.75): %s\n", b.steps[2].efficiency,
              mark(not_linear));
  std::printf("  sigma + 4 kappa %.3f (goal > 0.1): %s\n", b.fit.sigma + 4 * b.fit.kappa,
              mark(seen));
  all = all && b_lambda && ceiling && not_linear && seen;
  return all ? 0 : 1;
}
