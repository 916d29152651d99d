#include "cli/trace_options.h"

#include <cmath>
#include <iostream>

#include "policies/config_reader.h"
#include "policies/number_text.h"
#include "sim/peak_load.h"

namespace lagpilot::cli {

void add_trace_options(CLI::App& app, const std::shared_ptr<TraceOptions>& o) {
  app.add_option("--format", o->load.format, "Trace format")
      ->check(CLI::IsMember({"auto", "rate", "prometheus", "events", "lag"}))
      ->capture_default_str();
  app.add_option("--metric", o->load.metric, "Prometheus export: the __name__ to use");
  app.add_option("--event-bin", o->load.event_bin_seconds,
                 "One-row-per-event traces: bin width, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--companion", o->load.companion,
                 "Lag recordings: the worker-count or processed-rate recording")
      ->check(CLI::ExistingFile);
  app.add_option("--per-worker-rate", o->load.per_worker_rate,
                 "Lag + worker-count recordings: messages/s of one worker")
      ->check(CLI::PositiveNumber);
  app.add_option("--speedup", o->speedup, "Compress the trace's time by this factor")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--peak-load", o->peak_load,
                 "Scale rates so the peak is this multiple of the capacity at max workers; 0 "
                 "keeps absolute rates; not given: a trace whose peak is at or below the "
                 "capacity at min workers, or above 2x the capacity at max workers, is scaled "
                 "to 1.2 (and the first line says so)")
      ->check(CLI::NonNegativeNumber);
}

sim::Trace load_scaled_trace(const std::string& path, const TraceOptions& o,
                             const sim::SimConfig& config, const GuardConfig& guards,
                             sim::TraceInfo* info) {
  sim::Trace trace = sim::load_trace(path, o.load);
  if (o.speedup != 1.0) trace = sim::compress_time(std::move(trace), o.speedup);
  const double capacity_at_max = config.model.capacity(guards.max_workers);
  const sim::PeakLoadChoice choice = sim::choose_peak_load(
      o.peak_load, trace.peak_rate(), config.model.capacity(guards.min_workers), capacity_at_max,
      guards.min_workers, guards.max_workers);
  if (choice.peak_load > 0) {
    trace = sim::scale_to_peak(std::move(trace), choice.peak_load * capacity_at_max);
  }
  if (choice.automatic) std::cout << path << ": " << choice.note << "\n";
  if (info) {
    *info = sim::TraceInfo::of(trace);
    info->notes = {{"speedup", o.speedup}};
    if (choice.peak_load > 0) info->notes["peak_load"] = choice.peak_load;
    if (choice.automatic) info->notes["peak_load_automatic"] = true;
  }
  return trace;
}

void match_model_to_reconstruction(const TraceOptions& o, const nlohmann::json& sim_section,
                                   const std::string& config_path, sim::SimConfig& config) {
  const double rate = o.load.per_worker_rate;
  if (o.load.companion.empty() || !(rate > 0)) return;
  const nlohmann::json* model = nullptr;
  if (sim_section.is_object() && sim_section.contains("model")) model = &sim_section["model"];
  if (model && model->is_object() && model->contains("service_mean_seconds")) {
    const double configured = 1.0 / config.model.service_mean_seconds;
    if (std::abs(configured - rate) > 1e-9 * rate) {
      throw ConfigError(
          "--per-worker-rate",
          "arrivals are reconstructed at " + text::general(rate, 10) +
              " msg/s per worker, but sim.model.service_mean_seconds " +
              text::general(config.model.service_mean_seconds, 10) + " in " + config_path +
              " simulates " + text::general(configured, 10) +
              " msg/s per worker; make them agree, or leave service_mean_seconds out (the "
              "simulated consumer then takes the reconstruction's rate)");
    }
    return;
  }
  config.model.service_mean_seconds = 1.0 / rate;
}

void SimOverrides::apply(sim::SimConfig& config) const {
  if (!fidelity.empty()) config.fidelity = fidelity;
  if (tick > 0) config.tick_seconds = tick;
  if (slo >= 0) config.lag_slo = slo;
}

void add_sim_overrides(CLI::App& app, const std::shared_ptr<SimOverrides>& o) {
  app.add_option("--fidelity", o->fidelity, "message, batch or auto (config: sim.fidelity)")
      ->check(CLI::IsMember({"message", "batch", "auto"}));
  app.add_option("--tick", o->tick, "Control tick, seconds (config: sim.tick_seconds)")
      ->check(CLI::PositiveNumber);
  app.add_option("--slo", o->slo, "Lag SLO, messages (config: lag_slo; default 10000)")
      ->check(CLI::NonNegativeNumber);
}

}  // namespace lagpilot::cli
