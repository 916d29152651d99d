// lagpilot's live commands: none here, they run in lagpilot-live (see cli/commands.h).
#include "cli/commands.h"

namespace lagpilot::cli {

CommandAdder live_command(const char*) {
  return nullptr;
}

}  // namespace lagpilot::cli
