#pragma once
// What the handlers of a Kafka test saw, in memory: how often each sequence number (the
// loadgen codec's) was handled, for loss and duplicate checks, and whether messages of one key
// ran one at a time and in order. (controller/loadgen/ledger.h is the durable ledger of the
// binary: a file that survives a crash.)
//
// Thread-safety: record() from any number of handler threads; the readers are atomic loads.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "controller/kafka/kafka_source.h"
#include "controller/loadgen/message_codec.h"

namespace lagpilot::testing {

class SequenceLedger {
 public:
  SequenceLedger(std::size_t sequences, std::size_t keys)
      : counts_(sequences), last_seq_(keys), busy_(keys) {
    for (auto& l : last_seq_) l.store(-1);
  }

  // Records one handled message; checks that its key is not being handled elsewhere right
  // now and that its sequence number is above the key's previous one.
  void record(const SourceMessage& m, bool check_key_order) {
    const auto decoded = decode_message(m.value);
    if (!decoded) {
      bad_values_.fetch_add(1);
      return;
    }
    const uint64_t seq = decoded->seq;
    if (seq >= counts_.size()) {
      bad_values_.fetch_add(1);
      return;
    }
    if (check_key_order && m.has_key && m.key.size() > 1) {
      const std::size_t k = std::stoul(m.key.substr(1)) % last_seq_.size();
      if (busy_[k].exchange(true)) concurrent_same_key_.fetch_add(1);
      const int64_t prev = last_seq_[k].exchange(static_cast<int64_t>(seq));
      if (prev >= static_cast<int64_t>(seq)) key_order_violations_.fetch_add(1);
      std::this_thread::yield();  // widen the window in which a second worker would be caught
      busy_[k].store(false);
    }
    counts_[seq].fetch_add(1);
    total_.fetch_add(1);
  }

  uint64_t total() const { return total_.load(); }
  uint32_t count(std::size_t seq) const { return counts_[seq].load(); }
  std::size_t missing(std::size_t from, std::size_t to) const {
    std::size_t n = 0;
    for (std::size_t s = from; s < to; ++s) n += counts_[s].load() == 0;
    return n;
  }
  std::size_t duplicated(std::size_t from, std::size_t to) const {
    std::size_t n = 0;
    for (std::size_t s = from; s < to; ++s) n += counts_[s].load() > 1;
    return n;
  }
  uint64_t key_order_violations() const { return key_order_violations_.load(); }
  uint64_t concurrent_same_key() const { return concurrent_same_key_.load(); }
  uint64_t bad_values() const { return bad_values_.load(); }

 private:
  std::vector<std::atomic<uint32_t>> counts_;
  std::vector<std::atomic<int64_t>> last_seq_;
  std::vector<std::atomic<bool>> busy_;
  std::atomic<uint64_t> total_{0};
  std::atomic<uint64_t> key_order_violations_{0};
  std::atomic<uint64_t> concurrent_same_key_{0};
  std::atomic<uint64_t> bad_values_{0};
};

}  // namespace lagpilot::testing
