// Next tokens for one step's logit rows: penalties and min-p (ops/logit_processing.h), then
// greedy or seeded sampling (ops/sampling.h), greedy and sampled rows in the same call; logprobs
// of the chosen tokens (and the top alternatives) for the rows that ask.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "runtime/forward_batch.h"
#include "runtime/request.h"

namespace grt {

struct SampleRow {
  SamplingParams params;
  int32_t step = 0;                              // index of the token being sampled (seeding)
  const std::vector<int32_t>* generated = nullptr;  // tokens generated so far (penalties)
  bool logprobs = false;
  int top_logprobs = 0;
};

struct SampleResult {
  std::vector<int32_t> ids;            // one per row
  std::vector<TokenLogprob> logprobs;  // one per row (meaningful where asked)
};

// logits: f32 [rows.size(), vocab] on the device; changed in place by the penalties.
SampleResult sample_batch(const Tensor& logits, const std::vector<SampleRow>& rows);

}  // namespace grt
