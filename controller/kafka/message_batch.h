#pragma once
// Plain message records (what the scheduling core takes, with no librdkafka type in sight) and
// MessageBatch, the buffer in which a lane keeps its messages until a worker runs them.
//
// Thread-safety: plain values; their owner's lock guards them (LaneScheduler::mu).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lagpilot {

struct MessageHeaderView {
  std::string_view name;
  std::string_view value;  // empty for a null header value
};

// One consumed message as the consumer hands it over. The views must stay valid until the
// dispatch call that takes the record returns (they are copied into lane buffers).
struct MessageRecord {
  std::string_view topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::string_view key;  // empty for a null key (see has_key)
  bool has_key = false;
  std::string_view value;
  int64_t timestamp_ms = -1;                   // epoch ms, -1 if none
  std::span<const MessageHeaderView> headers;  // empty when the message has none
};

// One consumed message waiting to run; its key, value and headers are in its batch's buffers.
struct QueuedMessage {
  int64_t offset;
  int64_t timestamp_ms;
  std::size_t key_pos;
  std::size_t value_pos;
  uint32_t key_len;
  uint32_t value_len;
  uint32_t header_pos;    // index of its first header in MessageBatch::headers
  uint32_t header_count;  // 0 for most messages: nothing is stored then
  bool has_key;
};

// A header of a queued message; name and value are in the batch's byte buffer.
struct QueuedHeader {
  std::size_t name_pos;
  std::size_t value_pos;
  uint32_t name_len;
  uint32_t value_len;
};

// Messages of one lane in offset order, with their bytes copied into one buffer (so the
// consumer's message is released at once, and no allocation is made per message once the
// buffers have grown).
struct MessageBatch {
  std::vector<QueuedMessage> messages;
  std::vector<QueuedHeader> headers;
  std::string bytes;

  std::size_t size() const { return messages.size(); }
  bool empty() const { return messages.empty(); }
  void clear() {
    messages.clear();
    headers.clear();
    bytes.clear();
  }
  void append(const MessageRecord& m) {
    QueuedMessage q{};
    q.offset = m.offset;
    q.timestamp_ms = m.timestamp_ms;
    q.has_key = m.has_key;
    q.key_pos = bytes.size();
    if (q.has_key) {
      q.key_len = static_cast<uint32_t>(m.key.size());
      bytes.append(m.key);
    }
    q.value_pos = bytes.size();
    q.value_len = static_cast<uint32_t>(m.value.size());
    bytes.append(m.value);
    q.header_pos = static_cast<uint32_t>(headers.size());
    q.header_count = static_cast<uint32_t>(m.headers.size());
    for (const MessageHeaderView& h : m.headers) {
      QueuedHeader qh{};
      qh.name_pos = bytes.size();
      qh.name_len = static_cast<uint32_t>(h.name.size());
      bytes.append(h.name);
      qh.value_pos = bytes.size();
      qh.value_len = static_cast<uint32_t>(h.value.size());
      bytes.append(h.value);
      headers.push_back(qh);
    }
    messages.push_back(q);
  }
  // Appends other.messages[from, end) (they follow this batch's in offset order), copying
  // their bytes.
  void append_range(const MessageBatch& other, std::size_t from) {
    for (std::size_t i = from; i < other.messages.size(); ++i) {
      const QueuedMessage& q = other.messages[i];
      QueuedMessage c = q;
      c.key_pos = bytes.size();
      bytes.append(other.bytes, q.key_pos, q.key_len);
      c.value_pos = bytes.size();
      bytes.append(other.bytes, q.value_pos, q.value_len);
      c.header_pos = static_cast<uint32_t>(headers.size());
      for (uint32_t h = 0; h < q.header_count; ++h) {
        QueuedHeader qh = other.headers[q.header_pos + h];
        const std::size_t name_pos = bytes.size();
        bytes.append(other.bytes, qh.name_pos, qh.name_len);
        const std::size_t value_pos = bytes.size();
        bytes.append(other.bytes, qh.value_pos, qh.value_len);
        qh.name_pos = name_pos;
        qh.value_pos = value_pos;
        headers.push_back(qh);
      }
      messages.push_back(c);
    }
  }
  // Appends all of `other` (its messages follow this batch's in offset order).
  void append(const MessageBatch& other) {
    const std::size_t base = bytes.size();
    const auto header_base = static_cast<uint32_t>(headers.size());
    bytes.append(other.bytes);
    messages.reserve(messages.size() + other.messages.size());
    for (QueuedMessage q : other.messages) {
      q.key_pos += base;
      q.value_pos += base;
      q.header_pos += header_base;
      messages.push_back(q);
    }
    for (QueuedHeader h : other.headers) {
      h.name_pos += base;
      h.value_pos += base;
      headers.push_back(h);
    }
  }
  // Moves `other`'s messages in (this batch must be empty), leaving other empty with this
  // batch's old buffers, so capacity circulates instead of being reallocated.
  void take(MessageBatch& other) {
    clear();
    messages.swap(other.messages);
    headers.swap(other.headers);
    bytes.swap(other.bytes);
  }
};

}  // namespace lagpilot
