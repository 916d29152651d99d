// libFuzzer target: one config text per input. The text is read as a command-line policy spec,
// and, if it is JSON, as policy params for every policy, a "guards" object and a "sim" object
// (fuzz/config_check.h); and it is loaded as a config file (controller/app_config.h, below, with
// the "sim" check the binary adds), through a temporary file so that read_json_file's error
// positions are exercised too: AppConfig::load returns a config or throws ConfigFileError naming
// the file, and a config it returned survives to_json() / from_json() unchanged. A violation prints
// what went wrong and aborts; any other exception escapes (a crash for libFuzzer), and so do the
// sanitizers' findings. See docs/fuzzing.md.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "controller/app_config.h"
#include "fuzz/config_check.h"
#include "fuzz/policy_check.h"
#include "sim/simulation.h"

namespace {

// The file each input is written to: one per process, removed at exit.
class ScratchFile {
 public:
  ScratchFile()
      : path_((std::filesystem::temp_directory_path() /
               ("lagpilot-config-fuzzer-" + std::to_string(::getpid()) + ".json"))
                  .string()) {}
  ~ScratchFile() { std::remove(path_.c_str()); }
  const std::string& write(std::string_view text) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    return path_;
  }

 private:
  std::string path_;
};

std::string check_app_config(std::string_view text) {
  using lagpilot::AppConfig;
  static ScratchFile scratch;
  const std::string& path = scratch.write(text);
  const auto check_sim = [](const AppConfig& c) {
    lagpilot::sim::SimConfig::from_json(c.sim, "sim");
  };
  AppConfig config;
  try {
    config = AppConfig::load(path, check_sim);
  } catch (const lagpilot::ConfigFileError& e) {
    const std::string what = e.what();
    if (what.rfind(path + ":", 0) != 0) return "AppConfig::load error without the path: " + what;
    return "";
  }
  std::unique_ptr<lagpilot::Policy> policy = config.make_policy();
  if (std::string bad = lagpilot::fuzz::check_policy(config.policy_name, *policy, "policy.params");
      !bad.empty()) {
    return bad;
  }
  const nlohmann::json out = config.to_json();
  AppConfig again;
  try {
    again = AppConfig::from_json(out, check_sim);
  } catch (const lagpilot::ConfigError& e) {
    return std::string("AppConfig::to_json() does not load again: ") + e.what() + "; " +
           lagpilot::fuzz::dump_json(out);
  }
  if (again.to_json() != out) {
    return "AppConfig changes on reload: " + lagpilot::fuzz::dump_json(out) + " -> " +
           lagpilot::fuzz::dump_json(again.to_json());
  }
  return "";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string bad = lagpilot::fuzz::check_config_text(text);
  if (bad.empty()) bad = check_app_config(text);
  if (!bad.empty()) {
    std::fprintf(stderr, "config_fuzzer: contract violated: %s\n", bad.c_str());
    std::abort();
  }
  return 0;
}
