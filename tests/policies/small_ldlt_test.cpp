#include "policies/small_ldlt.h"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cstring>
#include <limits>
#include <random>
#include <string>

namespace lagpilot {
namespace {

// Solves with both and requires the same bits in every component (NaN payloads included).
void expect_same_as_eigen(const Eigen::MatrixXd& a, const Eigen::VectorXd& b,
                          const std::string& what) {
  const int n = static_cast<int>(a.rows());
  double m[SmallLdlt::kMaxOrder][SmallLdlt::kMaxOrder] = {};
  double rhs[SmallLdlt::kMaxOrder] = {};
  for (int i = 0; i < n; ++i) {
    rhs[i] = b(i);
    for (int j = 0; j < n; ++j) m[i][j] = a(i, j);
  }
  SmallLdlt small;
  small.compute(m, n);
  double x[SmallLdlt::kMaxOrder] = {};
  small.solve(rhs, x);
  const Eigen::VectorXd expected = a.ldlt().solve(b);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(std::memcmp(&x[i], &expected(i), sizeof(double)), 0)
        << what << ": component " << i << " is " << x[i] << ", Eigen's " << expected(i);
  }
}

// J^T J + mu diag(J^T J) for a random J, as the USL fit's Levenberg-Marquardt step builds it,
// with its columns spread over orders of magnitude as N, N-1 and N(N-1) are.
Eigen::MatrixXd damped_normal_matrix(std::mt19937_64& rng, int n) {
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-6, 6);
  std::uniform_int_distribution<int> rows(n, 16);
  Eigen::MatrixXd jac(rows(rng), n);
  for (int c = 0; c < n; ++c) {
    const double scale = std::pow(10.0, exponent(rng));
    for (int r = 0; r < jac.rows(); ++r) jac(r, c) = unit(rng) * scale;
  }
  Eigen::MatrixXd a = jac.transpose() * jac;
  const double mu = std::pow(10.0, exponent(rng) * 2);
  for (int c = 0; c < n; ++c) a(c, c) += mu * a(c, c);
  return a;
}

TEST(SmallLdlt, SolvesRandomDampedSystemsToTheBitAsEigen) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int trial = 0; trial < 6000; ++trial) {
    const int n = 1 + trial % 3;
    const Eigen::MatrixXd a = damped_normal_matrix(rng, n);
    Eigen::VectorXd b(n);
    for (int i = 0; i < n; ++i) b(i) = unit(rng) * std::pow(10.0, (trial % 7) - 3);
    expect_same_as_eigen(a, b, "trial " + std::to_string(trial));
    if (HasFailure()) return;
  }
}

TEST(SmallLdlt, AgreesWithEigenOnIndefiniteAndPivotingSystems) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> unit(-10.0, 10.0);
  for (int trial = 0; trial < 6000; ++trial) {
    const int n = 1 + trial % 3;
    Eigen::MatrixXd a(n, n);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j <= i; ++j) a(i, j) = a(j, i) = unit(rng);
    }
    Eigen::VectorXd b(n);
    for (int i = 0; i < n; ++i) b(i) = unit(rng);
    expect_same_as_eigen(a, b, "trial " + std::to_string(trial));
    if (HasFailure()) return;
  }
}

TEST(SmallLdlt, BreaksPivotTiesAsEigenDoes) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int trial = 0; trial < 6000; ++trial) {
    const int n = 2 + trial % 2;
    const double diagonal = 1.0 + std::abs(unit(rng));  // equal magnitudes on the diagonal
    Eigen::MatrixXd a(n, n);
    for (int i = 0; i < n; ++i) {
      a(i, i) = (trial & 4) && i == 1 ? -diagonal : diagonal;
      for (int j = 0; j < i; ++j) a(i, j) = a(j, i) = unit(rng);
    }
    Eigen::VectorXd b(n);
    for (int i = 0; i < n; ++i) b(i) = unit(rng);
    expect_same_as_eigen(a, b, "trial " + std::to_string(trial));
    if (HasFailure()) return;
  }
}

TEST(SmallLdlt, AgreesWithEigenOnDegenerateSystems) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double tiny = std::numeric_limits<double>::denorm_min();
  Eigen::MatrixXd zero = Eigen::MatrixXd::Zero(3, 3);
  zero(1, 0) = zero(0, 1) = 2.0;  // a zero diagonal stops the factorization at once
  Eigen::MatrixXd singular(3, 3);
  singular << 1, 2, 3, 2, 4, 6, 3, 6, 9;
  Eigen::MatrixXd zero_pivot_later(3, 3);
  zero_pivot_later << 4, 2, 0, 2, 1, 0, 0, 0, 1;
  Eigen::MatrixXd denormal(2, 2);
  denormal << tiny, 0, 0, 1;
  Eigen::MatrixXd with_inf(2, 2);
  with_inf << inf, 1, 1, 2;
  Eigen::MatrixXd with_nan(3, 3);
  with_nan << 1, nan, 0, nan, 2, 0, 0, 0, 3;
  Eigen::MatrixXd one(1, 1);
  one << -0.0;
  const Eigen::MatrixXd cases[] = {zero,     singular, zero_pivot_later, denormal, with_inf,
                                   with_nan, one};
  int index = 0;
  for (const Eigen::MatrixXd& a : cases) {
    const int n = static_cast<int>(a.rows());
    Eigen::VectorXd ones = Eigen::VectorXd::Ones(n);
    Eigen::VectorXd mixed(n);
    for (int i = 0; i < n; ++i) mixed(i) = i % 2 ? -0.0 : 1.5;
    expect_same_as_eigen(a, ones, "degenerate case " + std::to_string(index) + ", ones");
    expect_same_as_eigen(a, mixed, "degenerate case " + std::to_string(index) + ", mixed");
    ++index;
  }
  // A zero leaves the later components untouched in the forward solve, so that -0 stays -0
  // (subtracting 0 x a negative entry would make it +0).
  Eigen::MatrixXd negative_coupling(2, 2);
  negative_coupling << 2, -1, -1, 2;
  Eigen::VectorXd signed_zeros(2);
  signed_zeros << 0.0, -0.0;
  expect_same_as_eigen(negative_coupling, signed_zeros, "signed zeros");
}

}  // namespace
}  // namespace lagpilot
