// lagpilot: adaptive autoscaling controller for Kafka consumers. Several subcommands; this file
// only dispatches, here or to lagpilot-live (see cli/commands.h).

#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <map>

#include "cli/commands.h"
#include "lagpilot/version.h"
#include "policies/policy_factory.h"

namespace {

struct Command {
  const char* name;
  const char* help;
  lagpilot::cli::CommandAdder adder;  // nullptr: runs in lagpilot-live
};

}  // namespace

int main(int argc, char** argv) {
  using namespace lagpilot::cli;
  const Command commands_in_order[] = {
      {"sim", "Replay a trace through the simulator and compare policies", add_sim_command},
      {"run", "Consume Kafka with the worker pool and the controller", live_command("run")},
      {"broker", "Run an embedded Kafka broker (librdkafka mock cluster) on loopback",
       live_command("broker")},
      {"produce", "Produce sequence-numbered messages at a paced rate or along a trace",
       live_command("produce")},
      {"tune", "Search a policy's parameters on traces (grid, random, Nelder-Mead)",
       add_tune_command},
      {"ctl", "Control a running `lagpilot run` through its HTTP API", live_command("ctl")},
      {"calibrate", "Measure the consumer's true rate per pool size and fit its scaling curve",
       live_command("calibrate")},
      {"advise", "Check a config and a calibration against the practice (exit 1 on findings)",
       add_advise_command},
  };
  // Logs go to stderr; stdout carries results (tables, status lines, the broker's address).
  spdlog::set_default_logger(spdlog::stderr_color_mt("lagpilot"));
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL=debug (or e.g. "lagpilot=debug") for more
  // A live command this executable does not hold: hand the whole command line over before
  // anything else happens here.
  if (argc > 1) {
    for (const Command& c : commands_in_order) {
      if (c.adder == nullptr && std::strcmp(argv[1], c.name) == 0) return exec_live_binary(argv);
    }
  }

  CLI::App app{
      "lagpilot: adaptive autoscaling controller for Kafka consumers.\n"
      "Samples consumer lag and latency every tick and resizes a worker pool with a policy\n"
      "(" +
      lagpilot::policy_name_list() + ") and guards; replays traces offline to compare them."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "lagpilot " LAGPILOT_VERSION);

  std::map<CLI::App*, CommandMain> commands;
  for (const Command& c : commands_in_order) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    // A live command held elsewhere still shows in --help; its options are lagpilot-live's.
    if (c.adder != nullptr) commands[sub] = c.adder(*sub);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  for (CLI::App* sub : app.get_subcommands()) {
    if (!commands.contains(sub)) {  // only reached if something came before the command's name
      spdlog::error("`{}` runs in lagpilot-live: give it as the first argument", sub->get_name());
      return 2;
    }
    try {
      return commands.at(sub)();
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return 2;
    }
  }
  return 2;
}
