// Your own message handler, autoscaled by lagpilot::Service.
//
// With no --bootstrap, the config's "broker": "embedded" starts librdkafka's mock cluster
// in-process and this program produces --messages sequence-numbered messages into it; the
// Service consumes them with the pid policy between 4 and 16 workers, and the program exits 0
// once every message was handled (1 if some were not within --timeout seconds).
//
//   embed_example [--messages N] [--timeout S] [--config lagpilot.json]
//   embed_example --bootstrap host:9092 --topic events      (your cluster; runs until SIGINT)
#include <lagpilot/lagpilot.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

// The demo's producer and message format: part of the package, as lagpilot::loadgen.
#include "controller/loadgen/message_codec.h"
#include "controller/loadgen/producer.h"

namespace {

// Lock-free: written by the signal handler. A handler may not take a mutex, so a thread below
// turns it into service.request_stop().
std::atomic<bool> g_interrupted{false};

void on_signal(int) {
  g_interrupted = true;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t messages = 5000;
  double timeout = 60;
  std::string config_path, bootstrap, topic = "events";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--messages")
      messages = std::stoull(value);
    else if (flag == "--timeout")
      timeout = std::stod(value);
    else if (flag == "--config")
      config_path = value;
    else if (flag == "--bootstrap")
      bootstrap = value;
    else if (flag == "--topic")
      topic = value;
    else {
      std::cerr << "unknown flag " << flag << "\n";
      return 2;
    }
  }

  lagpilot::AppConfig config;
  try {
    if (!config_path.empty()) config = lagpilot::Service::config_from_file(config_path);
  } catch (const lagpilot::ConfigFileError& e) {
    std::cerr << e.what() << "\n";  // names the file and the JSON path (or line and column)
    return 2;
  }
  config.runtime.kafka.topics = {topic};
  config.http.port = 0;  // an ephemeral port for the API and /metrics
  if (!bootstrap.empty()) {
    config.runtime.broker = "external";
    config.runtime.kafka.bootstrap_servers = bootstrap;
  }
  const bool demo = bootstrap.empty();

  // The handler runs on pool workers, concurrently; messages with the same key arrive one at a
  // time, in offset order. Here it marks each sequence number seen and simulates 2 ms of I/O.
  std::vector<std::atomic<uint8_t>> seen(demo ? messages : 0);
  std::atomic<uint64_t> handled{0}, unique{0};
  lagpilot::MessageHandler handler = [&](const lagpilot::SourceMessage& m) {
    ++handled;
    if (auto decoded = lagpilot::decode_message(m.value); decoded && decoded->seq < seen.size()) {
      if (seen[decoded->seq].exchange(1) == 0) ++unique;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  };

  lagpilot::ServiceOptions options;
  options.on_status_line = [](const std::string& line) { std::cout << line << "\n"; };
  bool timed_out = false;                // tick thread only
  lagpilot::Service* service = nullptr;  // set before start(), so before the first tick
  options.on_tick = [&](const lagpilot::TickReport& report) {
    if (!demo) return;
    if (unique.load() == messages && report.observation.total_lag == 0) service->request_stop();
    if (service->clock().now() > timeout) {
      timed_out = true;
      service->request_stop();
    }
  };

  lagpilot::Service svc(config, handler, options);
  service = &svc;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  svc.start();
  std::thread signal_watch([&svc] {
    while (!svc.stop_requested()) {
      if (g_interrupted) svc.request_stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  std::cout << "lagpilot " << LAGPILOT_VERSION << ": consuming " << topic << " from "
            << svc.bootstrap_servers() << ", API on port " << svc.api_port() << "\n";

  std::atomic<bool> stop_producing{false};
  std::thread producer;
  if (demo) {
    lagpilot::ProducerOptions po;
    po.bootstrap = svc.bootstrap_servers();
    po.topic = topic;
    po.rate = 2000;
    po.count = messages;
    po.keys = 32;
    producer = std::thread([po, &svc, &stop_producing] {
      lagpilot::PacedProducer(po, svc.clock()).run(stop_producing);
    });
  }
  svc.run_until_stopped();  // the Service ticks on its own thread; this waits, then stops it
  signal_watch.join();
  stop_producing = true;
  if (producer.joinable()) producer.join();

  const nlohmann::json status = svc.status();
  std::cout << "handled " << handled.load() << " messages (" << unique.load() << " of " << messages
            << " distinct); final workers " << status["workers"]["current"] << "\n";
  if (demo && (timed_out || unique.load() != messages)) {
    std::cerr << "not every message was handled\n";
    return 1;
  }
  return 0;
}
