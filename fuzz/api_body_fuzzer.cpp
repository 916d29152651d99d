// libFuzzer target: one control-API request body (or ?limit= value) per input, fed to every
// parser in controller/api_requests.h; the contract is fuzz/api_body_check.h. A violation
// prints what went wrong and aborts; an exception other than ApiError escapes (libFuzzer
// reports it as a crash), and so do the sanitizers' findings. See docs/fuzzing.md.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/api_body_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  static const lagpilot::GuardConfig kGuards;  // the defaults: hard limits [1, 64]
  const std::string bad = lagpilot::fuzz::check_api_body(body, kGuards);
  if (!bad.empty()) {
    std::fprintf(stderr, "api_body_fuzzer: contract violated: %s\n", bad.c_str());
    std::abort();
  }
  return 0;
}
