#pragma once
// The consumer model's own event queue: events ordered by (time, sequence number), like
// policies/event_queue.h's EventQueue (events at equal times come out in the order they were
// scheduled), with one more operation for the model's hot path. An event carries a worker slot
// (below 2^24); the sequence numbers run below 2^40 (see sequences_left()).
//
// Algorithm: a binary min-heap in a vector, sifted with a hole (an element is written once, at
// its final place). A worker's completion schedules that worker's next completion at once
// whenever messages are queued; handle_top() therefore leaves the event it hands out at the root,
// and the next schedule() overwrites the root and sifts it down (one sift instead of a pop's sift
// down and a push's sift up). done() removes the root if nothing replaced it. Since every (time,
// sequence) key is unique, the events come out in exactly the order any correct priority queue
// gives. A node is 16 bytes: the time stored as an integer key with the doubles' order (see
// key_of), then the sequence number and the slot in one word (sequence << 24 | slot), so that
// (time, sequence) compares as one 128-bit unsigned number and a node moves in one load and one
// store. (At 24 bytes, with the slot apart, the heap's moves, its index arithmetic and its
// size, a division by 24, were a third of an M/M/c run's instructions on its event loop.)
//
// Why not EventQueue itself: it is the std::priority_queue the controller tests share, without a
// replace-top, and its sift's branch on which child is earlier was a third of an M/M/c run's
// mispredicted branches (callgrind's branch model). Giving EventQueue the same two changes
// (policies/, used by the fleet simulator and the tests) would let one queue serve all again.
//
// Its operations are always inlined: the consumer model's window loop calls them once or twice a
// message, and the calls (saves, reloads of the vector's pointers) cost as much as the sifts.
//
// Thread-safety: a plain single-threaded object.

#include <bit>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lagpilot::sim {

class EventHeap {
 public:
  static constexpr int kSlotBits = 24;
  static constexpr uint32_t kMaxSlot = (uint32_t{1} << kSlotBits) - 1;
  static constexpr uint64_t kMaxSeq = (uint64_t{1} << (64 - kSlotBits)) - 1;

  struct Event {
    double time;
    uint64_t seq;
    uint32_t slot;
  };

  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  // The earliest event's time (the heap must not be empty).
  double top_time() const {
    assert(!handling_);
    return time_of(heap_.front().time_key);
  }
  Event top() const {
    assert(!handling_);
    return event_of(heap_.front());
  }
  // The earliest event's time as its key (see key_of), for a caller that compares many times
  // against the heap's: comparing keys skips decoding the root's time.
  uint64_t top_key() const {
    assert(!handling_);
    return heap_.front().time_key;
  }

  // A time as an unsigned key with the order of the doubles (the sign bit flipped for positive
  // values, every bit for negative ones; -0 becomes +0 first, as the two compare equal). NaN is
  // not a valid time.
  static uint64_t key_of(double time) {
    assert(!std::isnan(time));
    const uint64_t bits = std::bit_cast<uint64_t>(time + 0.0);  // -0 + 0 is +0
    const uint64_t negative = static_cast<uint64_t>(static_cast<int64_t>(bits) >> 63);
    return bits ^ (negative | (uint64_t{1} << 63));
  }

  // `slot` <= kMaxSlot, and at most kMaxSeq events in all: the caller checks
  // sequences_left() now and then (a check per event was 1 % of an M/M/c run's instructions).
  // Returns the event's sequence number.
  [[gnu::always_inline]] uint64_t schedule(double time, uint32_t slot) {
    assert(slot <= kMaxSlot && next_seq_ <= kMaxSeq);
    const uint64_t seq = next_seq_++;
    const Node e{key_of(time), (seq << kSlotBits) | slot};
    if (handling_) {  // the handled event's place: sift the new one down from the root
      handling_ = false;
      sift_down(e);
    } else {
      heap_.push_back(e);
      sift_up(heap_.size() - 1, e);
    }
    return seq;
  }

  // How many more events schedule() can number.
  uint64_t sequences_left() const { return kMaxSeq + 1 - next_seq_; }

  // The earliest event, left in place until done(), or replaced by the next schedule().
  [[gnu::always_inline]] Event handle_top() {
    assert(!handling_ && !heap_.empty());
    handling_ = true;
    return event_of(heap_.front());
  }
  // Ends the handling of the event handle_top() returned: removes it unless it was replaced.
  [[gnu::always_inline]] void done() {
    if (!handling_) return;
    handling_ = false;
    const Node last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down_to_leaf(last);
  }

 private:
  // The time is kept as its key (key_of), so that (time, seq) compares as one 128-bit unsigned
  // number: a compare and a subtract with borrow, no branch, where two double compares, their
  // unordered flags and the seq compare took about ten instructions at every level of a sift.
  // The slot in the low bits of `tag` never decides: the sequence numbers above it are unique.
  struct Node {
    uint64_t time_key;
    uint64_t tag;  // seq << kSlotBits | slot
  };
  static double time_of(uint64_t key) {
    const uint64_t positive = static_cast<uint64_t>(static_cast<int64_t>(key) >> 63);
    return std::bit_cast<double>(key ^ (~positive | (uint64_t{1} << 63)));
  }
  static Event event_of(const Node& n) {
    return Event{time_of(n.time_key), n.tag >> kSlotBits, static_cast<uint32_t>(n.tag & kMaxSlot)};
  }

  static bool before(const Node& a, const Node& b) {
    using u128 = unsigned __int128;
    return ((u128{a.time_key} << 64) | a.tag) < ((u128{b.time_key} << 64) | b.tag);
  }
  [[gnu::always_inline]] void sift_up(std::size_t hole, const Node& e) {
    while (hole > 0) {
      const std::size_t parent = (hole - 1) / 2;
      if (!before(e, heap_[parent])) break;
      heap_[hole] = heap_[parent];
      hole = parent;
    }
    heap_[hole] = e;
  }
  // Places `e` at the root's place and sifts it down. The earlier child is picked without a
  // branch (which child is earlier is a coin toss, and a mispredicted branch per level was most
  // of a sift's cost).
  [[gnu::always_inline]] void sift_down(const Node& e) {
    const std::size_t n = heap_.size();
    std::size_t hole = 0;
    for (;;) {
      std::size_t child = 2 * hole + 1;
      if (child >= n) break;
      if (child + 1 < n) child += static_cast<std::size_t>(before(heap_[child + 1], heap_[child]));
      if (!before(heap_[child], e)) break;
      heap_[hole] = heap_[child];
      hole = child;
    }
    heap_[hole] = e;
  }

  // Places `e` (the former last element, which belongs near the bottom) at the root's place the
  // bottom-up way (Floyd): the hole goes down along the earlier children to a leaf, comparing
  // only the two children (a loop whose length is the heap's depth, so its exit is predicted),
  // then `e` sifts up from there, rarely more than a level. sift_down's test of `e` against the
  // child at every level was a coin toss and a mispredicted branch per pop. Which valid heap
  // results does not matter: with unique keys the events come out in the same order.
  [[gnu::always_inline]] void sift_down_to_leaf(const Node& e) {
    const std::size_t n = heap_.size();
    std::size_t hole = 0;
    for (;;) {
      std::size_t child = 2 * hole + 1;
      if (child >= n) break;
      if (child + 1 < n) child += static_cast<std::size_t>(before(heap_[child + 1], heap_[child]));
      heap_[hole] = heap_[child];
      hole = child;
    }
    sift_up(hole, e);
  }

  std::vector<Node> heap_;
  uint64_t next_seq_ = 0;
  bool handling_ = false;
};

}  // namespace lagpilot::sim
