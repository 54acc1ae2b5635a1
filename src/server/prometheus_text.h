// Prometheus text exposition (format 0.0.4) of the serving metrics. Written here rather than with
// prometheus-cpp: its Debian package is a compiled library (plus civetweb for pull) that the GPU
// machine, which has no apt, would have to carry, for what is ~80 lines of text formatting.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/serving_metrics.h"

namespace grt {

struct HttpCounters {
  uint64_t ok = 0, client_errors = 0, server_errors = 0;
};

std::string prometheus_text(const ServingSnapshot& s, const HttpCounters& http);

}  // namespace grt
