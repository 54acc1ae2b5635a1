// Next tokens for one step's logit rows: penalties and min-p (ops/logit_processing.h), then
// greedy or seeded sampling (ops/sampling.h), greedy and sampled rows in the same call; logprobs
// of the chosen tokens (and the top alternatives) for the rows that ask, computed on the device
// (ops/token_logprobs.h) so only those values come back.
//
// Three phases, so a scheduler can overlap host work with the device: prepare_sampling uploads
// the per-row parameters (an upload may wait for the device, so call it before enqueueing the
// forward); enqueue_sampling queues the kernels on the logits' stream without waiting;
// wait_sampling copies the results to the host (waits for the device).
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "ops/logit_processing.h"
#include "ops/sampling.h"
#include "ops/token_logprobs.h"
#include "runtime/forward_batch.h"
#include "runtime/request.h"

namespace grt {

struct SampleRow {
  SamplingParams params;
  int32_t step = 0;                              // index of the token being sampled (seeding)
  const std::vector<int32_t>* generated = nullptr;  // tokens generated so far (penalties)
  bool logprobs = false;
  int top_logprobs = 0;                          // [0, ops::kMaxTopLogprobs]
};

struct SampleResult {
  std::vector<int32_t> ids;            // one per row
  std::vector<TokenLogprob> logprobs;  // one per row (meaningful where asked)
};

// One step's sampling parameters on the device.
struct SamplePlan {
  size_t rows = 0;
  bool process = false, greedy = true;
  ops::LogitProcessTensors processing;
  ops::SamplingTensors sampling;
  std::vector<int32_t> lp_rows;  // rows that asked for logprobs (host)
  std::vector<int> lp_top;       // their top_logprobs
  int top = 0;                   // the most alternatives any row asked for
  Tensor lp_rows_device;
};

// Sampling enqueued on the device, not yet read back.
struct PendingSample {
  size_t rows = 0;
  Tensor logits, ids;  // logits kept alive until the kernels ran
  std::vector<int32_t> lp_rows;
  std::vector<int> lp_top;
  ops::TokenLogprobTensors lp;
};

// Checks the rows (generated tokens in [0, vocab), top_logprobs in range) and uploads their
// parameters to `device`.
SamplePlan prepare_sampling(const std::vector<SampleRow>& rows, int64_t vocab, Device device);
// logits: f32 [plan.rows, vocab] on the plan's device; changed in place by the penalties.
PendingSample enqueue_sampling(const Tensor& logits, const SamplePlan& plan);
// Waits for the device and returns the ids (and logprobs where asked).
SampleResult wait_sampling(const PendingSample& pending);

// All three at once.
SampleResult sample_batch(const Tensor& logits, const std::vector<SampleRow>& rows);

}  // namespace grt
