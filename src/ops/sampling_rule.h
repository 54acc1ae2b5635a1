// The arithmetic of seeded sampling that the CPU reference and the CUDA kernel must share
// exactly, so the same seed picks the same token on both (ops/sampling.h states the rule).
#pragma once
#include <cstdint>
#include <cstring>

#include "core/hash_random.h"

namespace grt::ops::sampling_rule {

// Fixed-point scale of probability masses: p (relative to the max, in [0, 1]) → p * 2^40.
GRT_HOST_DEVICE inline uint64_t weight(float p) { return static_cast<uint64_t>(p * 1099511627776.0f); }

// Ordering key of p >= 0: its IEEE bits (monotone for non-negative floats).
GRT_HOST_DEVICE inline uint32_t order_bits(float p) {
  uint32_t u;
  memcpy(&u, &p, sizeof(u));
  return u;
}

// Top-p: the kept prefix is the shortest whose mass is >= ceil(top_p * kept_mass), i.e. the
// first position whose cumulative mass exceeds the returned value.
GRT_HOST_DEVICE inline uint64_t top_p_target(float top_p, uint64_t kept_mass) {
  double t = static_cast<double>(top_p) * static_cast<double>(kept_mass);
  uint64_t need = static_cast<uint64_t>(t);
  if (static_cast<double>(need) < t) ++need;  // ceil without <cmath> on both sides
  if (need == 0) need = 1;
  if (need > kept_mass) need = kept_mass;
  return need - 1;
}

// Draw: the token where the cumulative mass first exceeds floor(u * mass), u with 24 bits.
GRT_HOST_DEVICE inline uint64_t draw_target(uint64_t seed, uint64_t step, uint64_t mass) {
  uint64_t u24 = static_cast<uint64_t>(hash_uniform(seed, step) * 16777216.0f);  // exact
  return (mass >> 24) * u24 + (((mass & 0xFFFFFFull) * u24) >> 24);
}

}  // namespace grt::ops::sampling_rule
