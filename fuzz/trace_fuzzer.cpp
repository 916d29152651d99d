// libFuzzer target: trace files in every format, with the reader's options taken from the first
// two bytes of the input (layout in fuzz/trace_check.h, which also states the contract). A
// violation prints what went wrong and aborts; an exception other than TraceError escapes (a
// crash for libFuzzer), and so do the sanitizers' findings. See docs/fuzzing.md.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/trace_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string bad = lagpilot::sim::fuzz::check_trace_input(input);
  if (!bad.empty()) {
    std::fprintf(stderr, "trace_fuzzer: contract violated: %s\n", bad.c_str());
    std::abort();
  }
  return 0;
}
