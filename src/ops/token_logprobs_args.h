// Raw arguments of the token_logprobs kernels (ops/token_logprobs.h), shared by CPU and CUDA.
#pragma once
#include <cstdint>

namespace grt::ops {

struct TokenLogprobArgs {
  const float* logits;   // [batch, vocab]
  const int32_t* ids;    // [batch]
  const int32_t* rows;   // [m]
  float* logprob;        // [m]
  int32_t* top_ids;      // [m, k] (null when k == 0)
  float* top_logprob;    // [m, k]
  int64_t m, vocab;
  int k;
};

}  // namespace grt::ops
