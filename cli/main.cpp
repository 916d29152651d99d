// lagpilot: adaptive autoscaling controller for Kafka consumers. One binary, several
// subcommands; this file only dispatches.

#include <cstdio>
#include <exception>
#include <map>

#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "lagpilot/version.h"
#include "policies/policy_factory.h"

int main(int argc, char** argv) {
  // Logs go to stderr; stdout carries results (tables, status lines, the broker's address).
  spdlog::set_default_logger(spdlog::stderr_color_mt("lagpilot"));
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL=debug (or e.g. "lagpilot=debug") for more
  CLI::App app{
      "lagpilot: adaptive autoscaling controller for Kafka consumers.\n"
      "Samples consumer lag and latency every tick and resizes a worker pool with a policy\n"
      "(" +
      lagpilot::policy_name_list() + ") and guards; replays traces offline to compare them."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "lagpilot " LAGPILOT_VERSION);

  std::map<CLI::App*, lagpilot::cli::CommandMain> commands;
  auto add = [&](const char* name, const char* help, auto adder) {
    CLI::App* sub = app.add_subcommand(name, help);
    commands[sub] = adder(*sub);
  };
  add("sim", "Replay a trace through the simulator and compare policies", lagpilot::cli::add_sim_command);
  add("run", "Consume Kafka with the worker pool and the controller", lagpilot::cli::add_run_command);
  add("broker", "Run an embedded Kafka broker (librdkafka mock cluster) on loopback",
      lagpilot::cli::add_broker_command);
  add("produce", "Produce sequence-numbered messages at a paced rate or along a trace",
      lagpilot::cli::add_produce_command);
  add("tune", "Search a policy's parameters on traces (grid, random, Nelder-Mead)", lagpilot::cli::add_tune_command);
  add("ctl", "Control a running `lagpilot run` through its HTTP API", lagpilot::cli::add_ctl_command);
  add("calibrate", "Measure the consumer's true rate per pool size and fit its scaling curve", lagpilot::cli::add_calibrate_command);
  add("advise", "Check a config and a calibration against the practice (exit 1 on findings)",
      lagpilot::cli::add_advise_command);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  for (CLI::App* sub : app.get_subcommands()) {
    try {
      return commands.at(sub)();
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      return 2;
    }
  }
  return 2;
}
