#pragma once
// Subcommands of the `lagpilot` binary. Each registers its options on the CLI11 app and returns
// the callback that runs it; the callback returns the process exit code.
//   0  success
//   1  the job ran but failed its own check (e.g. messages lost)
//   2  bad input: command line, config file or trace (the message names what and where)

#include <functional>

#include <CLI/CLI.hpp>

namespace lagpilot::cli {

using CommandMain = std::function<int()>;

CommandMain add_sim_command(CLI::App& app);
CommandMain add_run_command(CLI::App& app);
CommandMain add_broker_command(CLI::App& app);
CommandMain add_produce_command(CLI::App& app);
CommandMain add_ctl_command(CLI::App& app);  // client of a running `run`'s control API
CommandMain add_tune_command(CLI::App& app);  // search a policy's parameters (sim/tuner.h)
CommandMain add_calibrate_command(CLI::App& app);  // measure the live consumer, fit the USL
CommandMain add_advise_command(CLI::App& app);     // check a config against the practice

}  // namespace lagpilot::cli
