#include "sim/oracle_checks.h"

#include <stdexcept>
#include <string>

#include "sim/fluid_lag.h"

namespace lagpilot::sim::fluid {
namespace {

void check_price(const char* name, int64_t price) {
  if (price < 0 || price > kMaxChangePrice) {
    throw std::invalid_argument(std::string("oracle: ") + name + " must be in [0, " +
                                std::to_string(kMaxChangePrice) + "], got " +
                                std::to_string(price));
  }
}

}  // namespace

void check_oracle_inputs(const Trace& trace, const SimConfig& config, const GuardConfig& guards,
                         const OracleOptions& options) {
  check_trace(trace, "oracle");
  check_config(config, "oracle");
  if (guards.min_workers < 0 || guards.max_workers < 1 || guards.min_workers > guards.max_workers) {
    throw std::invalid_argument("oracle: guards need 0 <= min_workers <= max_workers, >= 1; got [" +
                                std::to_string(guards.min_workers) + ", " +
                                std::to_string(guards.max_workers) + "]");
  }
  if (options.checkpoint_ticks < 1) {
    throw std::invalid_argument("oracle: checkpoint_ticks must be >= 1");
  }
  check_price("change_price", options.change_price);
  check_price("reversal_price", options.reversal_price);
  check_price("slo_price", options.slo_price);
  if (!(options.lag_ceiling >= 0.0)) {
    throw std::invalid_argument("oracle: lag_ceiling must be >= 0, got " +
                                std::to_string(options.lag_ceiling));
  }
  if (options.slo_price > 0 && options.lag_ceiling == 0.0) {
    throw std::invalid_argument("oracle: slo_price needs a lag_ceiling (the SLO is hard without)");
  }
  if (options.lag_ceiling > 0.0 && options.lag_ceiling < static_cast<double>(config.lag_slo)) {
    throw std::invalid_argument("oracle: lag_ceiling " + std::to_string(options.lag_ceiling) +
                                " is below the lag SLO " + std::to_string(config.lag_slo));
  }
}

}  // namespace lagpilot::sim::fluid
