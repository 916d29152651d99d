#include "controller/kafka/offset_tracker.h"

#include <algorithm>

namespace lagpilot {

void PartitionOffsetTracker::reset(int64_t start_offset) {
  head_ = 0;
  size_ = 0;
  next_offset_ = start_offset < 0 ? kUnknown : start_offset;
  unfinished_ = 0;
}

bool PartitionOffsetTracker::dispatch(int64_t offset) {
  if (offset < 0) return false;
  if (next_offset_ != kUnknown && offset < next_offset_) return false;
  if (size_ == ring_.size()) {
    std::vector<Entry> bigger(std::max<std::size_t>(16, 2 * ring_.size()));
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = at(i);
    ring_.swap(bigger);
    head_ = 0;
  }
  ring_[(head_ + size_) & (ring_.size() - 1)] = Entry{offset, false};
  ++size_;
  next_offset_ = offset + 1;
  ++unfinished_;
  return true;
}

std::size_t PartitionOffsetTracker::lower_bound(int64_t offset) const {
  std::size_t lo = 0, hi = size_;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (at(mid).offset < offset) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

bool PartitionOffsetTracker::complete(int64_t offset) {
  if (size_ == 0 || offset < at(0).offset) return false;
  // Fast path: without gaps in the dispatched offsets, the entry sits at offset - front.
  std::size_t i = static_cast<std::size_t>(offset - at(0).offset);
  if (i >= size_ || at(i).offset != offset) i = lower_bound(offset);
  if (i >= size_ || at(i).offset != offset || at(i).done) return false;
  at(i).done = true;
  --unfinished_;
  while (size_ > 0 && at(0).done) {
    head_ = (head_ + 1) & (ring_.size() - 1);
    --size_;
  }
  return true;
}

void PartitionOffsetTracker::skip_to(int64_t offset) {
  if (offset < 0) return;
  if (next_offset_ == kUnknown || offset > next_offset_) next_offset_ = offset;
}

}  // namespace lagpilot
