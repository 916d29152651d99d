#include "cli/sim_fleet.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/output_file.h"
#include "policies/config_reader.h"
#include "sim/fleet_report.h"
#include "sim/parallel_for.h"
#include "sim/replica_policy.h"

namespace lagpilot::cli {

void add_fleet_options(CLI::App& app, const std::shared_ptr<FleetOptions>& o) {
  const std::string group = "Fleet (with --fleet; see docs/fleet.md)";
  o->fleet_flag = app.add_flag("--fleet", o->enabled,
                               "Simulate a consumer group: --replicas pods sharing --partitions, "
                               "each running --policy in its pool between the guards, with "
                               "--replica-policy above them (also on with a \"fleet\" object "
                               "in the config's \"sim\")")
                      ->group(group);
  auto add = [&](CLI::Option* opt) { o->options.push_back(opt->group(group)); };
  add(app.add_option("--partitions", o->partitions,
                     "Partitions of the topic, the unit of parallelism across pods (default: "
                     "sim.partitions, 8)")
          ->check(CLI::Range(1, 100'000)));
  add(app.add_option("--skew", o->skew,
                     "Zipf exponent of the partitions' shares of the arrivals: partition p gets "
                     "1/(p+1)^S (0: even, the default)")
          ->check(CLI::Range(0.0, 10.0)));
  add(app.add_option("--assignment", o->assignment,
                     "Partition assignment over the members: range (default) or roundrobin")
          ->check(CLI::IsMember({"range", "roundrobin"})));
  add(app.add_option("--replica-policy", o->replica_policy,
                     "static (default: --replicas pods), keda-recommended (KEDA on the max over "
                     "pods of lagpilot_recommended_replicas, threshold 1) or keda-lag (KEDA's "
                     "Kafka scaler on the group lag; with static:1 pools, the world without "
                     "lagpilot)")
          ->check(CLI::IsMember(sim::replica_policy_names())));
  add(app.add_option("--replica-params", o->replica_params,
                     "key=value,... for the keda replica policies (KEDA and HPA keys of the keda "
                     "policy: lag_threshold (keda-lag only), polling_interval_seconds, "
                     "cooldown_period_seconds, scale_down_stabilization_seconds, ...)"));
  add(app.add_option("--replicas", o->replicas, "Pods at t = 0, and the static count (default 1)")
          ->check(CLI::Range(1, 100'000)));
  add(app.add_option("--min-replicas", o->min_replicas, "Fewest pods (default 1)")
          ->check(CLI::Range(1, 100'000)));
  add(app.add_option("--max-replicas", o->max_replicas, "Most pods (default: the partition count)")
          ->check(CLI::Range(1, 100'000)));
  add(app.add_option("--pod-start", o->pod_start,
                     "Seconds from a scale-up to the new pod joining the group (default 30)")
          ->check(CLI::Range(0.0, 86'400.0)));
  add(app.add_option("--rebalance", o->rebalance,
                     "Seconds every member pauses per membership change (default 5: one "
                     "join round on the mock cluster with session.timeout.ms 6000)")
          ->check(CLI::Range(0.0, 3'600.0)));
  add(app.add_option("--catch-up", o->catch_up,
                     "Backlog drain time of lagpilot_recommended_replicas, seconds (default 60)")
          ->check(CLI::Range(0.001, 86'400.0)));
}

bool FleetOptions::active(bool config_has_fleet) const {
  if (enabled || config_has_fleet) return true;
  for (const CLI::Option* opt : options) {
    if (opt->count() > 0) {
      throw ConfigError(opt->get_name(),
                        "is a fleet option: add --fleet (or a \"fleet\" object "
                        "in the config's \"sim\")");
    }
  }
  return false;
}

sim::FleetConfig FleetOptions::resolve(const std::optional<sim::FleetConfig>& from_config,
                                       const sim::SimConfig& sim) const {
  sim::FleetConfig f = from_config.value_or(sim::FleetConfig{});
  auto given = [&](const char* name) {
    for (const CLI::Option* opt : options) {
      if (opt->get_name() == name) return opt->count() > 0;
    }
    return false;
  };
  if (given("--partitions")) f.partitions = partitions;
  if (given("--skew")) f.skew = skew;
  if (given("--assignment")) f.assignment = assignment;
  if (given("--replica-policy")) f.replica_policy = replica_policy;
  if (given("--replica-params")) {
    // The policy-spec syntax: "keda:key=value,...".
    f.replica_params = parse_policy_spec("keda:" + replica_params).params;
  }
  if (given("--replicas")) f.replicas = replicas;
  if (given("--min-replicas")) f.min_replicas = min_replicas;
  if (given("--max-replicas")) f.max_replicas = max_replicas;
  if (given("--pod-start")) f.pod_start_seconds = pod_start;
  if (given("--rebalance")) f.rebalance_seconds = rebalance;
  if (given("--catch-up")) f.catch_up_seconds = catch_up;
  // Errors name the flag when the value came from one, else the config's field.
  const std::string base = from_config ? "sim.fleet" : "fleet";
  try {
    f.validate(f.resolved_partitions(sim), base);
  } catch (const ConfigError& e) {
    const std::string key = e.path().substr(e.path().rfind('.') + 1);
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    if (key == "pod_start_seconds") flag = "--pod-start";
    if (key == "rebalance_seconds") flag = "--rebalance";
    if (key == "catch_up_seconds") flag = "--catch-up";
    if (!given(flag.c_str()) && from_config) throw;  // from the config file: its field
    const std::string what = e.what();
    throw ConfigError(flag, what.substr(e.path().size() + 2));
  }
  // Builds the replica policy once, so that bad parameters fail before anything runs.
  sim::make_replica_policy(
      f.replica_policy, f.replica_params, f.replicas,
      given("--replica-params") ? "--replica-params" : base + ".replica_params");
  return f;
}

int run_fleet_sim(const sim::Trace& trace, const FleetSimCommand& c) {
  spdlog::info(
      "{}: fleet of {} partitions, {} pods at start, replica policy {}, pod start {} s, "
      "rebalance {} s; {} fidelity",
      c.trace_path, c.fleet.resolved_partitions(c.config), c.fleet.replicas, c.fleet.replica_policy,
      c.fleet.pod_start_seconds, c.fleet.rebalance_seconds, c.config.resolve_fidelity(trace));
  std::vector<sim::FleetResult> runs(c.specs.size());
  sim::parallel_for(c.specs.size(), std::max(1, c.threads), [&](std::size_t i) {
    runs[i] = sim::simulate_fleet(trace, c.specs[i], c.guards, c.config, c.fleet);
  });
  std::cout << sim::format_fleet_table(runs);
  if (!c.json_out.empty()) {
    nlohmann::json report{{"trace", c.trace_path},        {"lag_slo", c.config.lag_slo},
                          {"sim", c.config.to_json()},    {"fleet", c.fleet.to_json()},
                          {"guards", c.guards.to_json()}, {"runs", nlohmann::json::array()}};
    for (const auto& r : runs) report["runs"].push_back(sim::to_json(r));
    write_output(c.json_out, report.dump(2) + "\n");
  }
  if (!c.csv_out.empty()) {
    std::ostringstream csv;
    csv << "run,t,arrival_rate,processed_rate,lag,workers,replicas,members,rebalancing\n";
    for (const auto& r : runs) {
      for (const auto& p : r.series) {
        csv << '"' << r.label << "\"," << p.t << ',' << p.arrival_rate << ',' << p.processed_rate
            << ',' << p.lag << ',' << p.workers << ',' << p.replicas << ',' << p.members << ','
            << (p.rebalancing ? 1 : 0) << '\n';
      }
    }
    write_output(c.csv_out, csv.str());
  }
  if (!c.html_out.empty()) {
    sim::FleetHtmlReport html;
    html.title = "lagpilot sim --fleet: " + std::filesystem::path(c.trace_path).filename().string();
    html.summary = std::to_string(c.fleet.resolved_partitions(c.config)) + " partitions, skew " +
                   std::to_string(c.fleet.skew) + ", replica policy " + c.fleet.replica_policy +
                   ", pod start " + std::to_string(c.fleet.pod_start_seconds) + " s, rebalance " +
                   std::to_string(c.fleet.rebalance_seconds) + " s, pool bounds " +
                   std::to_string(c.guards.min_workers) + ".." +
                   std::to_string(c.guards.max_workers);
    html.runs = runs;
    html.lag_slo = c.config.lag_slo;
    write_output(c.html_out, sim::render_fleet_html(html));
    spdlog::info("wrote {}", c.html_out);
  }
  return 0;
}

}  // namespace lagpilot::cli
