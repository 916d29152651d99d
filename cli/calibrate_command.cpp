// `lagpilot calibrate`: measure the live consumer's true rate at several pool sizes, fit the
// Universal Scalability Law, print the table and the recommended producer rate limit, and
// optionally write a config whose simulator model and `model` policy use the fitted curve.
// The procedure itself is controller/calibration.h; this file parses, wires and prints.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <iostream>

#include "cli/commands.h"
#include "cli/config.h"
#include "cli/duration_flag.h"
#include "cli/shutdown_signal.h"
#include "controller/calibration/calibrator.h"
#include "controller/calibration/live_calibration.h"
#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/synthetic_handler.h"
#include "controller/metrics/pacing.h"
#include "controller/steady_clock.h"
#include "sim/consumer_model.h"
#include "sim/simulation.h"
#include "sim/text_file.h"

namespace lagpilot::cli {
namespace {

// "1,2,4,8" -> {1, 2, 4, 8}. Throws ConfigError naming the flag and the bad element.
std::vector<int> parse_steps(const std::string& text) {
  std::vector<int> steps;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    std::size_t used = 0;
    int n = 0;
    try {
      n = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size()) {
      throw ConfigError("--steps", "must be comma-separated worker counts such as 1,2,4,8, got \"" +
                                       item + "\" in \"" + text + "\"");
    }
    steps.push_back(n);
    start = comma + 1;
  }
  return steps;
}

std::string utc_now_iso8601() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string steps_text(const std::vector<int>& steps) {
  std::string s;
  for (int n : steps) s += (s.empty() ? "" : ",") + std::to_string(n);
  return s;
}

// Progress on stderr: a bar redrawn in place on a terminal, else one log line per step.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool tty) : tty_(tty) {}

  void operator()(const CalibrationProgress& p) {
    using Phase = CalibrationProgress::Phase;
    if (!tty_) {
      if (p.phase == Phase::kStepDone && p.step != nullptr) {
        spdlog::info("calibrate: step {}/{}: {} workers: {:.1f} msg/s, p99 {:.2f} ms{}",
                     p.step_index + 1, p.step_count, p.workers, p.step->throughput,
                     p.step->latency_p99 * 1e3, p.step->saturated ? "" : " (ran dry)");
      } else if (p.phase == Phase::kWaitingForConsumer && !announced_wait_) {
        announced_wait_ = true;
        spdlog::info("calibrate: waiting for the consumer to join its group and see a backlog");
      }
      return;
    }
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(std::clamp(p.overall_fraction, 0.0, 1.0) * kWidth);
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar += std::string(static_cast<std::size_t>(kWidth - filled), '.');
    const char* phase = p.phase == Phase::kWaitingForConsumer ? "joining"
                        : p.phase == Phase::kWarmup           ? "warm-up"
                                                              : "measuring";
    if (p.phase == Phase::kWaitingForConsumer) {
      std::fprintf(stderr, "\r[%s] waiting for the consumer to join its group...          ",
                   bar.c_str());
    } else {
      std::fprintf(stderr, "\r[%s] step %d/%d: %3d workers, %-9s %4.1f/%.1f s  %9.1f msg/s ",
                   bar.c_str(), p.step_index + 1, p.step_count, p.workers, phase, p.step_elapsed,
                   p.step_seconds, p.rate);
    }
    std::fflush(stderr);
    drawn_ = true;
  }

  void finish() {
    if (drawn_) std::fprintf(stderr, "\r%100s\r", "");
    drawn_ = false;
  }

 private:
  bool tty_;
  bool drawn_ = false;
  bool announced_wait_ = false;
};

// The config `--write-config` writes: the input config (every key, defaults included), with
//  - policy "model" seeded with the fitted curve (other model params kept if the input already
//    used the model policy),
//  - sim.model the calibrated consumer model (ConsumerModelConfig::from_usl) and sim.partitions
//    the partitions the consumer had,
//  - "calibration": the measurement, for humans.
nlohmann::json calibrated_config(const AppConfig& base, const CalibrationResult& result,
                                 const nlohmann::json& record, int partitions,
                                 std::vector<std::string>& notes) {
  nlohmann::json doc = config_json(base);
  double sigma = result.fit.sigma;
  double kappa = result.fit.kappa;
  if (sigma > 1.0 || kappa > 1.0) {
    notes.push_back("fitted sigma/kappa above 1 clamped to 1 for the config");
    sigma = std::min(sigma, 1.0);
    kappa = std::min(kappa, 1.0);
  }
  nlohmann::json params = base.policy_name == "model" && base.policy_params.is_object()
                              ? base.policy_params
                              : nlohmann::json::object();
  params["fit"] = {{"lambda", result.fit.lambda}, {"sigma", sigma}, {"kappa", kappa}};
  doc["policy"] = {{"name", "model"}, {"params", params}};

  const sim::SimConfig sim_base = sim_config(base);
  sim::ConsumerModelConfig model_base = sim_base.model;
  if (result.service_cv_estimate >= 0) {
    model_base.service_distribution = "lognormal";
    model_base.service_cv = std::min(result.service_cv_estimate, 10.0);
  }
  const sim::ConsumerModelConfig model =
      sim::ConsumerModelConfig::from_usl(result.fit.lambda, sigma, kappa, model_base);
  doc["sim"]["model"] = model.to_json();
  if (partitions > 0) doc["sim"]["partitions"] = partitions;
  doc["calibration"] = record;
  return doc;
}

}  // namespace

CommandMain add_calibrate_command(CLI::App& app) {
  struct Options {
    std::string config_path;
    bool embedded_broker = false;
    std::string bootstrap;
    std::string topic;
    std::string group;
    int max_workers = 0;
    std::string steps;
    std::string dwell = "5s";
    std::string warmup = "1s";
    double headroom = 0.25;
    uint64_t keys = 1024;
    std::string write_config;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  app.add_option("--config", o->config_path,
                 "Config file (JSON): handler, pool, kafka, guards; defaults when omitted")
      ->check(CLI::ExistingFile);
  auto* embedded = app.add_flag("--embedded-broker", o->embedded_broker,
                                "Start librdkafka's mock cluster in-process (the default)");
  app.add_option("--bootstrap", o->bootstrap,
                 "bootstrap.servers of an external cluster (synthetic messages are produced "
                 "into --topic there: use a dedicated topic)")
      ->excludes(embedded);
  app.add_option("--topic", o->topic,
                 "Topic to saturate and consume (default: the config's "
                 "first kafka.topics, 'events')");
  app.add_option("--group", o->group,
                 "Consumer group of the calibration consumer (default: kafka.group_id + "
                 "\"-calibrate\", so a production group's offsets are left alone)");
  app.add_option("--max-workers", o->max_workers,
                 "Largest pool size; steps double from 1 up to it (default: guards.max_workers)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--steps", o->steps,
                 "Pool sizes to measure, e.g. 1,2,4,8,16 (overrides the "
                 "doubling steps)");
  app.add_option("--dwell", o->dwell, "How long each pool size is held, warm-up included")
      ->capture_default_str();
  app.add_option("--warmup", o->warmup, "Part of each dwell discarded before measuring")
      ->capture_default_str();
  auto* headroom = app.add_option(
      "--headroom", o->headroom,
      "Burst headroom, 0.2 to 0.3: rate limit = sustained rate at max workers x (1 - headroom) "
      "(default: the config's pacing.headroom, 0.25)");
  app.add_option("--keys", o->keys, "Distinct keys of the saturating producer (0: null keys)")
      ->capture_default_str();
  app.add_option("--write-config", o->write_config,
                 "Write a config with the fitted model (sim.model, policy model) and the "
                 "measurement (\"calibration\") to this file");
  app.add_flag("--json", o->json, "Print the result as JSON on stdout instead of the table");
  app.footer(
      "Holds the worker pool at each size for --dwell while a producer thread keeps the topic\n"
      "saturated (a bounded backlog ahead of the consumer), measures throughput and handler\n"
      "latency after --warmup, fits X(N) = lambda N / (1 + sigma (N-1) + kappa N (N-1)), and\n"
      "prints the table and the recommended producer rate limit. Defaults: embedded broker,\n"
      "the config's synthetic handler, steps 1,2,4,8,16, dwell 5 s with 1 s warm-up: about\n"
      "30 s in all. Exit 1 if interrupted or if nothing could be fitted. See docs/calibrate.md.");

  return [o, headroom]() -> int {
    AppConfig cfg = o->config_path.empty() ? AppConfig{} : load_config(o->config_path);
    if (o->embedded_broker) cfg.runtime.broker = "embedded";
    if (!o->bootstrap.empty()) {
      cfg.runtime.broker = "external";
      cfg.runtime.kafka.bootstrap_servers = o->bootstrap;
    }
    if (!o->topic.empty()) cfg.runtime.kafka.topics = {o->topic};
    if (cfg.runtime.kafka.topics.empty())
      throw ConfigError("kafka.topics", "no topic to calibrate");
    if (cfg.runtime.broker == "external" && cfg.runtime.kafka.bootstrap_servers.empty()) {
      throw ConfigError("kafka.bootstrap_servers",
                        "required with \"broker\": \"external\" (or pass --bootstrap)");
    }
    const std::string topic = cfg.runtime.kafka.topics.front();

    CalibrationOptions options;
    options.max_workers = o->max_workers > 0 ? o->max_workers : cfg.guards.max_workers;
    if (!o->steps.empty()) options.steps = parse_steps(o->steps);
    options.dwell_seconds = parse_duration("--dwell", o->dwell);
    options.warmup_seconds = parse_duration("--warmup", o->warmup, DurationFloor::kNonNegative);
    options.headroom = headroom->count() > 0 ? o->headroom : cfg.runtime.pacing.headroom;
    PacingConfig::check_headroom(options.headroom, "--headroom");
    try {
      options.validate();
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      const std::string flag = what.rfind("steps", 0) == 0         ? "--steps"
                               : what.rfind("dwell", 0) == 0       ? "--dwell"
                               : what.rfind("warmup", 0) == 0      ? "--warmup"
                               : what.rfind("max_workers", 0) == 0 ? "--max-workers"
                                                                   : "--headroom";
      throw ConfigError(flag, what);
    }
    const std::vector<int> steps = options.effective_steps();
    if (o->max_workers > 0 && steps.back() > o->max_workers) {
      throw ConfigError("--steps", "step " + std::to_string(steps.back()) +
                                       " is above --max-workers " + std::to_string(o->max_workers));
    }
    ShutdownSignal::install();

    // The consumer as `lagpilot run` builds it, with its own group and the pool pinned by us.
    RuntimeConfig run = cfg.runtime;
    run.kafka.topics = {topic};
    run.kafka.group_id = o->group.empty() ? cfg.runtime.kafka.group_id + "-calibrate" : o->group;
    std::unique_ptr<EmbeddedBroker> broker;
    std::string where;
    if (run.broker == "embedded") {
      EmbeddedBrokerOptions bo;
      bo.brokers = run.embedded_brokers;
      bo.topics.emplace_back(topic, run.topic_partitions);
      broker = std::make_unique<EmbeddedBroker>(bo);
      run.kafka.bootstrap_servers = broker->bootstrap_servers();
      where = "embedded broker at " + broker->bootstrap_servers();
    } else {
      where = run.kafka.bootstrap_servers;
      spdlog::warn("calibrate: producing synthetic messages into topic '{}' on {}", topic, where);
    }
    const SyntheticHandlerConfig& h = run.handler.synthetic;
    spdlog::info(
        "calibrate: topic '{}' on {}, group '{}'; synthetic handler {:.3g} ms mean, cv "
        "{:.3g}{}; steps {}; dwell {:.3g} s ({:.3g} s warm-up): about {:.0f} s",
        topic, where, run.kafka.group_id, h.service_mean_seconds * 1e3, h.service_cv,
        h.downstream_capacity > 0
            ? ", downstream capacity " + std::to_string(std::llround(h.downstream_capacity)) + "/s"
            : std::string(),
        steps_text(steps), options.dwell_seconds, options.warmup_seconds,
        options.dwell_seconds * steps.size());

    SteadyClock clock;
    auto synthetic = std::make_shared<SyntheticHandler>(run.handler.synthetic);
    LiveCalibrationSetup setup;
    setup.kafka = run.kafka;
    setup.pool = run.pool;
    setup.handler = [synthetic](const SourceMessage& m) { (*synthetic)(m); };
    setup.producer.keys = o->keys;
    setup.options = options;
    setup.sleep = [](double s) { return ShutdownSignal::wait_for(s); };
    ProgressPrinter printer(::isatty(STDERR_FILENO) == 1);
    setup.progress = [&printer](const CalibrationProgress& p) { printer(p); };
    LiveCalibration live;
    try {
      live = calibrate_live(std::move(setup), clock);
    } catch (...) {
      printer.finish();
      throw;
    }
    printer.finish();
    const CalibrationResult& result = live.result;
    const int partitions = live.partitions;
    const SaturatingProducerStats& produced = live.produced;

    nlohmann::json record = result.to_json();
    record["date"] = utc_now_iso8601();
    record["tool"] = "lagpilot calibrate 0.1.0";
    record["broker"] = run.broker == "embedded" ? "embedded" : run.kafka.bootstrap_servers;
    record["topic"] = topic;
    record["partitions"] = partitions;
    record["ordering"] = run.kafka.ordering;
    record["handler"] = run.handler.to_json();
    record["dwell_seconds"] = options.dwell_seconds;
    record["warmup_seconds"] = options.warmup_seconds;
    record["produced"] = produced.produced;
    // The producer pacing recommendation at max workers: the measured rate if the largest step
    // was guards.max_workers, else the fit there (controller/metrics/pacing.h).
    const PacingRecommendation pace = PacingRecommendation::from_calibration(
        record, cfg.guards.max_workers, options.headroom, cfg.runtime.tick_seconds);
    record["pacing"] = pacing_json(pace, pace.as_of_unix_seconds);
    record["mapping"] =
        "sim.model.service_mean_seconds = 1 / lambda, usl_sigma = sigma, usl_kappa = kappa, "
        "downstream_capacity = 0; policy.params.fit = {lambda, sigma, kappa}";

    if (o->json) {
      std::cout << record.dump(2) << std::endl;
    } else {
      std::cout << "calibration of topic '" << topic << "' (" << partitions
                << " partitions), synthetic handler " << h.service_mean_seconds * 1e3
                << " ms mean, dwell " << options.dwell_seconds << " s (" << options.warmup_seconds
                << " s warm-up)\n\n"
                << result.format_table();
      if (pace.available) {
        std::cout << "producer pacing at " << pace.max_workers
                  << " max workers: " << std::llround(pace.rate) << " msg/s, token-bucket burst "
                  << std::llround(pace.burst) << " (source " << pace.source << ", "
                  << std::lround(pace.headroom * 100) << " % headroom)\n";
      }
      std::cout << std::flush;
    }
    if (produced.failed > 0) {
      spdlog::warn("calibrate: {} of {} produced messages failed", produced.failed,
                   produced.produced);
    }
    if (!result.complete) {
      spdlog::error("calibrate: interrupted; no config written");
      return 1;
    }
    if (!result.fit.valid) {
      spdlog::error("calibrate: no fit; no config written");
      return 1;
    }
    if (!o->write_config.empty()) {
      std::vector<std::string> notes;
      AppConfig base = cfg;
      base.runtime.kafka.bootstrap_servers =
          cfg.runtime.broker == "embedded" ? std::string() : cfg.runtime.kafka.bootstrap_servers;
      nlohmann::json doc = calibrated_config(base, result, record, partitions, notes);
      for (const std::string& n : notes) spdlog::warn("calibrate: {}", n);
      // What `run`, `sim` and the model policy will do with it: it must load ("sim" included).
      config_from_json(doc);
      sim::write_text_file(o->write_config, doc.dump(2) + "\n");
      spdlog::info("calibrate: wrote {} (policy model seeded with the fit; sim.model calibrated)",
                   o->write_config);
    }
    return 0;
  };
}

}  // namespace lagpilot::cli
