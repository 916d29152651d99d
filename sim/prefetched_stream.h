#pragma once
// A stream of doubles computed ahead on a second thread.
//
// Algorithm: a producer thread runs the Fill it is given, which fills a whole block at a time
// (one call per kBlock values, so the per-value cost on the producer's side is a store, not a
// std::function call); the values go into a ring of kBlocks blocks of kBlock values, and the
// consumer reads them back in the same order. The producer fills a free block, then publishes it;
// the consumer reads a published block to its end, then hands it back. A block changes hands under
// the mutex (once per kBlock values), never a single value, so the per-value cost on either side is
// a store or a load. The producer waits while every block is full, the consumer while none is
// published. The producer may stop (a short fill) at any point; reading past the last value emitted
// is an error (std::logic_error), as is anything the producer throws (rethrown at the read that
// would have needed the missing values).
//
// The simulator uses it for random streams that do not depend on what a run does (per-message
// arrival times, per-message service times), so that a spare core draws them while the run
// simulates: the values are exactly the ones the run would have drawn itself.
//
// Thread-safety: one consumer thread calls peek()/next(); the destructor stops and joins the
// producer (which must not outlive what its function refers to).

#include <array>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lagpilot::sim {

class PrefetchedStream {
 public:
  // `fill(out, n)` writes the stream's next values to out[0, n) and returns how many it wrote;
  // fewer than n (0 included) ends the stream after them.
  using Fill = std::function<std::size_t(double* out, std::size_t n)>;

  static constexpr std::size_t kBlock = 8192;  // values per block
  static constexpr std::size_t kBlocks = 8;    // blocks in the ring (512 KB in all)

  explicit PrefetchedStream(Fill fill);
  PrefetchedStream(const PrefetchedStream&) = delete;
  PrefetchedStream& operator=(const PrefetchedStream&) = delete;
  ~PrefetchedStream();

  // The next value, without consuming it.
  double peek() {
    if (at_ == end_) fetch();
    return *at_;
  }
  // The next value, consumed.
  double next() {
    const double v = peek();
    ++at_;
    return v;
  }

 private:
  void fetch();  // hands the finished block back and waits for the next one
  void produce_blocks(const Fill& fill);
  // The producer's side: waits for a free block (nullptr once stop_ is set); publishes one.
  double* acquire_block();
  void publish_block(std::size_t filled);

  // The consumer's side (only its thread touches these).
  const double* at_ = nullptr;
  const double* end_ = nullptr;
  bool have_block_ = false;

  // mutex_ guards produced_, consumed_, finished_, stop_, failure_ and sizes_. Block i (mod
  // kBlocks) belongs to the producer from the moment it is free (consumed_ passed it) until it
  // is published (produced_ passed it), then to the consumer until consumed_ passes it.
  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t produced_ = 0;
  std::size_t consumed_ = 0;
  bool finished_ = false;  // the producer returned: no block will be published any more
  bool stop_ = false;
  std::exception_ptr failure_;
  std::array<std::vector<double>, kBlocks> blocks_;
  std::array<std::size_t, kBlocks> sizes_{};
  std::thread producer_;  // last: starts once everything above is constructed
};

}  // namespace lagpilot::sim
