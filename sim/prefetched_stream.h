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
// published. A side notifies the other only when that one is asleep, and a full ring wakes the
// producer only once half of it is free again: on a virtual machine a futex wake-up costs tens of
// microseconds of the waking thread's time, and the simulating thread (the consumer) is the one
// a run waits for. Without the hysteresis a producer that is faster than its consumer (the usual
// case) slept and woke once per block. The producer may stop (a short fill) at any point; reading
// past the last value emitted is an error (std::logic_error), as is anything the producer throws
// (rethrown at the read that would have needed the missing values).
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
#include <memory>
#include <mutex>
#include <thread>

namespace lagpilot::sim {

class PrefetchedStream {
 public:
  // `fill(out, n)` writes the stream's next values to out[0, n) and returns how many it wrote;
  // fewer than n (0 included) ends the stream after them.
  using Fill = std::function<std::size_t(double* out, std::size_t n)>;

  static constexpr std::size_t kBlock = 8192;  // values per block
  static constexpr std::size_t kBlocks = 8;    // blocks in the ring (512 KB in all)
  // A producer that found the ring full waits until this many blocks are free.
  static constexpr std::size_t kRefillBlocks = kBlocks / 2;

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

  // Whether the producer may go on: a block is free, after a wait kRefillBlocks of them.
  bool producer_may_run() const;

  // mutex_ guards produced_, consumed_, the two waiting flags, finished_, stop_, failure_ and
  // sizes_. Block i (mod kBlocks) belongs to the producer from the moment it is free (consumed_
  // passed it) until it is published (produced_ passed it), then to the consumer until consumed_
  // passes it.
  std::mutex mutex_;
  std::condition_variable block_free_;       // the producer waits on it
  std::condition_variable block_published_;  // the consumer waits on it
  std::size_t produced_ = 0;
  std::size_t consumed_ = 0;
  bool producer_waiting_ = false;
  bool consumer_waiting_ = false;
  bool finished_ = false;  // the producer returned: no block will be published any more
  bool stop_ = false;
  std::exception_ptr failure_;
  // Not zeroed: the producer's first writes fault the pages in on its own thread.
  std::array<std::unique_ptr<double[]>, kBlocks> blocks_;
  std::array<std::size_t, kBlocks> sizes_{};
  std::thread producer_;  // last: starts once everything above is constructed
};

}  // namespace lagpilot::sim
