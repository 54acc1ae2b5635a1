// Per-row logit processing before sampling (SGLang's penalizers and min-p): frequency, presence
// and repetition penalties on the tokens each row has generated, then the min-p cut, in place on
// the device, for the whole batch in one call.
#pragma once
#include "core/tensor.h"

namespace grt::ops {

struct LogitProcessTensors {
  // f32 [B] each.
  Tensor frequency;    // logit -= frequency * count
  Tensor presence;     // logit -= presence (count > 0)
  Tensor repetition;   // logit > 0 ? logit / r : logit * r  (count > 0; 1: off)
  Tensor min_p;        // rows with temperature > 0: logits with p < min_p * p_max become -inf
  Tensor temperature;
  // i32 [N] each: the generated tokens of each row as (row, id, count); a (row, id) pair at most once.
  Tensor token_rows, token_ids, token_counts;
};

struct LogitProcessArgs {
  float* logits;  // [batch, vocab]
  int64_t batch, vocab, entries;
  const float *frequency, *presence, *repetition, *min_p, *temperature;
  const int32_t *token_rows, *token_ids, *token_counts;
};

// logits: f32 [B, V] contiguous, changed in place. Entries naming a row or id out of range are an
// Error (checked on the host copy by the caller; the kernels skip them).
void process_logits(const Tensor& logits, const LogitProcessTensors& t);

}  // namespace grt::ops
