#pragma once
// Fitting the Universal Scalability Law to measured throughput.
//
// The USL says how the throughput of N workers grows with N:
//
//   X(N) = lambda N / (1 + sigma (N - 1) + kappa N (N - 1))
//
// lambda is the throughput of one worker (messages/s), sigma the contention (the serial share:
// a lock, a shared connection), kappa the coherency cost (workers talking to each other, cache
// lines bouncing). With kappa > 0 throughput peaks at N* = sqrt((1 - sigma) / kappa) and falls
// beyond it: more workers then make things worse.
//
// UslFit learns the curve online from samples (workers N, throughput X) and refits on demand;
// UslFit::fit() is the batch entry point (`lagpilot calibrate`). Thread-safety: UslModel is a
// plain value; a UslFit is not thread-safe (one owner, or a lock around every call). The static
// UslFit::fit() is a pure function and may be called from any thread.

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

namespace lagpilot {

// One measurement: `workers` working concurrently sustained `throughput` messages/s.
struct UslSample {
  double workers = 0.0;     // N: the mean number of busy workers, > 0 (need not be whole)
  double throughput = 0.0;  // X: messages/s, > 0
  double weight = 1.0;      // how many samples this one counts as, > 0
};

// A fitted curve and how well it fits. Plain value.
struct UslModel {
  bool valid = false;   // false: no fit (too few usable distinct worker counts)
  double lambda = 0.0;  // messages/s of one worker
  double sigma = 0.0;   // contention, >= 0
  double kappa = 0.0;   // coherency, >= 0
  // Which parameters the data supported: 1 (lambda only, linear scaling), 2 (lambda and sigma,
  // or lambda and kappa) or 3. The others are 0 (see UslFit's class comment).
  int parameters = 0;
  int distinct_workers = 0;         // distinct worker counts (bins) the fit saw
  double samples = 0.0;             // total weight of those bins (after forgetting)
  double r_squared = 0.0;           // of X, weighted by the bins' weights; 1 = perfect
  double rms_relative_error = 0.0;  // sqrt(weighted mean of ((X_fit - X) / X)^2)

  // X(n) for n > 0; 0 when invalid.
  double throughput(double workers) const;
  // N* = sqrt((1 - sigma) / kappa): +infinity when kappa == 0 and sigma < 1 (throughput keeps
  // rising); 1 when sigma >= 1 (a second worker never helps). 0 when invalid.
  double peak_workers() const;
  // X(N*) (the limit lambda / sigma when kappa == 0; +infinity when sigma == kappa == 0).
  double peak_throughput() const;
  // The smallest real n >= 0 with X(n) >= throughput, on the rising side of the curve;
  // +infinity when the curve never gets there (throughput above the peak) or when invalid.
  double workers_for(double throughput) const;
  // {"valid", "lambda", "sigma", "kappa", "parameters", "distinct_workers", "samples",
  //  "r_squared", "rms_relative_error", "peak_workers", "peak_throughput"}; infinities as null.
  nlohmann::json to_json() const;
};

struct UslFitOptions {
  // Each add() of a sample of weight w first multiplies the weight of what its worker count's
  // bin already holds by f^w (0 < f <= 1): with unit weights, the sample k adds before counts
  // f^k. 1 = never forget; 0.995 remembers about the last 200 samples at each count. Forgetting is
  // per count (directional): samples that all come at one count (a pool held at its cap) refresh
  // that count and leave what was learned at the others alone, so the shape of the curve is not
  // forgotten.
  double forgetting = 1.0;
  // model() is valid only with at least this many distinct worker counts (>= 1).
  int min_distinct_workers = 3;
  // Relative standard deviation of one sample assumed before the data say otherwise, and
  // the least ever assumed (so that a few identical samples do not claim infinite precision),
  // > 0. A throughput measured over one second at 1000 messages/s has about 3 %.
  double noise_floor = 0.03;
  // Model selection: a parameter (sigma, kappa) is kept only if it lowers the chi-square of
  // the fit by more than this (4: about a two-standard-deviation improvement), >= 0.
  double selection_penalty = 4.0;
  // At most this many bins are kept; beyond it the lightest is dropped (>= 1).
  std::size_t max_bins = 256;
};

// One bin: the weighted means of the samples whose worker count rounds to the same whole
// number. Plain value.
struct UslPoint {
  double workers = 0.0;      // weighted mean N of the bin's samples
  double throughput = 0.0;   // weighted mean X
  double weight = 0.0;       // sum of the (decayed) sample weights
  double relative_sd = 0.0;  // standard deviation of one sample's X over the mean X
};

// Algorithm. Samples are aggregated per distinct worker count (lround(N)) into running
// weighted means of N and X and a running variance of X (West's weighted update), so memory is
// bounded by the number of distinct counts; forgetting discounts a bin's older samples at each
// new one, so the fit follows drift at the counts being measured. A fit runs on the bins:
//
//   1. Linear start. N / X = 1/lambda + (sigma/lambda)(N - 1) + (kappa/lambda) N (N - 1) is
//      linear in (1/lambda, sigma/lambda, kappa/lambda). Weighted least squares (Eigen, QR)
//      with weights w / (N/X)^2, so that the residuals are relative errors of X, as they should
//      be (a 5 % miss at 1000/s and at 100/s matter alike). Constraints sigma, kappa >= 0 by
//      active sets: every subset of {sigma, kappa} is solved with the others held at 0, and the
//      feasible solution of lowest cost is the constrained optimum (exact for this small
//      problem).
//   2. Gauss-Newton refinement (Levenberg-Marquardt damped) on the original form, minimizing
//      sum w_i ((X(N_i) - X_i) / X_i)^2 with sigma, kappa projected onto >= 0; kept only if it
//      lowers the cost.
//   3. Model selection. Bin i's weight is w_i = W_i / s_i^2 (sample count over the relative
//      variance of one sample, estimated from the bin, shrunk toward the pooled estimate (or
//      toward noise_floor while there is none) and floored at noise_floor), so the cost is a
//      chi-square. Candidates: lambda only, lambda and sigma, lambda and kappa, all three; the one
//      with the lowest chi-square + selection_penalty x (parameters) wins. Three bins determine all
//      three parameters exactly, noise included; this keeps kappa at 0 (N* infinite) until the data
//      show a real curvature, rather than read a peak into noise.
class UslFit {
 public:
  // Throws std::invalid_argument for options out of range.
  explicit UslFit(UslFitOptions options = {});

  // Adds a sample; returns false (and changes nothing) when it is unusable: a non-finite value,
  // workers <= 0, throughput <= 0 or weight <= 0.
  bool add(const UslSample& sample);
  void clear();

  // The fit of the current bins (the model selection's choice, see the class comment),
  // refitted when samples were added since the last call.
  const UslModel& model();
  // The fit with all three parameters, whatever the selection says (sigma, kappa >= 0 still);
  // valid with at least three distinct counts. The conservative view of the peak: noise can
  // put a peak in it that is not there, so it is a bound to test, not a model to trust.
  const UslModel& full_model();
  // The bins, in increasing worker count.
  std::vector<UslPoint> points() const;
  int distinct_workers() const { return static_cast<int>(bins_.size()); }
  // The weight held for the count `workers` rounds to (0 when none, or for unusable input).
  double bin_weight(double workers) const;
  const UslFitOptions& options() const { return options_; }

  // Batch fit (no forgetting): aggregates the samples as add() does, then fits. Unusable
  // samples are skipped. Throws std::invalid_argument for options out of range.
  static UslModel fit(const std::vector<UslSample>& samples, const UslFitOptions& options = {});
  // Fits bins directly (points with workers <= 0, throughput <= 0 or weight <= 0 are skipped).
  static UslModel fit_points(const std::vector<UslPoint>& points,
                             const UslFitOptions& options = {});

 private:
  struct Bin {
    double weight = 0.0;
    double mean_workers = 0.0;
    double mean_throughput = 0.0;
    double m2 = 0.0;  // weighted sum of squared deviations of X from the mean
  };

  UslFitOptions options_;
  std::map<long, Bin> bins_;  // by lround(workers)
  void refit();

  UslModel model_;
  UslModel full_model_;
  bool dirty_ = false;
};

}  // namespace lagpilot
