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
  GRT_CHECK(std::isfinite(min_p) && min_p >= 0.0f && min_p <= 1.0f,
            "{} {} is not allowed: must be in [0, 1] (0: off)", n.min_p, min_p);
  GRT_CHECK(std::isfinite(frequency_penalty) && frequency_penalty >= -2.0f && frequency_penalty <= 2.0f,
            "{} {} is not allowed: must be in [-2, 2] (0: off)", n.frequency_penalty, frequency_penalty);
  GRT_CHECK(std::isfinite(presence_penalty) && presence_penalty >= -2.0f && presence_penalty <= 2.0f,
            "{} {} is not allowed: must be in [-2, 2] (0: off)", n.presence_penalty, presence_penalty);
  GRT_CHECK(std::isfinite(repetition_penalty) && repetition_penalty > 0.0f,
            "{} {} is not allowed: must be a finite number > 0 (1: off)", n.repetition_penalty, repetition_penalty);
}

}  // namespace grt
