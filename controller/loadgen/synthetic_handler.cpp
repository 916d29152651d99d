#include "controller/loadgen/synthetic_handler.h"

#include <chrono>
#include <cmath>
#include <random>
#include <thread>

#include "policies/config_reader.h"

namespace lagpilot {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

SyntheticHandler::SyntheticHandler(SyntheticHandlerConfig config) : config_(config) {
  // Lognormal with mean m and cv c: sigma^2 = ln(1 + c^2), mu = ln(m) - sigma^2 / 2.
  const double s2 = std::log1p(config_.service_cv * config_.service_cv);
  sigma_ = std::sqrt(s2);
  mu_ = config_.service_mean_seconds > 0 ? std::log(config_.service_mean_seconds) - s2 / 2 : 0;
}

void SyntheticHandler::operator()(const SourceMessage&) {
  // One generator per worker thread, seeded from the config seed and a stream number.
  thread_local std::mt19937_64* rng = nullptr;
  thread_local const SyntheticHandler* owner = nullptr;
  thread_local std::mt19937_64 storage;
  if (owner != this) {
    storage.seed(config_.seed * 0x9E3779B97F4A7C15ULL + next_stream_.fetch_add(1));
    rng = &storage;
    owner = this;
  }
  double service = config_.service_mean_seconds;
  if (service > 0 && config_.service_cv > 0) {
    std::lognormal_distribution<double> dist(mu_, sigma_);
    service = dist(*rng);
  }
  if (config_.downstream_capacity > 0) {
    double start;
    {
      std::lock_guard lock(downstream_mutex_);
      const double now = steady_seconds();
      start = std::max(now, next_downstream_slot_);
      next_downstream_slot_ = start + 1.0 / config_.downstream_capacity;
    }
    const double wait = start - steady_seconds();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
  if (service > 0) std::this_thread::sleep_for(std::chrono::duration<double>(service));
}

}  // namespace lagpilot
