#pragma once
// Subcommands of the `lagpilot` binary. Each registers its options on the CLI11 app and returns
// the callback that runs it; the callback returns the process exit code.
//
// Two executables share them. `lagpilot` runs the commands that need only the simulator and the
// config readers (sim, tune, advise) and hands the live ones (run, broker, produce, ctl,
// calibrate) to `lagpilot-live` beside it, by exec with the same arguments: it does not link
// librdkafka, cpp-httplib, prometheus-cpp or OpenSSL, whose loading was a sixth to a quarter of
// a short `lagpilot sim`. `lagpilot-live` runs every command itself.
//   0  success
//   1  the job ran but failed its own check (e.g. messages lost)
//   2  bad input: command line, config file or trace (the message names what and where)

#include <CLI/CLI.hpp>
#include <functional>

namespace lagpilot::cli {

using CommandMain = std::function<int()>;

CommandMain add_sim_command(CLI::App& app);
CommandMain add_run_command(CLI::App& app);
CommandMain add_broker_command(CLI::App& app);
CommandMain add_produce_command(CLI::App& app);
CommandMain add_ctl_command(CLI::App& app);        // client of a running `run`'s control API
CommandMain add_tune_command(CLI::App& app);       // search a policy's parameters (sim/tuner.h)
CommandMain add_calibrate_command(CLI::App& app);  // measure the live consumer, fit the USL
CommandMain add_advise_command(CLI::App& app);     // check a config against the practice

using CommandAdder = CommandMain (*)(CLI::App& app);

// The adder of a live command (run, broker, produce, ctl, calibrate) in this executable, or
// nullptr where the command runs in lagpilot-live (cli/live_commands.cpp in lagpilot-live,
// cli/live_elsewhere.cpp in lagpilot).
CommandAdder live_command(const char* name);

// Replaces this process with lagpilot-live (the file of that name in this executable's
// directory), with the same argv; returns only on failure, after logging why, with exit code 2.
int exec_live_binary(char** argv);

}  // namespace lagpilot::cli
