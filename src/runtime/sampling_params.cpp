#include "runtime/sampling_params.h"

#include <cmath>

#include "core/error.h"

namespace grt {

void SamplingParams::validate(const SamplingFieldNames& n) const {
  GRT_CHECK(std::isfinite(temperature) && temperature >= 0.0f,
            "{} {} is not allowed: must be a finite number >= 0 (0: greedy)", n.temperature, temperature);
  GRT_CHECK(top_k >= -1, "{} {} is not allowed: must be -1 or 0 (no limit) or a positive count", n.top_k, top_k);
  GRT_CHECK(std::isfinite(top_p) && top_p > 0.0f && top_p <= 1.0f,
            "{} {} is not allowed: must be in (0, 1] (1: no limit)", n.top_p, top_p);
  GRT_CHECK(seed <= kMaxSeed, "{} {} is not allowed: must be in [0, {}]", n.seed, seed, kMaxSeed);
}

}  // namespace grt
