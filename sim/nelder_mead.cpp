#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "policies/infinity.h"
#include "sim/tuner.h"

namespace lagpilot::sim {
// ---------------------------------------------------------------------------------------------
// NelderMead

NelderMead::NelderMead(std::vector<double> start, double initial_step, double tolerance)
    : dims_(start.size()), tolerance_(tolerance) {
  if (dims_ == 0) throw std::invalid_argument("NelderMead: no dimensions");
  for (double& x : start) x = std::clamp(std::isfinite(x) ? x : 0.5, 0.0, 1.0);
  simplex_.push_back(start);
  for (std::size_t i = 0; i < dims_; ++i) {
    std::vector<double> v = start;
    v[i] = start[i] + initial_step <= 1.0 ? start[i] + initial_step : start[i] - initial_step;
    v[i] = std::clamp(v[i], 0.0, 1.0);
    simplex_.push_back(v);
  }
  values_.assign(simplex_.size(), kInf);
  pending_ = simplex_;
  stage_ = Stage::kInit;
}

const std::vector<double>& NelderMead::best_point() const {
  return simplex_[0];
}

double NelderMead::best_value() const {
  return values_[0];
}

std::vector<double> NelderMead::toward(const std::vector<double>& from,
                                       const std::vector<double>& to, double factor) const {
  std::vector<double> x(dims_);
  for (std::size_t j = 0; j < dims_; ++j) {
    x[j] = std::clamp(from[j] + factor * (to[j] - from[j]), 0.0, 1.0);
  }
  return x;
}

void NelderMead::sort_simplex() {
  std::vector<std::size_t> idx(simplex_.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](std::size_t a, std::size_t b) { return values_[a] < values_[b]; });
  std::vector<std::vector<double>> simplex;
  std::vector<double> values;
  for (std::size_t i : idx) {
    simplex.push_back(std::move(simplex_[i]));
    values.push_back(values_[i]);
  }
  simplex_ = std::move(simplex);
  values_ = std::move(values);
}

void NelderMead::next_iteration() {
  ++iterations_;
  double spread = 0.0;
  for (std::size_t i = 1; i < simplex_.size(); ++i) {
    for (std::size_t j = 0; j < dims_; ++j) {
      spread = std::max(spread, std::fabs(simplex_[i][j] - simplex_[0][j]));
    }
  }
  if (spread <= tolerance_) {
    pending_.clear();
    return;
  }
  centroid_.assign(dims_, 0.0);
  for (std::size_t i = 0; i < dims_; ++i) {  // all but the worst (index dims_)
    for (std::size_t j = 0; j < dims_; ++j) centroid_[j] += simplex_[i][j];
  }
  for (double& c : centroid_) c /= static_cast<double>(dims_);
  pending_ = {toward(centroid_, simplex_[dims_], -1.0)};  // c - (worst - c)
  stage_ = Stage::kReflect;
}

void NelderMead::tell(const std::vector<double>& told) {
  if (told.size() != pending_.size()) {
    throw std::invalid_argument("NelderMead::tell: " + std::to_string(told.size()) +
                                " values for " + std::to_string(pending_.size()) + " points");
  }
  std::vector<double> values = told;
  for (double& v : values) {
    if (std::isnan(v)) v = kInf;
  }
  const std::size_t worst = dims_;
  auto replace_worst = [&](std::vector<double> x, double f) {
    simplex_[worst] = std::move(x);
    values_[worst] = f;
    sort_simplex();
    next_iteration();
  };
  auto shrink = [&] {
    for (std::size_t i = 1; i < simplex_.size(); ++i) {
      simplex_[i] = toward(simplex_[0], simplex_[i], 0.5);
    }
    pending_.assign(simplex_.begin() + 1, simplex_.end());
    stage_ = Stage::kShrink;
  };
  switch (stage_) {
    case Stage::kInit:
      values_ = values;
      sort_simplex();
      next_iteration();
      break;
    case Stage::kReflect: {
      const double fr = values[0];
      reflected_ = pending_[0];
      reflected_value_ = fr;
      if (fr < values_[0]) {
        pending_ = {toward(centroid_, reflected_, 2.0)};
        stage_ = Stage::kExpand;
      } else if (fr < values_[worst - 1]) {
        replace_worst(reflected_, fr);
      } else if (fr < values_[worst]) {
        pending_ = {toward(centroid_, reflected_, 0.5)};
        stage_ = Stage::kContractOutside;
      } else {
        pending_ = {toward(centroid_, simplex_[worst], 0.5)};
        stage_ = Stage::kContractInside;
      }
      break;
    }
    case Stage::kExpand:
      if (values[0] < reflected_value_) {
        replace_worst(pending_[0], values[0]);
      } else {
        replace_worst(reflected_, reflected_value_);
      }
      break;
    case Stage::kContractOutside:
      if (values[0] <= reflected_value_) {
        replace_worst(pending_[0], values[0]);
      } else {
        shrink();
      }
      break;
    case Stage::kContractInside:
      if (values[0] < values_[worst]) {
        replace_worst(pending_[0], values[0]);
      } else {
        shrink();
      }
      break;
    case Stage::kShrink:
      for (std::size_t i = 1; i < simplex_.size(); ++i) values_[i] = values[i - 1];
      sort_simplex();
      next_iteration();
      break;
  }
}

}  // namespace lagpilot::sim
