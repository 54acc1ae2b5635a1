#include "runtime/serving_metrics.h"

#include <algorithm>

namespace grt {

Histogram::Histogram(std::vector<double> upper_bounds) : bounds(std::move(upper_bounds)), counts(bounds.size() + 1) {}

void Histogram::observe(double v) {
  const size_t i = static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
  ++counts[i];
  sum += v;
  ++count;
}

namespace {
// Seconds: 1 ms .. 60 s for request latencies; 10 us .. 1 s for host time per step.
std::vector<double> latency_bounds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 60};
}
std::vector<double> host_bounds() {
  return {1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1, 1};
}
// Rows of a decode step: the decode graph sizes' landmarks up to 1024 requests.
std::vector<double> row_bounds() { return {1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 320, 384, 448, 512, 768, 1024}; }
// Tokens of an extend step: up to --chunked-prefill-size's usual 8192 and beyond.
std::vector<double> token_bounds() { return {16, 64, 256, 512, 1024, 2048, 4096, 8192, 16384}; }
}  // namespace

ServingSnapshot::ServingSnapshot()
    : ttft(latency_bounds()),
      itl(latency_bounds()),
      e2e(latency_bounds()),
      step_host(host_bounds()),
      step_host_overlapped(host_bounds()),
      decode_rows(row_bounds()),
      extend_tokens(token_bounds()) {}

}  // namespace grt
