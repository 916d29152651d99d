// End-to-end consumption benchmarks against the embedded broker, side by side in one
// run on the same topic:
//   1. no-op handler: lagpilot's KafkaSource + WorkerPool (the code `lagpilot run` runs) versus a
//      plain librdkafka consumer, kcat, writing to /dev/null. Prints both rates and the ratio
//      (goal: >= 0.9).
//   2. 1 ms handler: throughput with 16 workers versus 1 worker (goal: >= 12x).
// Rates exclude the consumer-group join (the clock starts when the first message has been
// handled); kcat runs without a group (assign), so it pays no join either.
//
// Usage: consume_bench [--messages N] [--partitions P] [--slow-seconds S] [--ordering O]
//                      [--skip-kcat] [--skip-slow]
// (--ordering key|partition|unordered applies to the no-op part; --skip-* are for profiling.)
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "controller/kafka/kafka_source.h"
#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/producer.h"
#include "controller/pool/worker_pool.h"
#include "controller/steady_clock.h"

using namespace lagpilot;

namespace {

double wall() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void prefill(const std::string& bootstrap, const std::string& topic, uint64_t n) {
  SteadyClock clock;
  ProducerOptions po;
  po.bootstrap = bootstrap;
  po.topic = topic;
  po.rate = 1e9;  // as fast as the broker takes them
  po.count = n;
  po.keys = 64;
  std::atomic<bool> stop{false};
  const ProducerStats s = PacedProducer(po, clock).run(stop);
  if (s.delivered != n) {
    std::fprintf(stderr, "prefill: delivered %llu of %llu\n",
                 static_cast<unsigned long long>(s.delivered), static_cast<unsigned long long>(n));
    std::exit(1);
  }
}

struct ConsumeResult {
  double rate = 0;       // messages/s from the first handled to the last
  double with_join = 0;  // seconds including the group join
  uint64_t processed = 0;
  SourceStats stats;  // at the end
  PoolWindow window;  // the pool's whole run
};

// Consumes `topic` with KafkaSource + WorkerPool of `workers` until `target` messages are done
// or `max_seconds` after the first message.
ConsumeResult consume_with_lagpilot(const std::string& bootstrap, const std::string& topic,
                                    const std::string& group, int workers, uint64_t target,
                                    double max_seconds, MessageHandler handler,
                                    const std::string& ordering = "key") {
  SteadyClock clock;
  WorkerPoolOptions po;
  po.initial_workers = workers;
  po.max_workers = workers;
  po.queue_capacity = 10000;
  WorkerPool pool(po, clock);
  KafkaSourceConfig kc;
  kc.bootstrap_servers = bootstrap;
  kc.topics = {topic};
  kc.group_id = group;
  kc.properties["session.timeout.ms"] = "6000";
  kc.ordering = ordering;
  KafkaSource source(kc, pool, std::move(handler), clock);
  const double start = wall();
  source.start();
  double first = 0;
  ConsumeResult r;
  // Progress from the pool's completed count (one atomic load; the source's stats() would take
  // its lock every millisecond): the source reports every message it ran to the pool.
  const bool trace = std::getenv("CONSUME_BENCH_TRACE") != nullptr;  // stalls, for diagnosis
  double last_progress = 0;
  uint64_t last_count = 0;
  while (true) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    r.processed = pool.completed();
    if (first == 0 && r.processed > 0) first = wall();
    if (trace && first > 0 && r.processed != last_count) {
      const double now = wall();
      if (last_progress > 0 && now - last_progress > 0.05) {
        std::fprintf(stderr, "  [trace] %.3f s: no progress for %.3f s at %llu\n", now - first,
                     now - last_progress, static_cast<unsigned long long>(last_count));
      }
      last_progress = now;
      last_count = r.processed;
    }
    if (r.processed >= target || (first > 0 && wall() - first >= max_seconds)) break;
    if (wall() - start > 120) break;
  }
  const double end = wall();
  r.rate = first > 0 ? r.processed / (end - first) : 0;
  r.with_join = end - start;
  r.stats = source.stats();
  r.window = pool.take_window();
  source.stop(5);
  pool.shutdown(5);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t messages = 1'000'000;
  int partitions = 16;
  double slow_seconds = 5;
  std::string ordering = "key";
  bool skip_kcat = false, skip_slow = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--skip-kcat") {
      skip_kcat = true;
    } else if (a == "--skip-slow") {
      skip_slow = true;
    } else if (a == "--messages" && has_value) {
      messages = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--partitions" && has_value) {
      partitions = std::atoi(argv[++i]);
    } else if (a == "--slow-seconds" && has_value) {
      slow_seconds = std::atof(argv[++i]);
    } else if (a == "--ordering" && has_value) {
      ordering = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: consume_bench [--messages N] [--partitions P] [--slow-seconds S] "
                   "[--ordering key|partition|unordered] [--skip-kcat] [--skip-slow]\n");
      return 2;
    }
  }
  EmbeddedBroker broker({1, {{"fast", partitions}, {"slow", partitions}}});
  const std::string b = broker.bootstrap_servers();
  std::printf("prefilling %llu messages into %d partitions...\n",
              static_cast<unsigned long long>(messages), partitions);
  prefill(b, "fast", messages);

  // 1. kcat (plain librdkafka consumer) to /dev/null.
  double kcat_rate = 0, kcat_seconds = 0;
  // Also kcat with lagpilot's prefetch default (queued.min.messages, see kafka_config.cpp), so
  // that the comparison does not rest on that setting alone.
  double kcat_tuned_rate = 0, kcat_tuned_seconds = 0;
  if (!skip_kcat) {
    auto run_kcat = [&](const std::string& extra, double& rate, double& seconds) {
      const double t0 = wall();
      const std::string kcat =
          "kcat -C -b " + b + " -t fast -o beginning -e -q " + extra + " > /dev/null 2>&1";
      const int rc = std::system(kcat.c_str());
      seconds = wall() - t0;
      if (rc != 0) {
        std::fprintf(stderr, "kcat failed (%d); is it installed?\n", rc);
        std::exit(1);
      }
      rate = messages / seconds;
    };
    run_kcat("", kcat_rate, kcat_seconds);
    run_kcat("-X queued.min.messages=1000000", kcat_tuned_rate, kcat_tuned_seconds);
  }

  // lagpilot: no-op handler, default ordering (key), 4 workers.
  const ConsumeResult lp = consume_with_lagpilot(
      b, "fast", "bench-noop", 4, messages, 120, [](const SourceMessage&) {}, ordering);
  std::printf("no-op handler, %llu messages:\n", static_cast<unsigned long long>(messages));
  if (!skip_kcat) {
    std::printf("  kcat -C (plain librdkafka) : %10.0f msg/s (%.2f s, process start included)\n",
                kcat_rate, kcat_seconds);
  }
  std::printf(
      "  lagpilot source + pool     : %10.0f msg/s (%.2f s incl. group join; ordering %s)\n",
      lp.rate, lp.with_join, ordering.c_str());
  if (!skip_kcat) {
    std::printf("  ratio lagpilot / kcat      : %10.2f  (goal >= 0.90)\n", lp.rate / kcat_rate);
    std::printf(
        "  kcat, same prefetch setting: %10.0f msg/s (%.2f s; -X queued.min.messages=1000000)\n",
        kcat_tuned_rate, kcat_tuned_seconds);
    std::printf("  ratio lagpilot / that kcat : %10.2f\n", lp.rate / kcat_tuned_rate);
  }
  std::printf(
      "  (source: %llu pauses, %llu resumes, %llu refused while paused, %llu duplicates "
      "skipped, max unfinished %lld, max pending %lld; pool: %llu messages timed, p50 %.2g s, "
      "p99 %.2g s, mean busy %.2f)\n",
      static_cast<unsigned long long>(lp.stats.pauses),
      static_cast<unsigned long long>(lp.stats.resumes),
      static_cast<unsigned long long>(lp.stats.refused_while_paused),
      static_cast<unsigned long long>(lp.stats.duplicates_skipped),
      static_cast<long long>(lp.stats.max_unfinished_seen),
      static_cast<long long>(lp.stats.max_pending_seen),
      static_cast<unsigned long long>(lp.window.completed), lp.window.latency_p50,
      lp.window.latency_p99, lp.window.busy_mean);
  if (skip_slow) return 0;

  // 2. 1 ms handler: 16 workers versus 1.
  const uint64_t slow_messages = static_cast<uint64_t>(20000 * slow_seconds);
  prefill(b, "slow", slow_messages);
  auto sleep_1ms = [](const SourceMessage&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  const ConsumeResult one =
      consume_with_lagpilot(b, "slow", "bench-slow-1", 1, slow_messages, slow_seconds, sleep_1ms);
  const ConsumeResult sixteen =
      consume_with_lagpilot(b, "slow", "bench-slow-16", 16, slow_messages, slow_seconds, sleep_1ms);
  std::printf("1 ms handler (unordered by key: 64 keys over %d partitions):\n", partitions);
  std::printf("  1 worker                   : %10.0f msg/s\n", one.rate);
  std::printf("  16 workers                 : %10.0f msg/s\n", sixteen.rate);
  std::printf("  ratio 16 / 1               : %10.2f  (goal >= 12)\n", sixteen.rate / one.rate);
  return 0;
}
