#include "policies/usl_fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "policies/infinity.h"
#include "policies/small_ldlt.h"
#include "policies/worker_count.h"

namespace lagpilot {
namespace {

// Pseudo-samples of the pooled variance each bin's own variance is shrunk toward.
constexpr double kShrinkSamples = 2.0;

void check_options(const UslFitOptions& o) {
  auto fail = [](const std::string& what) {
    throw std::invalid_argument("UslFitOptions: " + what);
  };
  if (!(o.forgetting > 0.0 && o.forgetting <= 1.0)) fail("forgetting must be in (0, 1]");
  if (o.min_distinct_workers < 1) fail("min_distinct_workers must be >= 1");
  if (!(o.noise_floor > 0.0) || !std::isfinite(o.noise_floor)) fail("noise_floor must be > 0");
  if (!(o.selection_penalty >= 0.0) || !std::isfinite(o.selection_penalty)) {
    fail("selection_penalty must be >= 0");
  }
  if (o.max_bins < 1) fail("max_bins must be >= 1");
}

// What the fitting routines work on: one bin, with its chi-square weight.
struct FitPoint {
  double n = 0.0;
  double x = 0.0;
  double weight = 0.0;      // sample weight W (for R^2 and the RMS error)
  double fit_weight = 0.0;  // W / relative variance of one sample (the chi-square weight)
};

struct Params {
  double lambda = 0.0, sigma = 0.0, kappa = 0.0;
};

double usl(const Params& p, double n) {
  return p.lambda * n / (1.0 + p.sigma * (n - 1.0) + p.kappa * n * (n - 1.0));
}

// Chi-square of relative errors; +infinity if the curve is not positive at some point.
double chi_square(const std::vector<FitPoint>& pts, const Params& p) {
  double cost = 0.0;
  for (const FitPoint& q : pts) {
    const double d = 1.0 + p.sigma * (q.n - 1.0) + p.kappa * q.n * (q.n - 1.0);
    if (!(d > 0.0)) return kInf;
    const double r = p.lambda * q.n / d / q.x - 1.0;
    cost += q.fit_weight * r * r;
  }
  return std::isfinite(cost) ? cost : kInf;
}

// Weighted linear least squares of N/X on [1, N-1, N(N-1)] restricted to the columns in use;
// relative weights. Returns false when the solution is not feasible (1/lambda <= 0, or a
// negative sigma/lambda or kappa/lambda) or the system is rank deficient.
bool linear_fit(const std::vector<FitPoint>& pts, bool use_sigma, bool use_kappa, Params* out) {
  const int cols = 1 + (use_sigma ? 1 : 0) + (use_kappa ? 1 : 0);
  const int rows = static_cast<int>(pts.size());
  if (rows < cols) return false;
  Eigen::MatrixXd a(rows, cols);
  Eigen::VectorXd b(rows);
  for (int i = 0; i < rows; ++i) {
    const FitPoint& q = pts[i];
    const double y = q.n / q.x;
    const double s = std::sqrt(q.fit_weight) / y;  // residual / y ~ relative error of X
    int c = 0;
    a(i, c++) = s;
    if (use_sigma) a(i, c++) = s * (q.n - 1.0);
    if (use_kappa) a(i, c++) = s * q.n * (q.n - 1.0);
    b(i) = s * y;
  }
  // Column equilibration: N(N-1) runs to thousands while the first column is about 1.
  Eigen::VectorXd scale(cols);
  for (int c = 0; c < cols; ++c) {
    const double norm = a.col(c).norm();
    if (!(norm > 0.0) || !std::isfinite(norm)) return false;
    scale(c) = norm;
    a.col(c) /= norm;
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  qr.setThreshold(1e-10);
  if (qr.rank() < cols) return false;
  const Eigen::VectorXd theta = qr.solve(b).cwiseQuotient(scale);
  int c = 0;
  const double inv_lambda = theta(c++);
  const double s_over = use_sigma ? theta(c++) : 0.0;
  const double k_over = use_kappa ? theta(c++) : 0.0;
  if (!(inv_lambda > 0.0) || !(s_over >= 0.0) || !(k_over >= 0.0)) return false;
  out->lambda = 1.0 / inv_lambda;
  out->sigma = s_over / inv_lambda;
  out->kappa = k_over / inv_lambda;
  return std::isfinite(out->lambda) && std::isfinite(out->sigma) && std::isfinite(out->kappa);
}

// Levenberg-Marquardt on sum w ((X(N) - X) / X)^2 over the free parameters, projecting sigma
// and kappa onto >= 0 and lambda onto > 0. Starts from (and never ends worse than) `p`.
Params refine(const std::vector<FitPoint>& pts, Params p, bool use_sigma, bool use_kappa) {
  const int cols = 1 + (use_sigma ? 1 : 0) + (use_kappa ? 1 : 0);
  const int rows = static_cast<int>(pts.size());
  double cost = chi_square(pts, p);
  if (!std::isfinite(cost)) return p;
  double mu = 1e-3;
  // The matrices are allocated once per call and reused by the iterations, and the damped
  // systems (one per damping tried, hundreds per fit) are solved by SmallLdlt: the allocations
  // and the general LDLT's bookkeeping were most of a fit's time. The products are the same
  // Eigen kernels as on fresh matrices and SmallLdlt rounds as Eigen's LDLT does, so the
  // results are the same to the bit.
  Eigen::MatrixXd jac(rows, cols);
  Eigen::VectorXd res(rows);
  Eigen::MatrixXd jtj(cols, cols);
  Eigen::VectorXd grad(cols);
  double damped[SmallLdlt::kMaxOrder][SmallLdlt::kMaxOrder];
  double minus_grad[SmallLdlt::kMaxOrder];
  double step[SmallLdlt::kMaxOrder];
  SmallLdlt ldlt;
  for (int iter = 0; iter < 50 && cost > 0.0; ++iter) {
    for (int i = 0; i < rows; ++i) {
      const FitPoint& q = pts[i];
      const double d = 1.0 + p.sigma * (q.n - 1.0) + p.kappa * q.n * (q.n - 1.0);
      const double w = std::sqrt(q.fit_weight) / q.x;
      const double x = p.lambda * q.n / d;
      res(i) = std::sqrt(q.fit_weight) * (x / q.x - 1.0);
      int c = 0;
      jac(i, c++) = w * q.n / d;
      if (use_sigma) jac(i, c++) = -w * x * (q.n - 1.0) / d;
      if (use_kappa) jac(i, c++) = -w * x * q.n * (q.n - 1.0) / d;
    }
    jtj.noalias() = jac.transpose() * jac;
    grad.noalias() = jac.transpose() * res;
    for (int c = 0; c < cols; ++c) minus_grad[c] = -grad(c);
    bool improved = false;
    while (mu < 1e12) {
      for (int i = 0; i < cols; ++i) {
        for (int j = 0; j < cols; ++j) damped[i][j] = jtj(i, j);
        damped[i][i] += mu * std::max(jtj(i, i), 1e-300);
      }
      ldlt.compute(damped, cols);
      ldlt.solve(minus_grad, step);
      if (!std::all_of(step, step + cols, [](double v) { return std::isfinite(v); })) {
        mu *= 4.0;
        continue;
      }
      Params next = p;
      int c = 0;
      next.lambda = std::max(p.lambda + step[c++], p.lambda * 1e-3);
      if (use_sigma) next.sigma = std::max(0.0, p.sigma + step[c++]);
      if (use_kappa) next.kappa = std::max(0.0, p.kappa + step[c++]);
      const double next_cost = chi_square(pts, next);
      if (next_cost < cost) {
        const double gain = cost - next_cost;
        p = next;
        cost = next_cost;
        mu = std::max(mu / 3.0, 1e-12);
        improved = gain > 1e-12 * cost;
        break;
      }
      mu *= 4.0;
    }
    if (!improved) break;
  }
  return p;
}

// A model from fitted parameters, with its fit quality over `pts`.
UslModel make_model(const std::vector<FitPoint>& pts, const Params& p, int parameters) {
  UslModel model;
  model.distinct_workers = static_cast<int>(pts.size());
  model.valid = true;
  model.lambda = p.lambda;
  model.sigma = p.sigma;
  model.kappa = p.kappa;
  model.parameters = parameters;
  double total = 0.0, mean_x = 0.0;
  for (const FitPoint& q : pts) {
    total += q.weight;
    mean_x += q.weight * q.x;
  }
  model.samples = total;
  mean_x /= total;
  double sse = 0.0, sst = 0.0, rel = 0.0;
  for (const FitPoint& q : pts) {
    const double fitted = usl(p, q.n);
    sse += q.weight * (fitted - q.x) * (fitted - q.x);
    sst += q.weight * (q.x - mean_x) * (q.x - mean_x);
    rel += q.weight * (fitted / q.x - 1.0) * (fitted / q.x - 1.0);
  }
  model.rms_relative_error = std::sqrt(rel / total);
  if (sst > 0.0) {
    model.r_squared = 1.0 - sse / sst;
  } else {
    model.r_squared = model.rms_relative_error < 1e-9 ? 1.0 : 0.0;
  }
  return model;
}

struct FitResult {
  UslModel selected;  // the model selection's choice
  UslModel full;      // all three parameters (sigma, kappa >= 0), valid with >= 3 bins
};

FitResult fit_bins(const std::vector<FitPoint>& pts, const UslFitOptions& options) {
  FitResult result;
  result.selected.distinct_workers = result.full.distinct_workers = static_cast<int>(pts.size());
  for (const FitPoint& q : pts) result.selected.samples += q.weight;
  result.full.samples = result.selected.samples;
  if (result.selected.distinct_workers < options.min_distinct_workers || pts.empty()) {
    return result;
  }

  // Candidates: (sigma?, kappa?) in order of complexity; the first of equal scores wins.
  constexpr std::array<std::array<bool, 2>, 4> kMasks = {
      {{false, false}, {true, false}, {false, true}, {true, true}}};
  // The linear fits of the four column subsets, each solved once: the masks share them.
  struct LinearStart {
    bool solved = false, feasible = false;
    Params params;
    double cost = kInf;
  };
  std::array<LinearStart, 4> linear{};
  auto linear_start = [&](bool s, bool k) -> const LinearStart& {
    LinearStart& l = linear[(s ? 1 : 0) | (k ? 2 : 0)];
    if (!l.solved) {
      l.solved = true;
      l.feasible = linear_fit(pts, s, k, &l.params);
      if (l.feasible) l.cost = chi_square(pts, l.params);
    }
    return l;
  };
  double best_score = kInf;
  Params best;
  int best_parameters = 0;
  for (const auto& mask : kMasks) {
    const int free = 1 + (mask[0] ? 1 : 0) + (mask[1] ? 1 : 0);
    if (static_cast<int>(pts.size()) < free) continue;
    // Active sets: the feasible subset solution of lowest cost is the constrained optimum.
    Params start;
    double start_cost = kInf;
    for (int subset = 0; subset < 4; ++subset) {
      const bool s = mask[0] && (subset & 1);
      const bool k = mask[1] && (subset & 2);
      if ((subset & 1) && !mask[0]) continue;
      if ((subset & 2) && !mask[1]) continue;
      const LinearStart& candidate = linear_start(s, k);
      if (!candidate.feasible) continue;
      if (candidate.cost < start_cost) {
        start_cost = candidate.cost;
        start = candidate.params;
      }
    }
    if (!std::isfinite(start_cost)) continue;
    const Params refined = refine(pts, start, mask[0], mask[1]);
    const double cost = chi_square(pts, refined);
    const int used = 1 + (refined.sigma > 0.0 ? 1 : 0) + (refined.kappa > 0.0 ? 1 : 0);
    if (mask[0] && mask[1]) result.full = make_model(pts, refined, used);
    const double score = cost + options.selection_penalty * used;
    if (score < best_score) {
      best_score = score;
      best = refined;
      best_parameters = used;
    }
  }
  if (std::isfinite(best_score)) result.selected = make_model(pts, best, best_parameters);
  return result;
}

// Turns bins (mean N, mean X, weight W, relative variance of one sample times W) into fit
// points: the variance of each bin is shrunk toward the pooled one and floored.
std::vector<FitPoint> to_fit_points(const std::vector<UslPoint>& bins,
                                    const UslFitOptions& options) {
  // Pooled over the bins, with one degree of freedom per bin spent on its mean.
  double pooled_m2 = 0.0, pooled_dof = 0.0;
  for (const UslPoint& b : bins) {
    pooled_m2 += b.relative_sd * b.relative_sd * b.weight;
    pooled_dof += std::max(0.0, b.weight - 1.0);
  }
  const double floor = options.noise_floor * options.noise_floor;
  const double pooled = std::max(floor, pooled_dof > 0.0 ? pooled_m2 / pooled_dof : 0.0);
  std::vector<FitPoint> pts;
  pts.reserve(bins.size());
  for (const UslPoint& b : bins) {
    const double own_m2 = b.relative_sd * b.relative_sd * b.weight;
    const double variance =
        std::max(floor, (own_m2 + kShrinkSamples * pooled) / (b.weight + kShrinkSamples));
    pts.push_back({b.workers, b.throughput, b.weight, b.weight / variance});
  }
  return pts;
}

bool usable(double workers, double throughput, double weight) {
  return std::isfinite(workers) && std::isfinite(throughput) && std::isfinite(weight) &&
         workers > 0.0 && throughput > 0.0 && weight > 0.0 &&
         workers < static_cast<double>(std::numeric_limits<int>::max());
}

}  // namespace

double UslModel::throughput(double workers) const {
  if (!valid || !(workers > 0.0)) return 0.0;
  return usl({lambda, sigma, kappa}, workers);
}

double UslModel::peak_workers() const {
  if (!valid) return 0.0;
  if (sigma >= 1.0) return 1.0;
  if (kappa <= 0.0) return kInf;
  return std::max(1.0, std::sqrt((1.0 - sigma) / kappa));
}

double UslModel::peak_throughput() const {
  if (!valid) return 0.0;
  if (sigma >= 1.0) return lambda;
  if (kappa <= 0.0) return sigma > 0.0 ? lambda / sigma : kInf;
  return throughput(peak_workers());
}

double UslModel::workers_for(double x) const {
  if (!valid) return kInf;
  if (!(x > 0.0)) return 0.0;
  if (!std::isfinite(x)) return kInf;
  if (x <= lambda) return x / lambda;  // below one worker: scale linearly
  if (sigma >= 1.0) return kInf;       // X(N) <= lambda for every N
  // X(n) >= x  <=>  f(n) = kappa x n^2 + (sigma x - kappa x - lambda) n + x (1 - sigma) <= 0.
  const double a = kappa * x;
  const double b = sigma * x - kappa * x - lambda;
  const double c = x * (1.0 - sigma);
  if (a <= 0.0) return b < 0.0 ? c / -b : kInf;
  const double disc = b * b - 4.0 * a * c;
  if (disc < 0.0 || b >= 0.0) return kInf;
  const double q = (-b + std::sqrt(disc)) / 2.0;  // > 0: the stable form of the roots
  return std::max(1.0, c / q);                    // the smaller root
}

nlohmann::json UslModel::to_json() const {
  return {{"valid", valid},
          {"lambda", lambda},
          {"sigma", sigma},
          {"kappa", kappa},
          {"parameters", parameters},
          {"distinct_workers", distinct_workers},
          {"samples", samples},
          {"r_squared", r_squared},
          {"rms_relative_error", rms_relative_error},
          {"peak_workers", finite_or_null(peak_workers())},
          {"peak_throughput", finite_or_null(peak_throughput())}};
}

UslFit::UslFit(UslFitOptions options) : options_(options) {
  check_options(options_);
}

bool UslFit::add(const UslSample& s) {
  if (!usable(s.workers, s.throughput, s.weight)) return false;
  const long key = std::max(1L, std::lround(s.workers));
  if (bins_.find(key) == bins_.end() && bins_.size() >= options_.max_bins) {
    auto lightest = bins_.begin();
    for (auto it = bins_.begin(); it != bins_.end(); ++it) {
      if (it->second.weight < lightest->second.weight) lightest = it;
    }
    bins_.erase(lightest);
  }
  Bin& b = bins_[key];
  if (options_.forgetting < 1.0) {
    // A sample of weight w ages the bin by w samples.
    const double decay =
        s.weight == 1.0 ? options_.forgetting : std::pow(options_.forgetting, s.weight);
    b.weight *= decay;
    b.m2 *= decay;
  }
  // West's weighted incremental mean and variance.
  const double total = b.weight + s.weight;
  const double delta = s.throughput - b.mean_throughput;
  b.mean_throughput += delta * s.weight / total;
  b.m2 += s.weight * delta * (s.throughput - b.mean_throughput);
  b.mean_workers += (s.workers - b.mean_workers) * s.weight / total;
  b.weight = total;
  dirty_ = true;
  return true;
}

double UslFit::bin_weight(double workers) const {
  if (!usable(workers, 1.0, 1.0)) return 0.0;
  const auto it = bins_.find(std::max(1L, std::lround(workers)));
  return it == bins_.end() ? 0.0 : it->second.weight;
}

void UslFit::clear() {
  bins_.clear();
  model_ = full_model_ = UslModel{};
  dirty_ = false;
}

std::vector<UslPoint> UslFit::points() const {
  std::vector<UslPoint> out;
  out.reserve(bins_.size());
  for (const auto& [key, b] : bins_) {
    const double variance = b.weight > 0.0 ? std::max(0.0, b.m2 / b.weight) : 0.0;
    out.push_back(
        {b.mean_workers, b.mean_throughput, b.weight, std::sqrt(variance) / b.mean_throughput});
  }
  return out;
}

const UslModel& UslFit::model() {
  refit();
  return model_;
}

const UslModel& UslFit::full_model() {
  refit();
  return full_model_;
}

void UslFit::refit() {
  if (!dirty_) return;
  FitResult result = fit_bins(to_fit_points(points(), options_), options_);
  model_ = result.selected;
  full_model_ = result.full;
  dirty_ = false;
}

UslModel UslFit::fit(const std::vector<UslSample>& samples, const UslFitOptions& options) {
  check_options(options);
  UslFitOptions batch = options;
  batch.forgetting = 1.0;
  batch.max_bins = std::numeric_limits<std::size_t>::max();
  UslFit fit(batch);
  for (const UslSample& s : samples) fit.add(s);
  return fit.model();
}

UslModel UslFit::fit_points(const std::vector<UslPoint>& points, const UslFitOptions& options) {
  check_options(options);
  std::vector<UslPoint> usable_points;
  for (const UslPoint& p : points) {
    if (usable(p.workers, p.throughput, p.weight) && std::isfinite(p.relative_sd) &&
        p.relative_sd >= 0.0) {
      usable_points.push_back(p);
    }
  }
  std::sort(usable_points.begin(), usable_points.end(),
            [](const UslPoint& a, const UslPoint& b) { return a.workers < b.workers; });
  return fit_bins(to_fit_points(usable_points, options), options).selected;
}

}  // namespace lagpilot
