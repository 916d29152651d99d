#pragma once
// The inputs kept for a fuzz target, for the GoogleTest regression tests that replay them
// without libFuzzer: every file of fuzz/regressions/<target>/ (crashes found and fixed, kept
// forever) and fuzz/corpus/<target>/ (the seeds), sorted by path. Files whose name starts with
// '.' (.gitkeep) are skipped.
//
// Thread-safety: reads files only; any thread.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace lagpilot::fuzz {

struct KeptInput {
  std::string path;  // for test messages
  std::string data;  // the bytes, as the fuzzer gets them
};

inline std::vector<KeptInput> kept_fuzz_inputs(const std::string& source_dir,
                                               const std::string& target) {
  namespace fs = std::filesystem;
  std::vector<KeptInput> inputs;
  for (const char* kind : {"regressions", "corpus"}) {
    const fs::path dir = fs::path(source_dir) / "fuzz" / kind / target;
    if (!fs::is_directory(dir)) continue;
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(dir)) {
      if (!entry.is_regular_file() || entry.path().filename().string().starts_with(".")) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      inputs.push_back({entry.path().string(), std::string(std::istreambuf_iterator<char>(in),
                                                           std::istreambuf_iterator<char>())});
    }
  }
  std::sort(inputs.begin(), inputs.end(),
            [](const KeptInput& a, const KeptInput& b) { return a.path < b.path; });
  return inputs;
}

}  // namespace lagpilot::fuzz
