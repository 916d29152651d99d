#include "controller/loadgen/message_codec.h"

#include <charconv>
#include <chrono>

namespace lagpilot {
namespace {
constexpr std::string_view kSeqField = "seq=";
constexpr std::string_view kSentField = " sent_us=";
}  // namespace

void encode_message_into(std::string& out, uint64_t seq, int64_t sent_us,
                         std::size_t padding_bytes) {
  char seq_buf[24];   // u64: at most 20 digits
  char sent_buf[24];  // i64: at most 19 digits and a sign
  const char* seq_end = std::to_chars(seq_buf, seq_buf + sizeof seq_buf, seq).ptr;
  const char* sent_end = std::to_chars(sent_buf, sent_buf + sizeof sent_buf, sent_us).ptr;
  out.clear();
  out.reserve(kSeqField.size() + kSentField.size() + static_cast<std::size_t>(seq_end - seq_buf) +
              static_cast<std::size_t>(sent_end - sent_buf) +
              (padding_bytes > 0 ? padding_bytes + 1 : 0));
  out.append(kSeqField);
  out.append(seq_buf, static_cast<std::size_t>(seq_end - seq_buf));
  out.append(kSentField);
  out.append(sent_buf, static_cast<std::size_t>(sent_end - sent_buf));
  if (padding_bytes > 0) {
    out.push_back(' ');
    out.append(padding_bytes, 'x');
  }
}

std::string encode_message(uint64_t seq, int64_t sent_us, std::size_t padding_bytes) {
  std::string out;
  encode_message_into(out, seq, sent_us, padding_bytes);
  return out;
}

std::optional<DecodedMessage> decode_message(std::string_view value) {
  if (!value.starts_with(kSeqField)) return std::nullopt;
  const char* p = value.data() + kSeqField.size();
  const char* const end = value.data() + value.size();
  DecodedMessage msg;
  auto [after_seq, seq_ec] = std::from_chars(p, end, msg.seq);
  if (seq_ec != std::errc{}) return std::nullopt;
  std::string_view rest(after_seq, static_cast<std::size_t>(end - after_seq));
  if (!rest.starts_with(kSentField)) return std::nullopt;
  p = after_seq + kSentField.size();
  auto [after_sent, sent_ec] = std::from_chars(p, end, msg.sent_us);
  if (sent_ec != std::errc{}) return std::nullopt;
  if (after_sent != end && *after_sent != ' ') return std::nullopt;
  return msg;
}

int64_t epoch_micros_now() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace lagpilot
