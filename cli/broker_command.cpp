// `lagpilot broker`: a standalone embedded Kafka cluster (librdkafka's mock) on loopback.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/shutdown_signal.h"
#include "controller/loadgen/embedded_broker.h"

namespace lagpilot::cli {

CommandMain add_broker_command(CLI::App& app) {
  struct Options {
    int brokers = 1;
    std::vector<std::string> topics{"events"};
    int partitions = 8;
  };
  auto o = std::make_shared<Options>();
  app.add_option("--brokers", o->brokers, "Number of brokers in the mock cluster")
      ->check(CLI::Range(1, 16))
      ->capture_default_str();
  app.add_option("--topic", o->topics, "Topic(s) to create (repeatable)")->capture_default_str();
  app.add_option("--partitions", o->partitions, "Partitions per topic")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.footer(
      "Prints bootstrap.servers on the first line of stdout and runs until SIGINT/SIGTERM.\n"
      "Example: kcat -b $(head -1 broker.out) -t events -P");
  return [o] {
    ShutdownSignal::install();
    EmbeddedBrokerOptions options;
    options.brokers = o->brokers;
    for (const auto& t : o->topics) options.topics.emplace_back(t, o->partitions);
    EmbeddedBroker broker(options);
    std::cout << broker.bootstrap_servers() << std::endl;
    std::string topics;
    for (const auto& t : o->topics) topics += (topics.empty() ? "" : ",") + t;
    spdlog::info("embedded broker: {} broker(s), topics {} x {} partitions; Ctrl-C stops it",
                 o->brokers, topics, o->partitions);
    while (!ShutdownSignal::wait_for(3600)) {
    }
    spdlog::info("embedded broker: stopping");
    return 0;
  };
}

}  // namespace lagpilot::cli
