#pragma once
// Seeded random numbers for the simulator: a small, fast generator and the few distributions the
// consumer model needs, written out here (not <random>'s distributions) so that a seed gives the
// same run with every standard library.
//
// Rng is xoshiro256** (Blackman & Vigna), seeded through splitmix64 so that nearby seeds give
// unrelated streams. stream(seed, k) derives independent streams from one user seed: the
// simulator draws arrival counts, arrival positions and service times from different streams so
// that every policy sees the same arrivals whatever it does with its workers.
//
// Thread-safety: an Rng is a plain value; use one per thread.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace lagpilot::sim {

class Rng {
 public:
  explicit Rng(uint64_t seed = 1) { reseed(seed); }

  // The k-th independent stream of `seed`.
  static Rng stream(uint64_t seed, uint64_t k) {
    uint64_t s = seed ^ (0x9E3779B97F4A7C15ull * (k + 1));
    return Rng(splitmix64(s) ^ k);
  }

  void reseed(uint64_t seed) {
    uint64_t s = seed;
    for (auto& word : state_) word = splitmix64(s);
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1), 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1]: safe to take the log of.
  double uniform_pos() { return static_cast<double>((next_u64() >> 11) + 1) * 0x1.0p-53; }

  // Exponential with mean 1.
  double exponential() { return -std::log(uniform_pos()); }

  // Standard normal (Marsaglia's polar method; the second value of each pair is kept).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u, v, s;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double f = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * f;
    has_spare_ = true;
    return u * f;
  }

  // Marsaglia & Tsang's constants for one shape >= 1, which a caller that draws many variates
  // of a few shapes can keep (a square root and a division a draw).
  struct GammaShape {
    GammaShape() = default;
    explicit GammaShape(double shape) : d(shape - 1.0 / 3.0), c(1.0 / std::sqrt(9.0 * d)) {}
    double d = 0.0;
    double c = 0.0;
  };

  // Gamma(shape, 1) (Marsaglia & Tsang; shape < 1 through Gamma(shape + 1) * U^(1/shape)).
  double gamma(double shape) {
    if (shape < 1.0) {
      const double g = gamma(shape + 1.0);
      return g * std::pow(uniform_pos(), 1.0 / shape);
    }
    return gamma(GammaShape(shape));
  }
  // The same for a shape >= 1 whose constants are given: the same draws, the same bits.
  double gamma(const GammaShape& shape) {
    const double d = shape.d;
    const double c = shape.c;
    for (;;) {
      double x, v;
      do {
        x = normal();
        v = 1.0 + c * x;
      } while (v <= 0.0);
      v = v * v * v;
      const double u = uniform_pos();
      const double x2 = x * x;
      if (u < 1.0 - 0.0331 * x2 * x2) return d * v;
      if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return d * v;
    }
  }

  // Poisson(mean): multiplication method below 10, Hörmann's PTRS (transformed rejection with
  // squeeze, as in NumPy) above.
  int64_t poisson(double mean) {
    if (!(mean > 0.0)) return 0;
    if (mean < 10.0) {
      if (mean != small_mean_) {  // a trace bin keeps its rate: exp once per bin
        small_mean_ = mean;
        small_limit_ = std::exp(-mean);
      }
      const double limit = small_limit_;
      double product = uniform_pos();
      int64_t k = 0;
      while (product > limit) {
        product *= uniform_pos();
        ++k;
      }
      return k;
    }
    if (mean != ptrs_.mean) ptrs_ = PtrsConstants(mean);  // a trace bin keeps its rate
    const double loglam = ptrs_.loglam;
    const double b = ptrs_.b;
    const double a = ptrs_.a;
    const double log_invalpha = ptrs_.log_invalpha;
    const double vr = ptrs_.vr;
    for (;;) {
      const double u = uniform() - 0.5;
      const double v = uniform_pos();
      const double us = 0.5 - std::fabs(u);
      const double k = std::floor((2.0 * a / us + b) * u + mean + 0.43);
      if (us >= 0.07 && v <= vr) return static_cast<int64_t>(k);
      if (k < 0.0 || (us < 0.013 && v > us)) continue;
      if (std::log(v) + log_invalpha - std::log(a / (us * us) + b) <=
          -mean + k * loglam - log_factorial(k)) {
        return static_cast<int64_t>(k);
      }
    }
  }

 private:
  // PTRS's constants for one mean.
  struct PtrsConstants {
    PtrsConstants() = default;
    explicit PtrsConstants(double m)
        : mean(m),
          loglam(std::log(m)),
          b(0.931 + 2.53 * std::sqrt(m)),
          a(-0.059 + 0.02483 * b),
          log_invalpha(std::log(1.1239 + 1.1328 / (b - 3.4))),
          vr(0.9277 - 3.6224 / (b - 2.0)) {}
    double mean = -1.0;
    double loglam = 0.0, b = 0.0, a = 0.0, log_invalpha = 0.0, vr = 0.0;
  };

  // log(k!) for integral k >= 0: a table below 10, Stirling's series above (error < 1e-12).
  // (std::lgamma writes the global `signgam` in glibc, a data race when runs go in parallel.)
  // The series' values below kStirlingTable are computed once, by the same out-of-line function
  // (so the same bits): PTRS's slow test, which small means (10 to a few dozen: NYC taxi at 1 s
  // ticks) reach in about half their draws, needs one, and its log was a third of that test.
  static double log_factorial(double k) {
    static constexpr double kTable[10] = {0.0,
                                          0.0,
                                          0.69314718055994531,
                                          1.79175946922805500,
                                          3.17805383034794562,
                                          4.78749174278204599,
                                          6.57925121201010100,
                                          8.52516136106541430,
                                          10.60460290274525023,
                                          12.80182748008146961};
    if (k < 10.0) return kTable[static_cast<int>(k)];
    if (k < kStirlingTable) return stirling_table()[static_cast<std::size_t>(k)];
    return stirling(k);
  }
  static constexpr int kStirlingTable = 1024;
  [[gnu::noinline]] static double stirling(double k) {
    const double n = k + 1.0;
    const double inv = 1.0 / n;
    const double inv2 = inv * inv;
    return (n - 0.5) * std::log(n) - n + 0.91893853320467274 +
           inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0 - inv2 / 1680.0)));
  }
  static const std::array<double, kStirlingTable>& stirling_table() {
    static const std::array<double, kStirlingTable> table = [] {
      std::array<double, kStirlingTable> t{};
      for (int k = 10; k < kStirlingTable; ++k) t[k] = stirling(static_cast<double>(k));
      return t;
    }();
    return table;
  }

  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix64(uint64_t& s) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  uint64_t state_[4];
  double spare_ = 0.0;
  bool has_spare_ = false;
  PtrsConstants ptrs_;
  double small_mean_ = -1.0;  // the multiplication method's last mean and its exp(-mean)
  double small_limit_ = 0.0;
};

}  // namespace lagpilot::sim
