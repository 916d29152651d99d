#pragma once
// Which offset of one partition may be committed, when messages complete out of order.
//
// Algorithm: offsets are dispatched in increasing order (Kafka delivers a partition in offset
// order), so the tracker keeps the dispatched-but-not-yet-committable offsets in a FIFO sorted
// by offset (a ring buffer: no allocation once it has grown), each with a done flag. complete()
// finds its entry at index (offset - front offset) when the dispatched offsets have no gap
// there (O(1), the usual case), else by binary search (O(log n)), and sets the flag; then done
// entries are popped from the front (amortised O(1): each entry is pushed and popped once). The
// front is therefore always the oldest unfinished offset, and the commit offset (Kafka's "next
// offset to read") is:
//   - the front's offset while anything is unfinished (everything below it is done), else
//   - next_offset(): one past the highest dispatched offset (or the start / skip position).
// Offsets that were never dispatched (gaps from compaction, transaction markers, records lost
// to retention) are never waited for: only dispatched offsets are tracked, explicitly.
//
// Thread-safety: none. One tracker per partition, guarded by its owner's lock.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lagpilot {

class PartitionOffsetTracker {
 public:
  static constexpr int64_t kUnknown = -1;

  // `start_offset`: where consumption starts (e.g. the committed offset), or kUnknown.
  explicit PartitionOffsetTracker(int64_t start_offset = kUnknown) { reset(start_offset); }

  // Forgets everything; the position becomes `start_offset` (kUnknown allowed).
  void reset(int64_t start_offset);

  // Records that `offset` was handed out for processing. Offsets must increase: an offset
  // below next_offset() (a re-delivery of something already tracked or committed past) is not
  // recorded and false is returned. An offset above next_offset() leaves a gap that is not
  // waited for.
  bool dispatch(int64_t offset);

  // Marks a dispatched offset done. False (nothing changes) if it is not an unfinished
  // dispatched offset (never dispatched, already completed, or forgotten by reset()).
  bool complete(int64_t offset);

  // Moves the position forward to `offset` without dispatching anything (records below it
  // will never be delivered, e.g. after an offset reset to the log start). No-op if
  // offset <= next_offset(). Unfinished offsets below it are still waited for.
  void skip_to(int64_t offset);

  // The Kafka commit offset: every dispatched offset below it is done. kUnknown when nothing
  // was dispatched and no start offset is known.
  int64_t committable() const { return size_ == 0 ? next_offset_ : at(0).offset; }

  // One past the highest dispatched offset (or the start / skip position); kUnknown if none.
  int64_t next_offset() const { return next_offset_; }

  // Dispatched offsets not yet done.
  std::size_t unfinished() const { return unfinished_; }

  // Entries held: unfinished ones plus done ones that wait behind an unfinished one.
  std::size_t tracked() const { return size_; }

 private:
  struct Entry {
    int64_t offset;
    bool done;
  };

  // Logical index i (0 = front) of the ring buffer.
  const Entry& at(std::size_t i) const { return ring_[(head_ + i) & (ring_.size() - 1)]; }
  Entry& at(std::size_t i) { return ring_[(head_ + i) & (ring_.size() - 1)]; }
  std::size_t lower_bound(int64_t offset) const;  // first logical index with offset >= `offset`

  // Ring buffer of size_ entries from head_, sorted by offset; the front is never done.
  // Capacity is a power of two (or 0), doubled when full.
  std::vector<Entry> ring_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  int64_t next_offset_ = kUnknown;
  std::size_t unfinished_ = 0;
};

}  // namespace lagpilot
