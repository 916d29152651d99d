#include "cli/output_file.h"

#include <iostream>

#include "sim/text_file.h"

namespace lagpilot::cli {

void write_output(const std::string& path, const std::string& content) {
  if (path == "-") {
    std::cout << content;
    return;
  }
  sim::write_text_file(path, content);
}

}  // namespace lagpilot::cli
