// lagpilot-live's live commands: run here (see cli/commands.h).
#include <cstring>

#include "cli/commands.h"

namespace lagpilot::cli {

CommandAdder live_command(const char* name) {
  static constexpr struct {
    const char* name;
    CommandAdder adder;
  } kLive[] = {{"run", add_run_command},
               {"broker", add_broker_command},
               {"produce", add_produce_command},
               {"ctl", add_ctl_command},
               {"calibrate", add_calibrate_command}};
  for (const auto& c : kLive) {
    if (std::strcmp(c.name, name) == 0) return c.adder;
  }
  return nullptr;
}

}  // namespace lagpilot::cli
