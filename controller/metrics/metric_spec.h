#pragma once
// One metric's declaration (name and help text) and the family it registers, shared by the
// metric tables of this folder (metrics.cpp, delivery_metrics.cpp).
//
// Thread-safety: registration as prometheus-cpp's (the registry is internally locked).

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace lagpilot {

struct MetricSpec {
  const char* name;
  const char* help;
};

inline prometheus::Family<prometheus::Gauge>& gauge_family(prometheus::Registry& r,
                                                           const MetricSpec& spec) {
  return prometheus::BuildGauge().Name(spec.name).Help(spec.help).Register(r);
}

inline prometheus::Family<prometheus::Counter>& counter_family(prometheus::Registry& r,
                                                               const MetricSpec& spec) {
  return prometheus::BuildCounter().Name(spec.name).Help(spec.help).Register(r);
}

}  // namespace lagpilot
