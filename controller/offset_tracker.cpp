#include "controller/offset_tracker.h"

#include <algorithm>

namespace lagpilot {

void PartitionOffsetTracker::reset(int64_t start_offset) {
  entries_.clear();
  next_offset_ = start_offset < 0 ? kUnknown : start_offset;
  unfinished_ = 0;
}

bool PartitionOffsetTracker::dispatch(int64_t offset) {
  if (offset < 0) return false;
  if (next_offset_ != kUnknown && offset < next_offset_) return false;
  entries_.push_back(Entry{offset, false});
  next_offset_ = offset + 1;
  ++unfinished_;
  return true;
}

bool PartitionOffsetTracker::complete(int64_t offset) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), offset,
                             [](const Entry& e, int64_t o) { return e.offset < o; });
  if (it == entries_.end() || it->offset != offset || it->done) return false;
  it->done = true;
  --unfinished_;
  while (!entries_.empty() && entries_.front().done) entries_.pop_front();
  return true;
}

void PartitionOffsetTracker::skip_to(int64_t offset) {
  if (offset < 0) return;
  if (next_offset_ == kUnknown || offset > next_offset_) next_offset_ = offset;
}

}  // namespace lagpilot
