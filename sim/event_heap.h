#pragma once
// The consumer model's own event queue: events ordered by (time, sequence number), like
// policies/event_queue.h's EventQueue (events at equal times come out in the order they were
// scheduled), with one more operation for the model's hot path.
//
// Algorithm: a binary min-heap in a vector, sifted with a hole (an element is written once, at
// its final place). A worker's completion schedules that worker's next completion at once
// whenever messages are queued; handle_top() therefore leaves the event it hands out at the root,
// and the next schedule() overwrites the root and sifts it down (one sift instead of a pop's sift
// down and a push's sift up). done() removes the root if nothing replaced it. Since every (time,
// sequence) key is unique, the events come out in exactly the order any correct priority queue
// gives.
//
// Why not EventQueue itself: it is the std::priority_queue the controller tests share, without a
// replace-top, and its sift's branch on which child is earlier was a third of an M/M/c run's
// mispredicted branches (callgrind's branch model). Giving EventQueue the same two changes
// (policies/, used by the fleet simulator and the tests) would let one queue serve all again.
//
// Thread-safety: a plain single-threaded object.

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lagpilot::sim {

template <typename Payload>
class EventHeap {
 public:
  struct Event {
    double time;
    uint64_t seq;
    Payload payload;
  };

  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  const Event& top() const {
    assert(!handling_);
    return heap_.front();
  }

  void schedule(double time, Payload payload) {
    const Event e{time, next_seq_++, payload};
    if (handling_) {  // the handled event's place: sift the new one down from the root
      handling_ = false;
      sift_down(e);
    } else {
      heap_.push_back(e);
      sift_up(heap_.size() - 1, e);
    }
  }

  // The earliest event, left in place until done(), or replaced by the next schedule().
  Event handle_top() {
    assert(!handling_ && !heap_.empty());
    handling_ = true;
    return heap_.front();
  }
  // Ends the handling of the event handle_top() returned: removes it unless it was replaced.
  void done() {
    if (!handling_) return;
    handling_ = false;
    const Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down_to_leaf(last);
  }

 private:
  // Without short-circuits: the compiler can select a child without a branch (which child is
  // earlier is a coin toss, and a mispredicted branch per level was most of a sift's cost).
  static bool before(const Event& a, const Event& b) {
    return (a.time < b.time) | ((a.time == b.time) & (a.seq < b.seq));
  }
  void sift_up(std::size_t hole, const Event& e) {
    while (hole > 0) {
      const std::size_t parent = (hole - 1) / 2;
      if (!before(e, heap_[parent])) break;
      heap_[hole] = heap_[parent];
      hole = parent;
    }
    heap_[hole] = e;
  }
  // Places `e` at the root's place and sifts it down.
  void sift_down(const Event& e) {
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
  void sift_down_to_leaf(const Event& e) {
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

  std::vector<Event> heap_;
  uint64_t next_seq_ = 0;
  bool handling_ = false;
};

}  // namespace lagpilot::sim
