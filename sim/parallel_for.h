#pragma once
// Runs independent jobs on a few threads: the tuner's configurations and the simulator's
// policies are each a simulation that shares nothing with the others.
//
// Jobs are handed out one index at a time from a shared counter, so a slow job does not hold
// back the others. A failure does not stop the other jobs; once all have finished, the failure
// of the lowest index is rethrown, so which error surfaces does not depend on the scheduling.

#include <cstddef>
#include <functional>

namespace lagpilot::sim {

// `requested` threads, or, when it is 0 or less, one per hardware thread (at least one).
int hardware_threads(int requested);

// Runs job(i) for every i in [0, count) on up to `threads` threads (the calling thread alone
// when that is one or fewer); rethrows the first failure by index after all have finished.
void parallel_for(std::size_t count, int threads, const std::function<void(std::size_t)>& job);

}  // namespace lagpilot::sim
