// Shedding in the simulator (sim/consumer_model.h, sim/simulation.h): the age rule on a
// hand-placed queue, the gate's timing on a step overload of a fixed pool (exact ticks), the
// conservation arrived = processed + shed + final lag, and the reports (KPI JSON, table, CSV,
// HTML) that show shedding only when it is configured.
#include <gtest/gtest.h>

#include <sstream>

#include "sim/consumer_model.h"
#include "sim/html_report.h"
#include "sim/report.h"
#include "sim/simulation.h"
#include "tests/sim/sim_test_util.h"

namespace lagpilot::sim {
namespace {

using testing::fixed_policy;
using testing::open_guards;

ConsumerModelConfig deterministic(double service_seconds) {
  ConsumerModelConfig m;
  m.service_mean_seconds = service_seconds;
  m.service_distribution = "deterministic";
  m.service_cv = 0;
  m.usl_sigma = 0;
  m.usl_kappa = 0;
  m.warmup_seconds = 0;
  return m;
}

void run_until(ConsumerModel& model, double t) {
  while (model.next_event_time() <= t) model.run_next_event();
}

// One worker, 1 s a message, ten messages at 0, 0.1, ..., 0.9; max age 2.5 s. Message 0 runs
// 0-1, 1 runs 1-2 (0.9 s old at its start), 2 runs 2-3 (1.8 s). At 3, messages 3 and 4 are 2.7
// and 2.6 s old: shed; message 5 is exactly 2.5 s old: kept, it runs 3-4. At 4 the rest (3.1 s
// and older) are shed and the worker is idle: shed records take no worker time.
TEST(ShedByAge, ShedsOnlyMessagesOlderThanMaxAgeWhenAWorkerTakesThem) {
  for (const bool on : {false, true}) {
    ConsumerModel model(deterministic(1.0), 1, 7, /*batch_fidelity=*/false);
    model.set_shed_max_age(2.5);
    model.set_shedding(on);
    for (int i = 0; i < 10; ++i) model.arrive(0.1 * i, ArrivalChunk{0.1 * i, 0.1 * i, 1});
    run_until(model, 3.5);
    EXPECT_EQ(model.shed(), on ? 2 : 0);
    run_until(model, 4.5);
    const ModelSample s = model.sample(4.5);
    SCOPED_TRACE(on ? "shedding" : "off");
    EXPECT_EQ(model.shed(), on ? 6 : 0);
    EXPECT_EQ(s.shed, model.shed());
    EXPECT_EQ(model.completed(), 4);
    EXPECT_EQ(s.in_system, on ? 0 : 6);
    EXPECT_EQ(s.busy_now, on ? 0 : 1);
    EXPECT_EQ(model.arrived(), model.completed() + model.shed() + model.in_system());
    EXPECT_DOUBLE_EQ(model.total_service_seconds(), 4.0);
  }
}

TEST(ShedByAge, AnAgeOfExactlyMaxAgeIsKept) {
  ConsumerModel model(deterministic(1.0), 1, 7, false);
  model.set_shed_max_age(2.0);
  model.set_shedding(true);
  model.arrive(0.0, ArrivalChunk{0.0, 0.0, 1});
  model.arrive(0.0, ArrivalChunk{0.0, 0.0, 1});
  model.arrive(0.0, ArrivalChunk{0.0, 0.0, 1});  // starts at 2.0, exactly 2 s old: kept
  model.arrive(0.0, ArrivalChunk{0.0, 0.0, 1});  // 3 s old at 3: shed
  run_until(model, 10);
  EXPECT_EQ(model.completed(), 3);
  EXPECT_EQ(model.shed(), 1);
}

TEST(ShedByAge, BatchFidelityShedsTheOldFrontOfABatch) {
  // A batch of 10 spread over [0, 10] (message j at j + 0.5) waits behind a 5 s one; max age
  // 2 s: at 5, the messages that arrived before 3 (j = 0, 1, 2) are shed, 7 stay.
  ConsumerModel model(deterministic(0.5), 1, 7, /*batch_fidelity=*/true);
  model.set_shed_max_age(2.0);
  model.set_shedding(true);
  model.arrive(0.0, ArrivalChunk{0.0, 0.0, 10});   // 10 x 0.5 s: busy until 5
  model.arrive(0.0, ArrivalChunk{0.0, 10.0, 10});  // trickles in over [0, 10]
  run_until(model, 100);
  EXPECT_EQ(model.shed(), 3);
  EXPECT_EQ(model.completed(), 17);
  EXPECT_EQ(model.in_system(), 0);
}

// A fixed pool of 2 workers at 0.01 s a message (200 msg/s), lag SLO 500: 100 msg/s for 30 s,
// 1,000 msg/s from 30 to 90 s, then 100 msg/s again. Lag passes the SLO at the tick at 31
// (about 800) and stays far above it during the overload (shedding keeps about 2 s of arrivals,
// 2,000 messages); after 90 the last young backlog (about 800 at 91) ages past max_age_seconds
// and is shed by 92. So pressure holds from 31 to 91: shedding starts at 31 + 10 = 41, is on
// during the ticks [41, 42) ... and stops at 92 + release.
Trace step_overload() {
  Trace t;
  t.source = "step";
  t.bin_seconds = 1.0;
  for (int i = 0; i < 150; ++i) t.rates.push_back(i >= 30 && i < 90 ? 1000.0 : 100.0);
  return t;
}

SimConfig step_config(const std::string& fidelity, double release_after) {
  SimConfig c;
  c.fidelity = fidelity;
  c.model = deterministic(0.01);
  c.initial_workers = 2;
  c.lag_slo = 500;
  c.record_series = true;
  c.seed = 3;
  c.shedding.enabled = true;
  c.shedding.after_pressure_seconds = 10;
  c.shedding.release_after_seconds = release_after;
  c.shedding.max_age_seconds = 2;
  return c;
}

GuardConfig fixed_guards() {
  GuardConfig g = open_guards();
  g.min_workers = 2;
  g.max_workers = 2;
  return g;
}

TEST(ShedOnStepOverload, StartsAfterPressureShedsOldRecordsStopsAfterRelease) {
  for (const std::string fidelity : {"message", "batch"}) {
    for (const double release : {5.0, 20.0}) {
      SCOPED_TRACE(fidelity + " release " + std::to_string(release));
      std::vector<Observation> seen;
      const RunResult r = simulate(step_overload(), fixed_policy(2, &seen), "static",
                                   fixed_guards(), step_config(fidelity, release));
      const Kpis& k = r.kpis;
      EXPECT_TRUE(k.shedding);
      EXPECT_EQ(k.shed_starts, 1);
      // Batch fidelity sheds whole batches' old parts when a worker takes them: a batch taken
      // just before its messages grow old is served whole, so the last young backlog can hold
      // past 92 by a tick (at light load it over-states the lag by about a batch anyway).
      const double stop = fidelity == "message" ? 92 + release : k.shed_seconds + 41;
      if (fidelity == "message") {
        EXPECT_DOUBLE_EQ(k.shed_seconds, 92 + release - 41);
      } else {
        EXPECT_GE(k.shed_seconds, 92 + release - 41);
        EXPECT_LE(k.shed_seconds, 94 + release - 41);
      }
      EXPECT_EQ(k.arrived, k.processed + k.shed + k.final_lag);
      ASSERT_EQ(r.series.size(), 150u);
      for (const SeriesPoint& p : r.series) {
        // Point t covers (t - 1, t]: shedding is on during [41, 92 + release).
        if (p.t <= 41 || p.t > stop) {
          EXPECT_EQ(p.shed_rate, 0.0) << p.t;
        }
        if (p.t > 41 && p.t <= 90) {
          EXPECT_GT(p.shed_rate, 0.0) << p.t;
        }
        if (p.t == 31) {
          EXPECT_GT(p.lag, 500);
        }
        if (p.t == 30 || p.t >= stop - release + 1) {
          EXPECT_LE(p.lag, 500) << p.t;
        }
      }
      // About 8 s of 800 msg/s excess went at once at 41, then 800 msg/s until 90 (the pool
      // processes 200 of each second's 1,000).
      EXPECT_NEAR(double(k.shed), 8000 + 49 * 800 + 800, 2500);
      // What was processed while shedding was at most max_age_seconds old (plus its service;
      // the window's histogram has about 2 % resolution); without shedding it is 10 s and more.
      if (fidelity == "message") {
        for (const Observation& o : seen) {
          if (o.time >= 43 && o.time <= 90) {
            EXPECT_LE(o.record_age_p99, 2.1) << o.time;
          }
        }
      }
      // The policies see the pool's work as the processed rate, not the records shed beside
      // it (as in the live runtime): 200 msg/s while 800 msg/s are shed.
      for (const Observation& o : seen) {
        if (o.time >= 43 && o.time <= 90) {
          EXPECT_NEAR(o.processed_rate, 200.0, 30.0) << o.time;
        }
      }
    }
  }
}

TEST(ShedOnStepOverload, WithoutSheddingTheBacklogStays) {
  SimConfig c = step_config("message", 5);
  c.shedding = ShedConfig{};
  const RunResult r = simulate(step_overload(), fixed_policy(2), "static", fixed_guards(), c);
  EXPECT_FALSE(r.kpis.shedding);
  EXPECT_EQ(r.kpis.shed, 0);
  EXPECT_EQ(r.kpis.arrived, r.kpis.processed + r.kpis.final_lag);
  EXPECT_GT(r.kpis.final_lag, 40000);  // 60 s of 800/s excess, drained at 100/s after
  SimConfig shed = step_config("message", 5);
  const RunResult s = simulate(step_overload(), fixed_policy(2), "static", fixed_guards(), shed);
  EXPECT_EQ(s.kpis.arrived, r.kpis.arrived);  // the same arrivals
  EXPECT_LT(s.kpis.lag_integral, r.kpis.lag_integral / 10);
  EXPECT_LT(s.kpis.seconds_above_slo, r.kpis.seconds_above_slo);
  EXPECT_EQ(s.kpis.final_lag, 0);
}

TEST(ShedReports, ShedFieldsOnlyWithShedding) {
  SimConfig off = step_config("message", 5);
  off.shedding = ShedConfig{};
  std::vector<RunResult> runs = {
      simulate(step_overload(), fixed_policy(2), "plain", fixed_guards(), off)};
  const nlohmann::json plain = kpis_to_json(runs[0].kpis);
  for (const char* key : {"shed", "shed_seconds", "shed_starts"}) {
    EXPECT_FALSE(plain.contains(key)) << key;
  }
  EXPECT_EQ(format_kpi_table(runs).find("shed"), std::string::npos);
  EXPECT_FALSE(to_json(runs, off, TraceInfo::of(step_overload())).contains("shedding"));
  std::ostringstream csv;
  write_series_csv(csv, runs);
  EXPECT_EQ(csv.str().find("shed_rate"), std::string::npos);
  SimHtmlReport page;
  page.config = off;
  page.runs = runs;
  const std::string plain_html = render_sim_html(page);
  EXPECT_EQ(plain_html.find("id=\"chart-shed\""), std::string::npos);
  EXPECT_EQ(plain_html.find("shed time"), std::string::npos);

  const SimConfig on = step_config("message", 5);
  runs.push_back(simulate(step_overload(), fixed_policy(2), "shedding", fixed_guards(), on));
  const nlohmann::json j = kpis_to_json(runs[1].kpis);
  EXPECT_EQ(j["shed"]["total"], runs[1].kpis.shed);
  EXPECT_EQ(j["shed"]["age"], runs[1].kpis.shed);
  EXPECT_EQ(j["shed"].size(), 2u);
  EXPECT_EQ(j["shed_seconds"], 56.0);
  EXPECT_EQ(j["shed_starts"], 1);
  // Everything else is what a run without shedding writes.
  nlohmann::json rest = j;
  for (const char* key : {"shed", "shed_seconds", "shed_starts"}) rest.erase(key);
  EXPECT_EQ(rest.size(), plain.size());
  const std::string table = format_kpi_table(runs);
  EXPECT_NE(table.find("shed_time"), std::string::npos);
  EXPECT_EQ(to_json(runs, on, TraceInfo::of(step_overload()))["shedding"]["max_age_seconds"], 2.0);
  csv.str("");
  write_series_csv(csv, runs);
  EXPECT_NE(csv.str().find("shedding_shed_rate"), std::string::npos);
  EXPECT_EQ(csv.str().find("plain_shed_rate"), std::string::npos);
  page.config = on;
  page.runs = runs;
  const std::string html = render_sim_html(page);
  EXPECT_NE(html.find("id=\"chart-shed\""), std::string::npos);
  EXPECT_NE(html.find("Shed rate"), std::string::npos);
  EXPECT_NE(html.find("shed time<small>s</small>"), std::string::npos);  // the KPI table
  EXPECT_NE(html.find("<td>-</td>"), std::string::npos);                 // the run without shedding
}

}  // namespace
}  // namespace lagpilot::sim
