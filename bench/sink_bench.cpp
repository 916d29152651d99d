// The sinks' own cost, side by side in one run:
//  * http: 16 threads delivering through HttpSink to a local no-op server, against 16 threads
//    each running a plain keep-alive cpp-httplib client loop (TCP_NODELAY on) to the same
//    server with the same body and CloudEvents headers' worth of bytes. The ratio is what the
//    sink adds (goal: >= 0.9).
//  * exec: 8 threads delivering through ExecSink to no-op Python children
//    (examples/exec-worker/worker.py), in messages/s (goal: 20,000/s on 2 cores).
// Rounds alternate between the two http variants so that machine noise hits both alike; the
// medians are printed.
//
//   build/release/bench/sink_bench [--seconds 3] [--rounds 3]
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "controller/sinks/exec_sink.h"
#include "controller/sinks/http_sink.h"

namespace {

using Clock = std::chrono::steady_clock;

// Runs `work` on `threads` threads for `seconds`; returns calls per second in all.
double rate(int threads, double seconds, const std::function<bool()>& work) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> calls{0};
  std::vector<std::thread> pool;
  const auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) n += work() ? 1 : 0;
      calls += n;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : pool) t.join();
  return static_cast<double>(calls.load()) /
         std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

lagpilot::SourceMessage message() {
  lagpilot::SourceMessage m;
  m.topic = "events";
  m.partition = 1;
  m.offset = 123456;
  m.key = "user-42";
  m.has_key = true;
  m.value = std::string(100, 'x');
  m.timestamp_ms = 1714566896789;
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 3;
  int rounds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seconds") seconds = std::atof(argv[i + 1]);
    if (flag == "--rounds") rounds = std::atoi(argv[i + 1]);
  }

  httplib::Server server;
  server.new_task_queue = [] { return new httplib::ThreadPool(32); };
  server.set_keep_alive_max_count(1u << 30);
  server.set_tcp_nodelay(true);
  server.Post("/events", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread listener([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  constexpr int kHttpThreads = 16;
  lagpilot::HttpSinkConfig config;
  config.url = "http://127.0.0.1:" + std::to_string(port) + "/events";
  lagpilot::HttpSink sink(config);
  const lagpilot::SourceMessage m = message();
  // The plain loop sends what the sink sends: the same body and headers.
  const httplib::Headers headers = {{"ce-specversion", "1.0"},
                                    {"ce-id", "events/1/123456"},
                                    {"ce-source", "kafka://events"},
                                    {"ce-type", "dev.lagpilot.kafka.message"},
                                    {"ce-time", "2024-05-01T12:34:56.789Z"},
                                    {"ce-partitionkey", "user-42"}};
  std::vector<double> plain_rates, sink_rates;
  for (int r = 0; r < rounds; ++r) {
    plain_rates.push_back(rate(kHttpThreads, seconds, [&] {
      thread_local httplib::Client client("127.0.0.1", port);
      thread_local bool configured = [] {
        client.set_keep_alive(true);
        client.set_tcp_nodelay(true);
        return true;
      }();
      (void)configured;
      auto res = client.Post("/events", headers, m.value, "application/octet-stream");
      return res && res->status == 200;
    }));
    sink_rates.push_back(rate(kHttpThreads, seconds, [&] {
      return sink.deliver(m).result == lagpilot::DeliveryResult::kDone;
    }));
    std::printf("round %d: plain client %.0f req/s, http sink %.0f req/s\n", r + 1,
                plain_rates.back(), sink_rates.back());
  }
  const double plain = median(plain_rates), via_sink = median(sink_rates);
  std::printf(
      "http, %d threads, median of %d x %.0f s: plain keep-alive client %.0f req/s, "
      "HttpSink %.0f req/s, ratio %.2f (goal >= 0.90)\n",
      kHttpThreads, rounds, seconds, plain, via_sink, via_sink / plain);
  server.stop();
  listener.join();

  constexpr int kExecThreads = 8;
  lagpilot::ExecSinkConfig exec_config;
  exec_config.command = {"python3",
                         std::string(LAGPILOT_SOURCE_DIR) + "/examples/exec-worker/worker.py"};
  std::vector<double> exec_rates;
  {
    lagpilot::ExecSink exec(exec_config);
    for (int r = 0; r < rounds; ++r) {
      exec_rates.push_back(rate(kExecThreads, seconds, [&] {
        return exec.deliver(m).result == lagpilot::DeliveryResult::kDone;
      }));
    }
  }
  std::printf(
      "exec, %d workers (no-op python3 children), median of %d x %.0f s: %.0f "
      "messages/s (goal >= 20000)\n",
      kExecThreads, rounds, seconds, median(exec_rates));
  return 0;
}
