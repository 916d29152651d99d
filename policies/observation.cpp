#include "policies/observation.h"

namespace lagpilot {

std::string describe(const Decision& decision) {
  std::string text = decision.policy + ": " + decision.reason;
  for (const auto& g : decision.guards) text += "; " + g;
  if (!decision.late.empty()) text += "; late tick: " + decision.late;
  return text;
}

}  // namespace lagpilot
