#pragma once
// A discrete-event queue ordered by (time, sequence number). Events scheduled for the same time
// come out in the order they were scheduled, so a run is deterministic. Used by the simulator
// and by controller tests that drive simulated time. Not thread-safe.

#include <cstdint>
#include <queue>
#include <utility>
#include <vector>

namespace lagpilot {

template <typename Payload>
class EventQueue {
 public:
  struct Event {
    double time;
    uint64_t seq;
    Payload payload;
  };

  void schedule(double time, Payload payload) {
    heap_.push(Event{time, next_seq_++, std::move(payload)});
  }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.top(); }
  Event pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace lagpilot
