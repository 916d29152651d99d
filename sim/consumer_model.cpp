#include "sim/consumer_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "policies/config_reader.h"
#include "policies/quotients.h"
#include "sim/arrivals.h"
#include "sim/prefetched_stream.h"

namespace lagpilot::sim {
namespace {

constexpr int kLognormal = 0;
constexpr int kExponential = 1;
constexpr int kDeterministic = 2;

int distribution_code(const std::string& name) {
  if (name == "lognormal") return kLognormal;
  if (name == "exponential") return kExponential;
  if (name == "deterministic") return kDeterministic;
  throw std::invalid_argument("unknown service distribution '" + name + "'");
}

// Inverse of the standard normal CDF (Acklam's rational approximation, relative error < 1.2e-9).
double normal_quantile(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double low = 0.02425;
  if (p <= 0.0) return -INFINITY;
  if (p >= 1.0) return INFINITY;
  if (p < low) {
    const double q = std::sqrt(-2.0 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  if (p > 1.0 - low) {
    const double q = std::sqrt(-2.0 * std::log(1.0 - p));
    return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
  }
  const double q = p - 0.5;
  const double r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
}

// std::lround (std::llround) of a value in [0, 2^52), without the libm call it compiles to (two
// a batch: the busy class at a start and the progress at a sample): x - trunc(x) is exact, so
// comparing it with 1/2 rounds half away from zero as lround does. Negative values give 0 or
// less, as lround's would; the callers clamp them or never pass them.
int64_t round_nearest(double x) {
  const auto i = static_cast<int64_t>(x);
  return i + (x - static_cast<double>(i) >= 0.5 ? 1 : 0);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ConsumerModelConfig

ConsumerModelConfig ConsumerModelConfig::from_json(const nlohmann::json& j,
                                                   const std::string& path) {
  ConsumerModelConfig c;
  JsonObjectReader r(j, path);
  r.read("service_mean_seconds", c.service_mean_seconds, 1e-9, 86400.0);
  const bool cv_given = r.has("service_cv");
  r.read("service_cv", c.service_cv, 0.0, 100.0);
  r.read_enum("service_distribution", c.service_distribution,
              {"lognormal", "exponential", "deterministic"});
  if (c.service_distribution == "exponential") {
    if (cv_given && c.service_cv != 1.0) {
      throw ConfigError(r.path_of("service_cv"), "exponential service times have CV 1, got " +
                                                     std::to_string(c.service_cv) +
                                                     " (use \"lognormal\" for another CV)");
    }
    c.service_cv = 1.0;
  } else if (c.service_distribution == "deterministic") {
    if (cv_given && c.service_cv != 0.0) {
      throw ConfigError(r.path_of("service_cv"), "deterministic service times have CV 0, got " +
                                                     std::to_string(c.service_cv));
    }
    c.service_cv = 0.0;
  }
  r.read("usl_sigma", c.usl_sigma, 0.0, 1.0);
  r.read("usl_kappa", c.usl_kappa, 0.0, 1.0);
  r.read("downstream_capacity", c.downstream_capacity, 0.0);
  r.read("warmup_seconds", c.warmup_seconds, 0.0, 86400.0);
  r.read("sink_concurrency", c.sink_concurrency, 0.0, 1e6);
  r.finish();
  return c;
}

ConsumerModelConfig ConsumerModelConfig::from_usl(double lambda, double sigma, double kappa,
                                                  const ConsumerModelConfig& base) {
  if (!(lambda > 0.0) || !std::isfinite(lambda)) {
    throw std::invalid_argument("calibrated model: lambda must be > 0, got " +
                                std::to_string(lambda));
  }
  if (!(sigma >= 0.0 && sigma <= 1.0)) {
    throw std::invalid_argument("calibrated model: sigma must be in [0, 1], got " +
                                std::to_string(sigma));
  }
  if (!(kappa >= 0.0 && kappa <= 1.0)) {
    throw std::invalid_argument("calibrated model: kappa must be in [0, 1], got " +
                                std::to_string(kappa));
  }
  ConsumerModelConfig c = base;
  c.service_mean_seconds = 1.0 / lambda;
  c.usl_sigma = sigma;
  c.usl_kappa = kappa;
  c.downstream_capacity = 0.0;
  return c;
}

nlohmann::json ConsumerModelConfig::to_json() const {
  return nlohmann::json{{"service_mean_seconds", service_mean_seconds},
                        {"service_cv", service_cv},
                        {"service_distribution", service_distribution},
                        {"usl_sigma", usl_sigma},
                        {"usl_kappa", usl_kappa},
                        {"downstream_capacity", downstream_capacity},
                        {"warmup_seconds", warmup_seconds},
                        {"sink_concurrency", sink_concurrency}};
}

double ConsumerModelConfig::usl_factor(int busy) const {
  const double n = std::max(1, busy);
  return 1.0 + usl_sigma * (n - 1.0) + usl_kappa * n * (n - 1.0);
}

double ConsumerModelConfig::stretch(int busy) const {
  const double n = std::max(1, busy);
  const double usl =
      usl_factor(busy) * (sink_concurrency > 0.0 ? std::max(1.0, n / sink_concurrency) : 1.0);
  if (downstream_capacity <= 0.0) return usl;
  const double offered = n / (service_mean_seconds * usl);
  return usl * std::max(1.0, offered / downstream_capacity);
}

double ConsumerModelConfig::capacity(int workers) const {
  if (workers <= 0) return 0.0;
  const double sink = sink_concurrency > 0.0 ? std::max(1.0, workers / sink_concurrency) : 1.0;
  const double x = workers / (service_mean_seconds * usl_factor(workers) * sink);
  return downstream_capacity > 0.0 ? std::min(x, downstream_capacity) : x;
}

double ConsumerModelConfig::service_quantile(double q) const {
  switch (distribution_code(service_distribution)) {
    case kExponential:
      return -service_mean_seconds * std::log1p(-q);
    case kDeterministic:
      return service_mean_seconds;
    default: {
      const double s2 = std::log1p(service_cv * service_cv);
      return std::exp(std::log(service_mean_seconds) - 0.5 * s2 +
                      std::sqrt(s2) * normal_quantile(q));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// ConsumerModel::ChunkQueue

void ConsumerModel::ChunkQueue::grow() {
  std::vector<ArrivalChunk> bigger(buffer_.size() * 2);
  for (std::size_t i = 0; i < size_; ++i) bigger[i] = buffer_[(head_ + i) & (buffer_.size() - 1)];
  buffer_.swap(bigger);
  head_ = 0;
}

// ---------------------------------------------------------------------------------------------
// ConsumerModel

ConsumerModel::ConsumerModel(const ConsumerModelConfig& config, int initial_workers,
                             uint64_t service_seed, bool batch_fidelity)
    : config_(config), batch_fidelity_(batch_fidelity), rng_(service_seed) {
  if (!(config_.service_mean_seconds > 0.0)) {
    throw std::invalid_argument("service_mean_seconds must be > 0");
  }
  distribution_ = distribution_code(config_.service_distribution);
  const double cv = distribution_ == kExponential     ? 1.0
                    : distribution_ == kDeterministic ? 0.0
                                                      : config_.service_cv;
  log_sigma_ = std::sqrt(std::log1p(cv * cv));
  log_mu_ = std::log(config_.service_mean_seconds) - 0.5 * log_sigma_ * log_sigma_;
  gamma_shape_per_message_ = cv > 0.0 ? 1.0 / (cv * cv) : 0.0;
  gamma_scale_ = config_.service_mean_seconds * cv * cv;
  if (batch_fidelity_ && distribution_ != kDeterministic && gamma_shape_per_message_ > 0.0) {
    gamma_shapes_.resize(kGammaShapes);
    for (int64_t count = 2; count < kGammaShapes; ++count) {
      const double shape = static_cast<double>(count) * gamma_shape_per_message_;
      if (shape >= 1.0) gamma_shapes_[count] = Rng::GammaShape(shape);  // else d stays 0
    }
  }
  base_p50_ = config_.service_quantile(0.5);
  base_p99_ = config_.service_quantile(0.99);
  stretch_table_.push_back(1.0);               // index 0 unused
  for (int i = 0; i < initial_workers; ++i) {  // productive at once: no warm-up
    ++pool_size_;
    become_productive(new_worker_slot(), 0.0);
  }
}

ConsumerModel::~ConsumerModel() = default;

void ConsumerModel::prefetch_service_times() {
  if (batch_fidelity_ || distribution_ == kDeterministic || service_times_) return;
  // The producer draws from a copy of the stream as it stands (nothing drawn yet), exactly as
  // draw_work(1) would.
  service_times_ = std::make_unique<PrefetchedStream>(PrefetchedStream::Fill(
      [rng = rng_, exponential = distribution_ == kExponential, mean = config_.service_mean_seconds,
       log_mu = log_mu_, log_sigma = log_sigma_](double* out, std::size_t n) mutable {
        if (exponential) {
          for (std::size_t i = 0; i < n; ++i) out[i] = mean * rng.exponential();
        } else {
          for (std::size_t i = 0; i < n; ++i) out[i] = std::exp(log_mu + log_sigma * rng.normal());
        }
        return n;  // endless
      }));
}

double ConsumerModel::grow_stretch_table(int busy) {
  for (int n = static_cast<int>(stretch_table_.size()); n <= busy; ++n) {
    stretch_table_.push_back(config_.stretch(n));
  }
  stretch_weight_.resize(stretch_table_.size(), 0.0);
  return stretch_table_[busy];
}

double ConsumerModel::stretch_at(double busy) const {
  const double n = std::max(1.0, busy);
  const double usl =
      (1.0 + config_.usl_sigma * (n - 1.0) + config_.usl_kappa * n * (n - 1.0)) *
      (config_.sink_concurrency > 0.0 ? std::max(1.0, n / config_.sink_concurrency) : 1.0);
  if (config_.downstream_capacity <= 0.0) return usl;
  const double offered = n / (config_.service_mean_seconds * usl);
  return usl * std::max(1.0, offered / config_.downstream_capacity);
}

double ConsumerModel::draw_work(int64_t count) {
  if (service_times_) return service_times_->next();  // per message: count is 1
  if (count == 1) {
    switch (distribution_) {
      case kExponential:
        return config_.service_mean_seconds * rng_.exponential();
      case kDeterministic:
        return config_.service_mean_seconds;
      default:
        return std::exp(log_mu_ + log_sigma_ * rng_.normal());
    }
  }
  const double n = static_cast<double>(count);
  if (distribution_ == kDeterministic || gamma_shape_per_message_ == 0.0) {
    return n * config_.service_mean_seconds;
  }
  // Sum of n service times: Gamma with mean n * mean and variance n * (cv * mean)^2.
  if (count < static_cast<int64_t>(gamma_shapes_.size()) && gamma_shapes_[count].d > 0.0) {
    return rng_.gamma(gamma_shapes_[count]) * gamma_scale_;
  }
  return rng_.gamma(n * gamma_shape_per_message_) * gamma_scale_;
}

int ConsumerModel::new_worker_slot() {
  if (!free_slots_.empty()) {
    const int w = free_slots_.back();
    free_slots_.pop_back();
    return w;
  }
  if (workers_.size() > EventHeap::kMaxSlot) {
    throw std::length_error("simulated consumer: more than 2^24 worker slots");
  }
  workers_.emplace_back();
  busy_index_.push_back(-1);  // sized with workers_: add_busy() needs no check
  // A slot is at most once in each of these (SlotStack: room for every slot, no reallocation).
  free_slots_.reserve(workers_.size());
  idle_.reserve(workers_.size());
  busy_slots_.reserve(workers_.size());
  return static_cast<int>(workers_.size()) - 1;
}

void ConsumerModel::add_busy(int w) {
  busy_index_[w] = static_cast<int>(busy_slots_.size());
  busy_slots_.push_back(w);
}

void ConsumerModel::remove_busy(int w) {
  const int i = busy_index_[w];
  const int last = busy_slots_.back();
  busy_slots_[i] = last;
  busy_index_[last] = i;
  busy_slots_.pop_back();
  busy_index_[w] = -1;
}

void ConsumerModel::free_worker(int w) {
  Worker& k = workers_[w];
  k.state = WorkerState::kFree;
  k.retiring = false;
  k.event_seq = kNoEvent;
  free_slots_.push_back(w);
}

void ConsumerModel::start(int w, double now, const ArrivalChunk& chunk, bool batch) {
  integrate_busy(now, batch);
  ++busy_;
  double s;
  int busy_class = busy_;
  if (!batch) {
    s = stretch_of(busy_);
  } else {
    // A worker holding a batch that trickles in works only part of the time: count the other
    // workers by the fraction of time they work (1 each with a backlog, as in message mode).
    const double concurrency = 1.0 + busy_rate_sum_;
    busy_class = std::max(1, static_cast<int>(round_nearest(concurrency)));
    stretch_of(busy_class);  // sizes the tables
    s = stretch_at(concurrency);
  }
  // Per message with prefetched draws (the common M/M/c case) without the call.
  const double work = (service_times_ ? service_times_->next() : draw_work(chunk.count)) * s;
  double end = now + work;
  double rate = 1.0;  // always, one message a chunk
  if (batch && chunk.count > 1) {
    // A batch cannot finish before its last message has arrived (and been served).
    const double earliest = chunk.last_arrival + work / static_cast<double>(chunk.count);
    if (earliest > end) {
      end = earliest;
      rate = work / (end - now);
    }
  }
  Worker& k = workers_[w];
  if (k.state != WorkerState::kBusy) add_busy(w);
  k.state = WorkerState::kBusy;
  k.start = now;
  k.end = end;
  k.work = work;
  if (batch) {  // what only a batch's completion reads
    k.busy_rate = rate;
    k.busy_at_start = busy_class;
  }
  k.chunk = chunk;
  if (batch) busy_rate_sum_ += rate;
  k.event_seq = events_.schedule(end, static_cast<uint32_t>(w));
}

bool ConsumerModel::take_next(double now, ArrivalChunk& chunk) {
  while (!queue_.empty()) {
    chunk = queue_.pop();
    queued_messages_ -= chunk.count;
    if (!shedding_) return true;
    int64_t old = 0;
    const double a0 = chunk.first_arrival;
    const double a1 = chunk.last_arrival;
    if (chunk.count == 1 || !(a1 > a0)) {
      old = now - a0 > shed_max_age_ ? chunk.count : 0;
    } else {
      // Message j arrives at a0 + (a1 - a0)(j + 0.5)/n; those before now - max_age are old.
      const double n = static_cast<double>(chunk.count);
      const double x = (now - shed_max_age_ - a0) * n / (a1 - a0) - 0.5;
      old = x <= 0.0 ? 0 : std::min<int64_t>(chunk.count, static_cast<int64_t>(std::ceil(x)));
      if (old > 0 && old < chunk.count) {
        chunk.first_arrival = a0 + (a1 - a0) * static_cast<double>(old) / n;
      }
    }
    shed_ += old;
    chunk.count -= old;
    if (chunk.count > 0) return true;
  }
  return false;
}

void ConsumerModel::become_productive(int w, double now) {
  ArrivalChunk c;
  if (take_next(now, c)) {
    start(w, now, c, batch_fidelity_);
  } else {
    workers_[w].state = WorkerState::kIdle;
    idle_.push_back(w);
  }
}

void ConsumerModel::complete(int w, double now, bool batch) {
  integrate_busy(now, batch);
  Worker& k = workers_[w];
  if (batch) {
    busy_rate_sum_ -= k.busy_rate;           // start()'s rate
    if (--busy_ == 0) busy_rate_sum_ = 0.0;  // no drift from adding and removing fractions
  } else {
    --busy_;
  }
  const int64_t count = k.chunk.count;
  completed_ += count;
  window_completed_ += count;
  total_service_ += k.work;
  const double a0 = k.chunk.first_arrival;
  const double a1 = k.chunk.last_arrival;
  const double n = static_cast<double>(count);
  const double span = k.end - k.start;
  if (!batch) {
    total_wait_ += k.start - a0;
    if (latency_wanted_) {
      latency_.add(k.work);
      record_age_.add(now - a0);
    }
  } else {
    // Messages start evenly over [start, end - work/n] and arrive evenly over [a0, a1].
    const double mean_start = k.start + 0.5 * (span - k.work / n);
    total_wait_ += n * std::max(0.0, mean_start - 0.5 * (a0 + a1));
  }
  if (batch && latency_wanted_) {  // the stretch factors and ages sample() reports
    stretch_weight_[k.busy_at_start] += n;
    stretch_lo_ = std::min(stretch_lo_, k.busy_at_start);
    stretch_hi_ = std::max(stretch_hi_, k.busy_at_start);
    if (count == 1) {
      record_age_.add(now - a0);
    } else {
      // Message j (0-based) arrives at a0 + (a1 - a0)(j + 0.5)/n and completes at
      // start + span (j + 1)/n: ages are linear in j. The two quartile messages stand for
      // each half of the batch.
      for (const double j : {0.25 * n - 0.5, 0.75 * n - 0.5}) {
        const double age = k.start - a0 + (span * (j + 1.0) - (a1 - a0) * (j + 0.5)) / n;
        record_age_.add(std::max(age, 0.0), 0.5 * n);
      }
    }
  }
  if (k.retiring) {
    remove_busy(w);
    free_worker(w);
  } else if (ArrivalChunk c; take_next(now, c)) {
    start(w, now, c, batch);
  } else {
    remove_busy(w);
    k.state = WorkerState::kIdle;
    idle_.push_back(w);
  }
}

void ConsumerModel::handle_top_event(bool batch) {
  // The event stays at the heap's root while it is handled: a completion that starts the
  // worker's next message schedules it in the event's place (EventHeap::handle_top).
  const auto e = events_.handle_top();
  const int w = static_cast<int>(e.slot);
  Worker& k = workers_[w];
  if (k.event_seq == e.seq) {  // else the worker was removed meanwhile
    if (k.state == WorkerState::kBusy) {
      complete(w, e.time, batch);
    } else if (k.state == WorkerState::kWarming) {
      become_productive(w, e.time);
    }
  }
  events_.done();
}

void ConsumerModel::run_next_event() {
  handle_top_event(batch_fidelity_);
}

void ConsumerModel::accept(double now, const ArrivalChunk& chunk, bool batch) {
  arrived_ += chunk.count;
  if (!idle_.empty()) {
    const int w = idle_.back();
    idle_.pop_back();
    start(w, now, chunk, batch);
  } else {
    queue_.push(chunk);
    queued_messages_ += chunk.count;
  }
}

void ConsumerModel::arrive(double now, const ArrivalChunk& chunk) {
  accept(now, chunk, batch_fidelity_);
}

template <class Source>
int64_t ConsumerModel::run_window(double t1, Source& arrivals, double& next_arrival) {
  // The comparisons run on EventHeap keys (the doubles' order as integers): the root's key is
  // read as it is, and an arrival's time is turned into a key once.
  using Heap = EventHeap;
  const uint64_t end = Heap::key_of(t1);
  double ta = next_arrival;
  uint64_t arrival = Heap::key_of(ta);
  int64_t arrivals_taken = 0;
  for (;;) {
    // An empty heap's "next event" is above every key (+infinity's included): the arrival
    // branch then ends the window or takes the arrival, as a caller's loop would.
    const uint64_t event = events_.empty() ? ~uint64_t{0} : events_.top_key();
    if (event <= arrival) {
      if (event >= end) break;
      handle_top_event(/*batch=*/false);
    } else {
      if (arrival >= end) break;
      accept(ta, ArrivalChunk{ta, ta, 1}, /*batch=*/false);
      ++arrivals_taken;
      ta = arrivals.next();
      arrival = Heap::key_of(ta);
    }
  }
  next_arrival = ta;
  return arrivals_taken;
}

template int64_t ConsumerModel::run_window(double, PrefetchedStream&, double&);
template int64_t ConsumerModel::run_window(double, arrivals::ArrivalGenerator&, double&);

void ConsumerModel::resize(double now, int workers) {
  const int target = std::max(0, workers);
  if (target > pool_size_) {
    int missing = target - pool_size_;
    // Workers about to retire stay instead: they are productive now.
    for (std::size_t w = 0; w < workers_.size() && missing > 0; ++w) {
      if (workers_[w].state == WorkerState::kBusy && workers_[w].retiring) {
        workers_[w].retiring = false;
        ++pool_size_;
        --missing;
      }
    }
    for (; missing > 0; --missing) {
      const int w = new_worker_slot();
      ++pool_size_;
      Worker& k = workers_[w];
      k.retiring = false;
      if (config_.warmup_seconds > 0.0) {
        k.state = WorkerState::kWarming;
        k.ready_at = now + config_.warmup_seconds;
        k.event_seq = events_.schedule(k.ready_at, static_cast<uint32_t>(w));
      } else {
        become_productive(w, now);
      }
    }
  } else if (target < pool_size_) {
    int extra = pool_size_ - target;
    // 1. Warming workers, the newest (latest ready) first: they have done nothing yet.
    while (extra > 0) {
      int newest = -1;
      for (std::size_t w = 0; w < workers_.size(); ++w) {
        if (workers_[w].state == WorkerState::kWarming &&
            (newest < 0 || workers_[w].ready_at >= workers_[newest].ready_at)) {
          newest = static_cast<int>(w);
        }
      }
      if (newest < 0) break;
      free_worker(newest);
      --pool_size_;
      --extra;
    }
    // 2. Idle workers.
    while (extra > 0 && !idle_.empty()) {
      free_worker(idle_.back());
      idle_.pop_back();
      --pool_size_;
      --extra;
    }
    // 3. Busy workers retire after the message (batch) in hand.
    for (int w = static_cast<int>(workers_.size()) - 1; w >= 0 && extra > 0; --w) {
      if (workers_[w].state == WorkerState::kBusy && !workers_[w].retiring) {
        workers_[w].retiring = true;
        --pool_size_;
        --extra;
      }
    }
  }
}

int64_t ConsumerModel::progress(const Worker& k, double now) const {
  if (now >= k.end) return k.chunk.count;
  if (k.chunk.count == 1 || now <= k.start) return 0;
  // Nearest, not floor: the unbiased count (floor would over-state the lag by half a message
  // per batch in service).
  const double f = (now - k.start) / (k.end - k.start);
  return std::min<int64_t>(k.chunk.count, round_nearest(f * static_cast<double>(k.chunk.count)));
}

int64_t ConsumerModel::in_system() const {
  int64_t n = 0;
  queue_.for_each([&n](const ArrivalChunk& c) { n += c.count; });
  for (const Worker& k : workers_) {
    if (k.state == WorkerState::kBusy) n += k.chunk.count;
  }
  return n;
}

ModelSample ConsumerModel::sample(double now) {
  // Checked once a tick: no tick comes near 2^32 events (hours of simulating at ~30 M events/s).
  if (events_.sequences_left() < (uint64_t{1} << 32)) {
    throw std::length_error("simulated consumer: 2^40 events, more than the event heap numbers");
  }
  integrate_busy(now, batch_fidelity_);
  ModelSample s;
  int64_t partial = 0;
  int64_t waiting_in_batches = 0;
  int productive = static_cast<int>(idle_.size());  // every idle worker is productive
  // Sums of integers over the busy workers: the order does not matter.
  if (!batch_fidelity_) {
    // One message a worker: done if its completion is due now (one at exactly `now` has not run
    // yet), otherwise not started in the count; nothing waits inside a chunk. progress() without
    // its branches, which the batch case needs.
    for (const int w : busy_slots_) {
      const Worker& k = workers_[w];
      partial += now >= k.end ? 1 : 0;
      productive += k.retiring ? 0 : 1;
    }
  } else {
    for (const int w : busy_slots_) {
      const Worker& k = workers_[w];
      const int64_t p = progress(k, now);
      partial += p;
      waiting_in_batches += std::max<int64_t>(0, k.chunk.count - p - 1);
      if (!k.retiring) ++productive;
    }
  }
  s.processed = completed_ + partial;
  s.shed = shed_;
  s.in_system = arrived_ - s.processed - shed_;
  s.queue_depth = queued_messages_ + waiting_in_batches;
  s.pool_size = pool_size_;
  s.productive_workers = productive;
  s.busy_now = busy_;
  const double window = now - window_start_;
  s.busy_mean = window > 0.0 ? divide(busy_area_ - window_busy_area_start_, window)
                             : busy_rate(batch_fidelity_);
  if (config_.sink_concurrency > 0.0) {
    s.sink_pushback = s.busy_mean > config_.sink_concurrency
                          ? (s.busy_mean - config_.sink_concurrency) / s.busy_mean
                          : 0.0;
  }
  s.window_completed = window_completed_;
  double tail_shift = 0.0;
  if (batch_fidelity_) {
    double total = 0.0;
    for (int n = stretch_lo_; n <= stretch_hi_; ++n) total += stretch_weight_[n];
    if (total > 0.0) {
      auto stretch_quantile = [&](double q) {
        const double target = q * total;
        double seen = 0.0;
        for (int n = stretch_lo_; n <= stretch_hi_; ++n) {
          seen += stretch_weight_[n];
          if (seen >= target && stretch_weight_[n] > 0.0) return stretch_table_[n];
        }
        return stretch_table_[stretch_hi_];
      };
      const double median_stretch = stretch_quantile(0.5);
      s.latency_p50 = base_p50_ * median_stretch;
      s.latency_p99 = base_p99_ * stretch_quantile(0.99);
      // Batch ages are spread from each batch's mean service time; add the service-time tail
      // (p99 - mean) so that a light load shows p99(age) >= p99(service) as it must.
      tail_shift = std::max(0.0, s.latency_p99 - config_.service_mean_seconds * median_stretch);
    }
    for (int n = stretch_lo_; n <= stretch_hi_; ++n) stretch_weight_[n] = 0.0;
    stretch_lo_ = std::numeric_limits<int>::max();
    stretch_hi_ = -1;
  } else {
    s.latency_p50 = latency_.quantile(0.5);
    s.latency_p99 = latency_.quantile(0.99);
    latency_.clear();
  }
  s.record_age_p99 = record_age_.empty() ? 0.0 : record_age_.quantile(0.99) + tail_shift;
  record_age_.clear();
  window_start_ = now;
  window_busy_area_start_ = busy_area_;
  window_completed_ = 0;
  return s;
}

}  // namespace lagpilot::sim
