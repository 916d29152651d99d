#pragma once
// kInf, for the policies' and the simulator's "no bound" and "never" values: one definition, so
// that translation units compiled together (the sanitizer trees' unity builds) do not each
// declare their own.
//
// Thread-safety: a constant.

#include <limits>

namespace lagpilot {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace lagpilot
