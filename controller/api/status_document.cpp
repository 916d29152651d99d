#include "controller/api/status_document.h"

#include <algorithm>
#include <utility>

namespace lagpilot {
namespace {

nlohmann::json tick_part(ApiContext& ctx) {
  const GuardConfig g = ctx.controller.guard_config();
  const std::optional<Observation> obs = ctx.controller.last_observation();
  const std::optional<Decision> last = ctx.controller.last_decision();

  nlohmann::json workers = {{"current", nullptr},
                            {"desired", nullptr},
                            {"proposed", nullptr},
                            {"busy", nullptr},
                            {"min", g.min_workers},
                            {"max", g.max_workers},
                            {"hard_min", g.hard_min_workers},
                            {"hard_max", g.hard_max_workers}};
  nlohmann::json lag = {{"total", nullptr}, {"partitions", nlohmann::json::array()}};
  nlohmann::json rates = {{"arrival_messages_per_second", nullptr},
                          {"processed_messages_per_second", nullptr},
                          {"lag_slope_messages_per_second", nullptr}};
  nlohmann::json latency = {{"p50", nullptr}, {"p99", nullptr}, {"record_age_p99", nullptr}};
  nlohmann::json queue = {{"depth", nullptr}, {"capacity", nullptr}};
  if (obs) {
    workers["current"] = obs->current_workers;
    workers["busy"] = obs->busy_workers;
    lag["total"] = obs->total_lag;
    for (const PartitionLag& p : obs->partition_lag) {
      lag["partitions"].push_back({{"topic", p.topic}, {"partition", p.partition}, {"lag", p.lag}});
    }
    rates = {{"arrival_messages_per_second", obs->arrival_rate},
             {"processed_messages_per_second", obs->processed_rate},
             {"lag_slope_messages_per_second", obs->lag_slope}};
    latency = {{"p50", obs->latency_p50},
               {"p99", obs->latency_p99},
               {"record_age_p99", obs->record_age_p99}};
    queue = {{"depth", obs->queue_depth}, {"capacity", obs->queue_capacity}};
  }
  if (last) {
    workers["desired"] = last->workers;
    workers["proposed"] = last->policy_workers;
  }
  return {{"ticks", ctx.controller.ticks()},
          {"last_tick_time", obs ? nlohmann::json(obs->time) : nlohmann::json(nullptr)},
          {"workers", std::move(workers)},
          {"policy",
           {{"name", ctx.controller.policy_name()}, {"params", ctx.controller.policy_params()}}},
          {"last_decision", last ? decision_json(*last) : nlohmann::json(nullptr)},
          {"lag", std::move(lag)},
          {"rates", std::move(rates)},
          {"latency_seconds", std::move(latency)},
          {"queue", std::move(queue)}};
}

// Without "runtime", which the caller adds (it merges two parts).
nlohmann::json live_part(ApiContext& ctx, bool operator_paused) {
  const double now = ctx.clock.now();
  return {{"time", now},
          {"operator_paused", operator_paused},
          {"override", override_json(ctx.controller.active_override(now), now)}};
}

nlohmann::json object_or_empty(const std::function<nlohmann::json()>& callback) {
  return callback ? callback() : nlohmann::json::object();
}

}  // namespace

std::string response_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json decision_json(const Decision& d) {
  return {{"time", d.time},     {"policy", d.policy},   {"policy_workers", d.policy_workers},
          {"guards", d.guards}, {"workers", d.workers}, {"previous_workers", d.previous_workers},
          {"reason", d.reason}, {"source", d.source},   {"late", d.late}};
}

nlohmann::json override_json(const std::optional<ManualOverride>& pin, double now) {
  if (!pin) return nullptr;
  return {{"workers", pin->workers},
          {"expires_at", pin->expires_at},
          {"expires_in_seconds", pin->expires_at - now},
          {"reason", pin->reason}};
}

nlohmann::json status_document(ApiContext& ctx, bool operator_paused) {
  nlohmann::json doc = tick_part(ctx);
  doc.update(live_part(ctx, operator_paused));
  nlohmann::json runtime = object_or_empty(ctx.status_tick_extra);
  runtime.update(object_or_empty(ctx.status_live_extra));
  doc["runtime"] = std::move(runtime);
  return doc;
}

namespace {

template <typename Member>
std::vector<Member> members_of(const nlohmann::json& object) {
  std::vector<Member> members;
  members.reserve(object.size());
  for (auto it = object.begin(); it != object.end(); ++it) {
    members.push_back({it.key(), response_text(it.key()) + ":" + response_text(it.value())});
  }
  return members;  // in key order: nlohmann::json objects iterate sorted
}

// "{...}" with the members of both sorted lists in key order; on a key in both, b's.
template <typename Member>
std::string object_text(const std::vector<Member>& a, const std::vector<Member>& b) {
  std::size_t size = 2;
  for (const Member& m : a) size += m.text.size() + 1;
  for (const Member& m : b) size += m.text.size() + 1;
  std::string out;
  out.reserve(size);
  out += '{';
  auto add = [&out](const Member& m) {
    if (out.size() > 1) out += ',';
    out += m.text;
  };
  auto ia = a.begin();
  auto ib = b.begin();
  while (ia != a.end() || ib != b.end()) {
    if (ib == b.end() || (ia != a.end() && ia->key < ib->key)) {
      add(*ia++);
    } else {
      if (ia != a.end() && ia->key == ib->key) ++ia;
      add(*ib++);
    }
  }
  out += '}';
  return out;
}

}  // namespace

std::optional<std::string> StatusPublisher::publish() {
  std::lock_guard publishing(publish_mutex_);
  std::shared_ptr<const Published> next;
  std::optional<std::string> error;
  try {
    Published p;
    p.top = members_of<Member>(tick_part(ctx_));
    p.runtime = members_of<Member>(object_or_empty(ctx_.status_tick_extra));
    next = std::make_shared<const Published>(std::move(p));
  } catch (const std::exception& e) {
    error = e.what();  // next stays null: requests build the document and answer the error
  }
  std::lock_guard lock(mutex_);
  published_ = std::move(next);
  return error;
}

bool StatusPublisher::published() const {
  std::lock_guard lock(mutex_);
  return published_ != nullptr;
}

std::string StatusPublisher::text(bool operator_paused) const {
  std::shared_ptr<const Published> p;
  {
    std::lock_guard lock(mutex_);
    p = published_;
  }
  if (!p) return response_text(status_document(ctx_, operator_paused));
  const std::vector<Member> live_runtime =
      members_of<Member>(object_or_empty(ctx_.status_live_extra));
  std::vector<Member> live = members_of<Member>(live_part(ctx_, operator_paused));
  Member runtime{"runtime", response_text("runtime") + ":" + object_text(p->runtime, live_runtime)};
  live.insert(std::upper_bound(live.begin(), live.end(), runtime,
                               [](const Member& x, const Member& y) { return x.key < y.key; }),
              std::move(runtime));
  return object_text(p->top, live);
}

}  // namespace lagpilot
