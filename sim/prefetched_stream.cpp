#include "sim/prefetched_stream.h"

#include <stdexcept>

namespace lagpilot::sim {

PrefetchedStream::PrefetchedStream(Fill fill) {
  for (std::unique_ptr<double[]>& b : blocks_) b = std::make_unique_for_overwrite<double[]>(kBlock);
  producer_ = std::thread([this, f = std::move(fill)] { produce_blocks(f); });
}

PrefetchedStream::~PrefetchedStream() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  block_free_.notify_one();
  producer_.join();
}

void PrefetchedStream::fetch() {
  std::unique_lock lock(mutex_);
  if (have_block_) {
    ++consumed_;
    have_block_ = false;
    if (producer_waiting_ && producer_may_run()) block_free_.notify_one();
  }
  if (produced_ == consumed_ && !finished_) {
    consumer_waiting_ = true;
    block_published_.wait(lock, [&] { return produced_ > consumed_ || finished_; });
    consumer_waiting_ = false;
  }
  if (produced_ == consumed_) {
    if (failure_) std::rethrow_exception(failure_);
    throw std::logic_error("PrefetchedStream: read past the last value");
  }
  const std::size_t b = consumed_ % kBlocks;
  have_block_ = true;
  at_ = blocks_[b].get();
  end_ = at_ + sizes_[b];
}

bool PrefetchedStream::producer_may_run() const {
  return stop_ || produced_ - consumed_ <= kBlocks - kRefillBlocks;
}

double* PrefetchedStream::acquire_block() {
  std::unique_lock lock(mutex_);
  if (!stop_ && produced_ - consumed_ == kBlocks) {
    producer_waiting_ = true;
    block_free_.wait(lock, [&] { return producer_may_run(); });
    producer_waiting_ = false;
  }
  if (stop_) return nullptr;
  return blocks_[produced_ % kBlocks].get();
}

void PrefetchedStream::publish_block(std::size_t filled) {
  std::lock_guard lock(mutex_);
  sizes_[produced_ % kBlocks] = filled;
  ++produced_;
  if (consumer_waiting_) block_published_.notify_one();
}

void PrefetchedStream::produce_blocks(const Fill& fill) {
  try {
    for (;;) {
      double* const block = acquire_block();  // the producer's until published
      if (block == nullptr) break;
      const std::size_t filled = fill(block, kBlock);
      if (filled > 0) publish_block(filled);
      if (filled < kBlock) break;
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    failure_ = std::current_exception();
  }
  std::lock_guard lock(mutex_);
  finished_ = true;
  if (consumer_waiting_) block_published_.notify_one();
}

}  // namespace lagpilot::sim
