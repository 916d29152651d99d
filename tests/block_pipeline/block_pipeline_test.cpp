#include "sim/block_pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace lagpilot::sim {
namespace {

// Records what each unit saw, checking the pipeline's promises as it goes: blocks in order per
// unit, a produced block in the slot it reads, a leader's block before its follower's, and no
// more than `window` blocks alive.
struct Recorder {
  explicit Recorder(std::size_t units, std::size_t window, int64_t blocks)
      : window(window), blocks(blocks), seen(units), slot_block(window, -1) {}

  BlockPipeline::Steps steps(std::vector<std::size_t> leaders) {
    leader_of = std::move(leaders);
    BlockPipeline::Steps s;
    s.produce = [this](int64_t block, std::size_t slot) {
      std::lock_guard lock(mutex);
      if (block >= blocks) return false;
      EXPECT_EQ(block, produced) << "blocks are produced in order";
      EXPECT_EQ(slot, static_cast<std::size_t>(block) % window);
      for (std::size_t u = 0; u < seen.size(); ++u) {  // units still running are past the slot
        const auto ran = static_cast<int64_t>(seen[u].size());
        if (fails_at[u] >= 0 && ran > fails_at[u]) continue;  // finished
        EXPECT_GT(ran, block - static_cast<int64_t>(window)) << "unit " << u;
      }
      slot_block[slot] = block;
      ++produced;
      return true;
    };
    s.step = [this](std::size_t unit, int64_t block, std::size_t slot) {
      {
        std::lock_guard lock(mutex);
        EXPECT_EQ(slot_block[slot], block) << "unit " << unit << " reads the block it was given";
        EXPECT_EQ(static_cast<int64_t>(seen[unit].size()), block) << "unit " << unit;
        const std::size_t lead = leader_of[unit];
        if (lead != BlockPipeline::kNone && !(fails_at[lead] >= 0 && fails_at[lead] <= block)) {
          EXPECT_GT(static_cast<int64_t>(seen[lead].size()), block)
              << "unit " << unit << " ran block " << block << " before its leader " << lead;
        }
      }
      // A block takes a while, so that another thread could start a block too early meanwhile;
      // it counts as run once it ends.
      for (int i = 0; i < 20; ++i) std::this_thread::yield();
      std::lock_guard lock(mutex);
      seen[unit].push_back(block);
      return !(fails_at[unit] >= 0 && block == fails_at[unit]);
    };
    s.waits_for = [this](std::size_t unit) { return leader_of[unit]; };
    fails_at.assign(seen.size(), -1);
    return s;
  }

  std::size_t window;
  int64_t blocks;
  std::mutex mutex;  // guards everything below
  int64_t produced = 0;
  std::vector<std::vector<int64_t>> seen;  // by unit: the blocks it ran, in order
  std::vector<int64_t> slot_block;         // by slot: the block produced in it
  std::vector<std::size_t> leader_of;
  std::vector<int64_t> fails_at;  // by unit: the block whose step says "no more" (-1: none)
};

TEST(BlockPipeline, EveryUnitRunsEveryBlockInOrderAfterItsLeader) {
  const std::size_t none = BlockPipeline::kNone;
  for (const int threads : {1, 2, 3, 5}) {
    for (const std::size_t window : {1u, 2u, 4u}) {
      Recorder r(5, window, 37);
      const auto steps = r.steps({none, 0, 0, none, 3});  // 1 and 2 follow 0, 4 follows 3
      BlockPipeline::run(5, window, threads, steps);
      EXPECT_EQ(r.produced, 37);
      for (std::size_t u = 0; u < 5; ++u) {
        ASSERT_EQ(r.seen[u].size(), 37u) << "unit " << u << ", " << threads << " threads";
      }
    }
  }
}

// A leader runs ahead of its followers as far as the window lets it: given the followers
// first, it fell behind them, and then every other thread waited while it ran its next block.
// With one thread the order is fixed: the leader (unit 1 here, so that the lowest index does not
// favour it) runs the window's blocks before its first follower starts.
TEST(BlockPipeline, ALeaderRunsAheadOfItsFollowers) {
  const std::size_t none = BlockPipeline::kNone;
  for (const std::size_t window : {2u, 4u}) {
    Recorder r(3, window, 20);
    std::vector<std::size_t> order;  // units, in the order their steps ran
    auto steps = r.steps({1, none, 1});
    const auto step = steps.step;
    steps.step = [&](std::size_t unit, int64_t block, std::size_t slot) {
      order.push_back(unit);
      return step(unit, block, slot);
    };
    BlockPipeline::run(3, window, 1, steps);
    ASSERT_EQ(order.size(), 60u);
    for (std::size_t k = 0; k < window; ++k) {
      EXPECT_EQ(order[k], 1u) << "step " << k << ", window " << window;
    }
  }
}

TEST(BlockPipeline, AFailedLeaderReleasesItsFollowers) {
  const std::size_t none = BlockPipeline::kNone;
  for (const int threads : {1, 2}) {
    Recorder r(3, 2, 20);
    auto steps = r.steps({none, 0, 0});
    r.fails_at[0] = 6;  // the leader runs blocks 0 .. 6, then takes no more
    BlockPipeline::run(3, 2, threads, steps);
    EXPECT_EQ(r.seen[0].size(), 7u);
    EXPECT_EQ(r.seen[1].size(), 20u);
    EXPECT_EQ(r.seen[2].size(), 20u);
  }
}

TEST(BlockPipeline, AProduceFailureStopsEverythingAndIsRethrown) {
  for (const int threads : {1, 2}) {
    std::atomic<int> steps_run{0};
    BlockPipeline::Steps s;
    s.produce = [](int64_t block, std::size_t) {
      if (block == 3) throw std::runtime_error("no block 3");
      return true;
    };
    s.step = [&](std::size_t, int64_t block, std::size_t) {
      EXPECT_LT(block, 3);
      ++steps_run;
      return true;
    };
    s.waits_for = [](std::size_t) { return BlockPipeline::kNone; };
    EXPECT_THROW(BlockPipeline::run(2, 8, threads, s), std::runtime_error);
    EXPECT_LE(steps_run.load(), 6);
  }
}

TEST(BlockPipeline, UnitsWaitingForEachOtherAreAnError) {
  BlockPipeline::Steps s;
  s.produce = [](int64_t block, std::size_t) { return block < 4; };
  s.step = [](std::size_t, int64_t, std::size_t) { return true; };
  s.waits_for = [](std::size_t unit) { return std::size_t{1} - unit; };  // 0 waits for 1, 1 for 0
  EXPECT_THROW(BlockPipeline::run(2, 2, 2, s), std::logic_error);
  EXPECT_THROW(BlockPipeline::run(2, 0, 1, s), std::invalid_argument);
}

}  // namespace
}  // namespace lagpilot::sim
