#include "cli/trace_options.h"

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
                 "Scale rates so the peak is this multiple of the capacity at max workers")
      ->check(CLI::PositiveNumber);
}

sim::Trace load_scaled_trace(const std::string& path, const TraceOptions& o,
                             const sim::SimConfig& config, const GuardConfig& guards,
                             sim::TraceInfo* info) {
  sim::Trace trace = sim::load_trace(path, o.load);
  if (o.speedup != 1.0) trace = sim::compress_time(std::move(trace), o.speedup);
  if (o.peak_load > 0) {
    trace = sim::scale_to_peak(std::move(trace),
                               o.peak_load * config.model.capacity(guards.max_workers));
  }
  if (info) {
    *info = sim::TraceInfo::of(trace);
    info->notes = {{"speedup", o.speedup}};
    if (o.peak_load > 0) info->notes["peak_load"] = o.peak_load;
  }
  return trace;
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
