// `lagpilot produce`: sequence-numbered messages paced by a token bucket, at a fixed rate or
// along a trace (time-compressed and rate-scaled).
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include "cli/commands.h"
#include "cli/shutdown_signal.h"
#include "controller/api/pacing_client.h"
#include "controller/loadgen/pacing_poller.h"
#include "controller/loadgen/producer.h"
#include "controller/steady_clock.h"
#include "policies/config_reader.h"
#include "sim/trace_reader.h"

namespace lagpilot::cli {

CommandMain add_produce_command(CLI::App& app) {
  struct Options {
    ProducerOptions producer;
    std::string trace;
    double speedup = 1.0;
    double peak_rate = 0.0;
    std::string pacing_url;
    double pacing_interval = 1.0;
  };
  auto o = std::make_shared<Options>();
  o->producer.topic = "events";
  app.add_option("--bootstrap", o->producer.bootstrap, "bootstrap.servers of the cluster")
      ->required();
  app.add_option("--topic", o->producer.topic, "Topic to produce to")->capture_default_str();
  auto* rate =
      app.add_option("--rate", o->producer.rate, "Messages per second")->check(CLI::PositiveNumber);
  auto* trace = app.add_option("--trace", o->trace, "Replay the arrival rate of a trace file")
                    ->check(CLI::ExistingFile);
  rate->excludes(trace);
  app.add_option("--speedup", o->speedup, "With --trace: compress time by this factor")
      ->check(CLI::PositiveNumber)
      ->needs(trace)
      ->capture_default_str();
  app.add_option("--peak-rate", o->peak_rate,
                 "With --trace: scale rates so the trace's peak is this many messages/s")
      ->check(CLI::PositiveNumber)
      ->needs(trace);
  auto* pacing = app.add_option("--pacing-url", o->pacing_url,
                                "Follow a pacing recommendation: GET this URL (a running `lagpilot "
                                "run`'s http://HOST:PORT/v1/pacing) every --pacing-interval and "
                                "re-rate to its rate and burst; --rate applies until it has one");
  pacing->excludes(trace);
  app.add_option("--pacing-interval", o->pacing_interval,
                 "With --pacing-url: seconds between two fetches (the producer's tick)")
      ->check(CLI::PositiveNumber)
      ->needs(pacing)
      ->capture_default_str();
  app.add_option("--keys", o->producer.keys, "Number of distinct keys (0: no key)")
      ->capture_default_str();
  app.add_option("--count", o->producer.count, "Stop after this many messages (0: no limit)")
      ->capture_default_str();
  app.add_option("--first-seq", o->producer.first_seq, "First sequence number")
      ->capture_default_str();
  app.add_option("--padding", o->producer.padding_bytes, "Extra bytes per value")
      ->capture_default_str();
  app.footer(
      "Each value is 'seq=<n> sent_us=<epoch microseconds>' so consumers can check loss,\n"
      "duplicates and record age. Prints produced/delivered/failed at the end; exit 1 if any\n"
      "delivery failed. With --pacing-url, a changed recommendation is followed within two\n"
      "--pacing-interval ticks (docs/pipeline.md).");
  return [o] {
    ShutdownSignal::install();
    if (!o->trace.empty()) {
      sim::Trace t = sim::compress_time(sim::load_trace(o->trace), o->speedup);
      if (o->peak_rate > 0) t = sim::scale_to_peak(std::move(t), o->peak_rate);
      o->producer.trace_rates = t.rates;
      o->producer.trace_bin_seconds = t.bin_seconds;
      spdlog::info("replaying {}: {} bins of {:.3f} s, peak {:.0f}/s, {:.0f} messages", o->trace,
                   t.rates.size(), t.bin_seconds, t.peak_rate(), t.total_messages());
    }
    SteadyClock clock;
    std::unique_ptr<PacingPoller> poller;
    if (!o->pacing_url.empty()) {
      const auto url = parse_http_url(o->pacing_url);
      if (!url) {
        throw ConfigError("--pacing-url",
                          "must be http://HOST:PORT/PATH, got \"" + o->pacing_url + "\"");
      }
      const double timeout = std::min(o->pacing_interval, 5.0);
      poller = std::make_unique<PacingPoller>(
          [url = *url, timeout, where = o->pacing_url,
           warned = false]() mutable -> std::optional<PaceTarget> {
            std::string error;
            const auto doc = get_json(url, timeout, &error);
            if (!doc) {
              if (!warned) spdlog::warn("produce: GET {}: {} (keeping the pace)", where, error);
              warned = true;
              return std::nullopt;
            }
            warned = false;
            return pace_target_from_json(*doc);
          },
          o->pacing_interval);
      o->producer.pace = [p = poller.get()] { return p->latest(); };
    }
    PacedProducer producer(o->producer, clock);
    // The poller's thread fetches once per --pacing-interval; the producer only reads the last
    // answer (never waiting on HTTP).
    std::atomic<bool> produced_all{false};
    std::thread fetcher;
    if (poller) {
      fetcher = std::thread([&] {
        while (!produced_all.load() && !ShutdownSignal::flag().load()) {
          poller->tick(clock.now());
          while (!produced_all.load() && !ShutdownSignal::flag().load() &&
                 clock.now() < poller->next_due()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
        }
      });
    }
    ProducerStats s;
    try {
      s = producer.run(ShutdownSignal::flag());
    } catch (...) {
      produced_all = true;
      if (fetcher.joinable()) fetcher.join();
      throw;
    }
    produced_all = true;
    if (fetcher.joinable()) fetcher.join();
    std::cout << "produced=" << s.produced << " delivered=" << s.delivered << " failed=" << s.failed
              << std::endl;
    return s.failed == 0 ? 0 : 1;
  };
}

}  // namespace lagpilot::cli
