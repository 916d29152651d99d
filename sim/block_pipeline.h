#pragma once
// Runs several units of work (simulate_all()'s runs) through the same sequence of blocks (blocks
// of ticks) on a few threads, so that every thread stays busy until the end whatever each unit
// costs.
//
// Algorithm: block b is first produced once (the arrival counts that every unit replays), into
// ring slot b % window; then every unit runs through it, in block order. A unit may name
// another unit it waits for (its leader, whose records of the block it reads): it runs block b
// only once that unit has run block b or has finished. A slot is produced again only once every
// unfinished unit is past the block it held, so at most `window` blocks are alive and a unit is
// never more than window - 1 blocks ahead of the slowest. Each thread repeatedly takes a ready
// piece of work, under one mutex, and runs it outside the mutex: producing first (it unblocks
// everyone), then a unit that others wait for (a leader that runs ahead keeps its followers
// ready: given the followers first, it fell behind them, and while it alone ran its next block
// the other threads had nothing to do), then the unit with the lowest next block, the lowest
// index on a tie.
// Which thread runs what depends on timing; what each unit computes does not, since it sees
// the same blocks and, through its leader's block, the same records in any schedule.
//
// Thread-safety: run() is called from one thread and returns when everything is done. The
// callbacks are called from the pipeline's threads (or the caller's, with one thread): produce
// never concurrently with itself, step(u, ...) never concurrently with step(u, ...) or with
// waits_for(u), and a call that reads what another call wrote (a unit's step after its leader's
// step of the same block, a step after the produce of its block) happens after it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>

namespace lagpilot::sim {

class BlockPipeline {
 public:
  static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

  struct Steps {
    // Prepares block `block` (0, 1, ...) in ring slot `slot`; false when there is no such block
    // (the end of the sequence; not called again after that).
    std::function<bool(int64_t block, std::size_t slot)> produce;
    // Runs unit `unit` through block `block`, held in `slot`; false when the unit takes no more
    // blocks (it failed).
    std::function<bool(std::size_t unit, int64_t block, std::size_t slot)> step;
    // The unit that `unit` must wait for before its next block (kNone: none). Asked before each
    // of `unit`'s blocks.
    std::function<std::size_t(std::size_t unit)> waits_for;
  };

  // Runs `units` units through every block on `threads` threads (the calling thread alone when
  // <= 1), with at most `window` (>= 1) blocks alive at once. An exception from produce stops
  // the pipeline and is rethrown once the threads have stopped; step must not throw.
  static void run(std::size_t units, std::size_t window, int threads, const Steps& steps);
};

}  // namespace lagpilot::sim
