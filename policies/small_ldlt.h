#pragma once
// Solves A x = b for a symmetric A of order 1 to 3 with the pivoted LDL^T factorization that
// Eigen::LDLT<Eigen::MatrixXd> (Lower) uses, in the same floating-point operations, so the
// answer is the same to the bit.
//
// Why it exists: the USL fit's Levenberg-Marquardt loop solves one damped 1x1 to 3x3 system per
// damping it tries, hundreds per fit, and the general LDLT spent most of that time on its size
// bookkeeping. Bit-for-bit agreement holds because every sum below has at most two terms
// (addition of two terms is exact in any order) and every other step is the same sequence of
// single operations as Eigen's unblocked factorization and triangular solves:
//   factor: for each column k, swap the largest remaining diagonal to k (the first of equal
//           magnitudes), then d_k -= sum_j l_kj^2 d_j, l_ik = (a_ik - sum_j l_ij l_kj d_j) / d_k
//           (skipped when d_k is zero; a diagonal all zero at k = 0 stops the factorization);
//   solve:  x = P^T L^-T D^+ L^-1 P b, where D^+ zeroes a |d_i| not above DBL_MIN.
// tests/policies/small_ldlt_test.cpp compares both on random and degenerate systems.
//
// Thread-safety: a value type; no shared state.

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace lagpilot {

class SmallLdlt {
 public:
  static constexpr int kMaxOrder = 3;

  // Factors the lower triangle of the n x n matrix `a` (row i, column j at a[i][j]; the strict
  // upper triangle is not read). 1 <= n <= kMaxOrder.
  void compute(const double (&a)[kMaxOrder][kMaxOrder], int n) {
    n_ = n;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) m_[i][j] = a[i][j];
      t_[i] = i;
    }
    if (n <= 1) return;
    for (int k = 0; k < n; ++k) {
      int p = k;
      double biggest = std::abs(m_[k][k]);
      for (int i = k + 1; i < n; ++i) {
        if (std::abs(m_[i][i]) > biggest) {
          biggest = std::abs(m_[i][i]);
          p = i;
        }
      }
      t_[k] = p;
      if (p != k) {
        for (int j = 0; j < k; ++j) std::swap(m_[k][j], m_[p][j]);
        for (int i = p + 1; i < n; ++i) std::swap(m_[i][k], m_[i][p]);
        std::swap(m_[k][k], m_[p][p]);
        for (int i = k + 1; i < p; ++i) std::swap(m_[i][k], m_[p][i]);
      }
      if (k > 0) {
        double temp[kMaxOrder];
        for (int j = 0; j < k; ++j) temp[j] = m_[j][j] * m_[k][j];
        m_[k][k] -= dot(m_[k], temp, k);
        for (int i = k + 1; i < n; ++i) m_[i][k] -= dot(m_[i], temp, k);
      }
      const double akk = m_[k][k];
      const bool pivot_is_valid = std::abs(akk) > 0.0;
      if (k == 0 && !pivot_is_valid) {
        for (int j = 0; j < n; ++j) t_[j] = j;
        return;
      }
      if (pivot_is_valid) {
        for (int i = k + 1; i < n; ++i) m_[i][k] /= akk;
      }
    }
  }

  // x = A^-1 b for the factored A (b and x may be the same array).
  void solve(const double* b, double* x) const {
    const int n = n_;
    double y[kMaxOrder];
    for (int i = 0; i < n; ++i) y[i] = b[i];
    for (int k = 0; k < n; ++k) {
      if (t_[k] != k) std::swap(y[k], y[t_[k]]);
    }
    for (int i = 0; i < n; ++i) {
      if (y[i] == 0.0) continue;  // as Eigen: a zero leaves the rest as it is (signs of zero)
      for (int s = i + 1; s < n; ++s) y[s] -= y[i] * m_[s][i];
    }
    for (int i = 0; i < n; ++i) {
      if (std::abs(m_[i][i]) > std::numeric_limits<double>::min()) {
        y[i] /= m_[i][i];
      } else {
        y[i] = 0.0;
      }
    }
    for (int i = n - 1; i >= 0; --i) {
      double sum = 0.0;
      bool any = false;
      for (int j = i + 1; j < n; ++j) {
        const double term = m_[j][i] * y[j];
        sum = any ? sum + term : term;
        any = true;
      }
      if (any) y[i] -= sum;
    }
    for (int k = n - 1; k >= 0; --k) {
      if (t_[k] != k) std::swap(y[k], y[t_[k]]);
    }
    for (int i = 0; i < n; ++i) x[i] = y[i];
  }

 private:
  // sum_j row[j] * temp[j] over j < k, k <= 2 (see above: two terms are exact in any order).
  static double dot(const double* row, const double* temp, int k) {
    double sum = row[0] * temp[0];
    for (int j = 1; j < k; ++j) sum += row[j] * temp[j];
    return sum;
  }

  int n_ = 0;
  double m_[kMaxOrder][kMaxOrder] = {};
  int t_[kMaxOrder] = {0, 1, 2};
};

}  // namespace lagpilot
