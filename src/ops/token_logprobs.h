// Log-probabilities of chosen tokens for the rows of a step that ask for them, computed on the
// logits' device so only [M] + [M, K] values travel to the host (not [M, vocab] logits).
#pragma once
#include "core/tensor.h"

namespace grt::ops {

// Most alternatives a row may ask for (OpenAI's top_logprobs limit).
constexpr int kMaxTopLogprobs = 20;

struct TokenLogprobTensors {
  Tensor logprob;      // f32 [M]: log_softmax(logits[rows[j]])[ids[rows[j]]]
  Tensor top_ids;      // i32 [M, K]: the K most likely tokens of each row (logit desc, id asc)
  Tensor top_logprob;  // f32 [M, K]: their log-probabilities
};

// logits: f32 [B, V] contiguous; ids: i32 [B] (the token chosen in every row); rows: i32 [M]
// distinct rows in [0, B) to compute; k in [0, kMaxTopLogprobs] (K = k; top_* undefined when 0).
// log_softmax is x - (max + log(sum(exp(x - max)))); NaN logits are not ranked. Enqueued on the
// current stream (no host wait).
TokenLogprobTensors token_logprobs(const Tensor& logits, const Tensor& ids, const Tensor& rows, int k);

}  // namespace grt::ops
