// Using lagpilot as a library: your own message handler, autoscaled by the pid policy.
//
// Build: part of the CMake build (target `custom_handler_example`). Run it with no arguments to
// use an embedded broker, or pass bootstrap servers and a topic of your own cluster:
//   build/release/examples/custom_handler_example [BOOTSTRAP TOPIC]
#include <atomic>
#include <chrono>
#include <iostream>
#include <thread>

#include "controller/steady_clock.h"
#include "controller/consumer_runtime.h"
#include "controller/loadgen/embedded_broker.h"
#include "controller/loadgen/producer.h"
#include "policies/policy_factory.h"

int main(int argc, char** argv) {
  using namespace lagpilot;
  std::unique_ptr<EmbeddedBroker> broker;
  RuntimeConfig config;
  if (argc >= 3) {
    config.kafka.bootstrap_servers = argv[1];
    config.kafka.topics = {argv[2]};
  } else {
    broker = std::make_unique<EmbeddedBroker>(EmbeddedBrokerOptions{1, {{"events", 8}}});
    config.kafka.bootstrap_servers = broker->bootstrap_servers();
  }

  // The handler runs on pool workers, concurrently; messages with the same key arrive one at a
  // time and in order (ordering "key"). Throwing counts the message as failed and moves on.
  std::atomic<uint64_t> bytes{0};
  MessageHandler handler = [&bytes](const SourceMessage& m) {
    bytes += m.value.size();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // your I/O-bound work here
  };

  GuardConfig guards;  // 4..16 workers
  SteadyClock clock;
  ConsumerRuntime runtime(config, make_policy("pid", nlohmann::json::object()), guards, handler,
                          clock);
  runtime.start();

  std::atomic<bool> stop{false};
  std::thread producer;
  if (broker) {  // some load for the demo: 3000 msg/s for ~10 s
    ProducerOptions po;
    po.bootstrap = config.kafka.bootstrap_servers;
    po.topic = "events";
    po.rate = 3000;
    po.count = 30000;
    po.keys = 32;
    producer = std::thread([po, &clock, &stop] { PacedProducer(po, clock).run(stop); });
  }
  for (int tick = 0; tick < 15; ++tick) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::cout << format_status_line(runtime.tick(), false) << "\n";
  }
  stop = true;
  if (producer.joinable()) producer.join();
  runtime.stop();
  std::cout << "handled " << bytes.load() << " bytes\n";
  return 0;
}
