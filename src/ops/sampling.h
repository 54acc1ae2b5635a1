// Picking next tokens from logits: argmax, and seeded temperature / top-k / top-p sampling that
// gives the same token on the CPU and on CUDA for the same seed (up to float rounding of exp).
#pragma once
#include "core/tensor.h"

namespace grt::ops {

struct SamplingTensors {
  Tensor temperature;  // f32 [B]; <= 0 → greedy (argmax)
  Tensor top_k;        // i32 [B]; <= 0 → no limit
  Tensor top_p;        // f32 [B]; >= 1 → no limit
  Tensor seed;         // i64 [B]
  Tensor step;         // i32 [B]: index of the token being sampled, so each step draws anew
};

// i32 [B]: index of the largest logit of each row; ties → lowest index, NaN counts as largest
// (like torch.argmax). logits: f32 [B, V] contiguous.
Tensor argmax(const Tensor& logits);

// i32 [B]. Greedy rows → argmax. Other rows: p_i = exp((x_i - max) / T); tokens ordered by p
// descending, ties by index ascending; keep the first top_k; of those keep the shortest prefix
// whose mass reaches top_p of the kept mass; draw u = hash_uniform(seed, step) (core/hash_random.h)
// and return the kept token where the cumulative mass first exceeds u * kept mass. Masses are
// summed in 2^-40 fixed point (exact and order-independent), so tokens with p < 2^-40 * max are
// never drawn. All inputs [B], contiguous, read on the device (capturable).
Tensor sample(const Tensor& logits, const SamplingTensors& params);

}  // namespace grt::ops
