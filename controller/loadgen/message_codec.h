#pragma once
// Message values produced by lagpilot: text, so that kcat output stays readable.
//
//   seq=<u64> sent_us=<i64 epoch microseconds>[ <padding>]
//
// e.g. "seq=42 sent_us=1700000000123456" or, with 8 padding bytes,
// "seq=42 sent_us=1700000000123456 xxxxxxxx". The padding (a space then padding_bytes 'x')
// only makes values bigger; decode_message ignores whatever follows the sent_us field after a
// space. No regex, no iostreams: std::to_chars / std::from_chars.
//
// Thread-safety: pure functions, callable from any thread.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lagpilot {

struct DecodedMessage {
  uint64_t seq = 0;
  int64_t sent_us = 0;  // microseconds since the Unix epoch, producer's wall clock
  bool operator==(const DecodedMessage&) const = default;
};

std::string encode_message(uint64_t seq, int64_t sent_us, std::size_t padding_bytes = 0);

// Same as encode_message, into `out` (cleared first), reusing its capacity.
void encode_message_into(std::string& out, uint64_t seq, int64_t sent_us,
                         std::size_t padding_bytes = 0);

// nullopt when the value is not in the format above (missing field, not a number, overflow,
// trailing garbage glued to a number).
std::optional<DecodedMessage> decode_message(std::string_view value);

// Microseconds since the Unix epoch (system_clock), for sent_us and record age.
int64_t epoch_micros_now();

}  // namespace lagpilot
