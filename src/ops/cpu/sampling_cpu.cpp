// CPU reference of argmax and seeded sampling: a full sort by (probability desc, index asc),
// with the fixed-point masses of ops/sampling_rule.h so it picks what the CUDA kernel picks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "device/cpu/cpu_launch.h"
#include "device/stream.h"
#include "ops/cpu/attention_cpu.h"
#include "ops/sampling_rule.h"

namespace grt::cpu {
namespace {

// torch.argmax semantics: NaN is the largest, ties go to the lowest index.
int32_t argmax_row(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (std::isnan(x[best])) break;
    if (std::isnan(x[i]) || x[i] > x[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

int32_t sample_row(const float* x, int64_t n, float temperature, int32_t top_k, float top_p, uint64_t seed,
                   uint64_t step, std::vector<float>& p, std::vector<int32_t>& order) {
  namespace rule = ops::sampling_rule;
  if (!(temperature > 0.0f)) return argmax_row(x, n);
  float mx = x[argmax_row(x, n)];
  if (!std::isfinite(mx)) return argmax_row(x, n);
  const float inv_t = 1.0f / temperature;
  p.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float e = std::exp((x[i] - mx) * inv_t);
    p[static_cast<size_t>(i)] = e >= 0.0f ? e : 0.0f;  // NaN logits never win
  }
  order.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    uint32_t ka = rule::order_bits(p[static_cast<size_t>(a)]), kb = rule::order_bits(p[static_cast<size_t>(b)]);
    return ka != kb ? ka > kb : a < b;
  });
  int64_t kept = (top_k > 0 && top_k < n) ? top_k : n;
  uint64_t mass = 0;
  for (int64_t j = 0; j < kept; ++j) mass += rule::weight(p[static_cast<size_t>(order[static_cast<size_t>(j)])]);
  if (top_p < 1.0f) {
    const uint64_t target = rule::top_p_target(top_p, mass);
    uint64_t cum = 0;
    for (int64_t j = 0; j < kept; ++j) {
      cum += rule::weight(p[static_cast<size_t>(order[static_cast<size_t>(j)])]);
      if (cum > target) {
        kept = j + 1;
        mass = cum;
        break;
      }
    }
  }
  const uint64_t target = rule::draw_target(seed, step, mass);
  uint64_t cum = 0;
  for (int64_t j = 0; j < kept; ++j) {
    cum += rule::weight(p[static_cast<size_t>(order[static_cast<size_t>(j)])]);
    if (cum > target) return order[static_cast<size_t>(j)];
  }
  return order[0];  // unreachable: target < mass
}

}  // namespace

void argmax(Stream& stream, const ops::SampleArgs& a) {
  launch(stream, [a] {
    for (int64_t b = 0; b < a.batch; ++b) a.out[b] = argmax_row(a.logits + b * a.vocab, a.vocab);
  });
}

void sample(Stream& stream, const ops::SampleArgs& a) {
  launch(stream, [a] {
    std::vector<float> p;
    std::vector<int32_t> order;
    for (int64_t b = 0; b < a.batch; ++b)
      a.out[b] = sample_row(a.logits + b * a.vocab, a.vocab, a.temperature[b], a.top_k[b], a.top_p[b],
                            static_cast<uint64_t>(a.seed[b]), static_cast<uint64_t>(a.step[b]), p, order);
  });
}

}  // namespace grt::cpu
