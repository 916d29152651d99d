#include "sim/prefetched_stream.h"

#include <stdexcept>

namespace lagpilot::sim {

PrefetchedStream::PrefetchedStream(Fill fill) {
  for (std::vector<double>& b : blocks_) b.resize(kBlock);
  producer_ = std::thread([this, f = std::move(fill)] { produce_blocks(f); });
}

PrefetchedStream::~PrefetchedStream() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  producer_.join();
}

void PrefetchedStream::fetch() {
  std::unique_lock lock(mutex_);
  if (have_block_) {
    ++consumed_;
    have_block_ = false;
    changed_.notify_all();
  }
  changed_.wait(lock, [&] { return produced_ > consumed_ || finished_; });
  if (produced_ == consumed_) {
    if (failure_) std::rethrow_exception(failure_);
    throw std::logic_error("PrefetchedStream: read past the last value");
  }
  const std::size_t b = consumed_ % kBlocks;
  have_block_ = true;
  at_ = blocks_[b].data();
  end_ = at_ + sizes_[b];
}

double* PrefetchedStream::acquire_block() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return stop_ || produced_ - consumed_ < kBlocks; });
  if (stop_) return nullptr;
  return blocks_[produced_ % kBlocks].data();
}

void PrefetchedStream::publish_block(std::size_t filled) {
  std::lock_guard lock(mutex_);
  sizes_[produced_ % kBlocks] = filled;
  ++produced_;
  changed_.notify_all();
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
  changed_.notify_all();
}

}  // namespace lagpilot::sim
