// `lagpilot advise`: checks a config and a calibration against the practice's numbers
// (controller/config_advice.h, the same checks as the start-up warnings of `lagpilot run`) and
// prints each finding with its reason. Exit 0 when every check passes, 1 with findings, 2 for
// input that cannot be read (the message names the file and the JSON path).
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/config.h"
#include "controller/config_advice.h"
#include "policies/config_reader.h"

namespace lagpilot::cli {

CommandMain add_advise_command(CLI::App& app) {
  struct Options {
    std::string config_path;
    std::string calibration_path;
  };
  auto o = std::make_shared<Options>();
  app.add_option("--config", o->config_path, "Config file (JSON); the defaults when omitted")
      ->check(CLI::ExistingFile);
  app.add_option("--calibration", o->calibration_path,
                 "Calibration: the JSON of `lagpilot calibrate --json`, or a config written by "
                 "`lagpilot calibrate --write-config` (default: the config's \"calibration\")")
      ->check(CLI::ExistingFile);
  std::string footer = "Checks, in order (docs/pipeline.md):\n";
  for (const AdviceRule& r : advice_rules()) {
    footer += "  " + std::string(r.name) + ": " + r.summary + "\n";
  }
  footer +=
      "Prints one line per finding: FILE: JSON.PATH: what and why [check].\n"
      "Exit 0: every check passes; 1: findings; 2: a file cannot be read (the message names\n"
      "the file and the JSON path). `lagpilot run` logs the same findings as warnings.";
  app.footer(footer);

  return [o]() -> int {
    const std::string config_name = o->config_path.empty() ? "(defaults)" : o->config_path;
    const AppConfig cfg = o->config_path.empty() ? AppConfig{} : load_config(o->config_path);
    std::string calibration_name = config_name;
    CalibrationInput calibration;
    try {
      if (!o->calibration_path.empty()) {
        calibration_name = o->calibration_path;
        calibration = calibration_record(read_json_file(o->calibration_path));
      } else if (!cfg.calibration.is_null()) {
        calibration = calibration_record(nlohmann::json{{"calibration", cfg.calibration}});
      }
    } catch (const ConfigError& e) {
      throw ConfigFileError(calibration_name, e.path(), 0, 0, calibration_name + ": " + e.what());
    }
    std::vector<AdviceFinding> findings;
    try {
      findings = advise(cfg, calibration);
    } catch (const ConfigError& e) {
      throw ConfigFileError(config_name, e.path(), 0, 0, config_name + ": " + e.what());
    }
    for (const AdviceFinding& f : findings) {
      std::cout << (f.in_calibration ? calibration_name : config_name) << ": " << format_finding(f)
                << "\n";
    }
    const std::size_t checks = advice_rules().size();
    if (findings.empty()) {
      std::cout << "advise: all " << checks << " checks pass";
    } else {
      std::cout << "advise: " << findings.size()
                << (findings.size() == 1 ? " finding" : " findings") << " (" << checks
                << " checks)";
    }
    std::cout << (calibration.record.is_null() ? ", without a calibration" : "") << std::endl;
    return findings.empty() ? 0 : 1;
  };
}

}  // namespace lagpilot::cli
