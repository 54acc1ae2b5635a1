// An extend step run as decode rows: one row per new token, so a small extend (a short prompt, the
// last chunk of a prompt, a mixed step of chunks and decodes) replays a decode graph — one graph
// with no eager attention between pieces — instead of a piecewise graph. Row r of request b (its
// token j) attends to positions 0 .. prefix_lens[b] + j of b's request slot: the extend's causal
// attention, computed the way decode attention computes a row (the same values up to float
// rounding). Every row's K/V is stored before attention runs (the forward's prepare step), and
// kv_new_from tells the kernels which positions this step stores (ops/attention.h).
// Each row reads its request's whole prefix, so the rule caps the positions all rows read.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/forward_batch.h"

namespace grt {

struct ExtendRowsLimits {
  int max_tokens = 0;           // 0: off
  int64_t max_positions = 0;    // sum over rows of the positions each attends to
};

// The default of --decode-graph-extend-max-tokens (see its README line for the measurement).
inline constexpr int kDefaultExtendRowsMaxTokens = 64;
// Positions all rows of one step may read: a decode batch of 64 at a context of 1024, which the
// decode kernels read near the memory bandwidth. A 256-token prompt without prefix reads 32,896.
inline constexpr int64_t kDefaultExtendRowsMaxPositions = 64 * 1024;

// Why `batch` does not run as decode rows under `limits` ("" when it does): not an EXTEND batch,
// more tokens than max_tokens, or rows reading more positions than max_positions.
std::string extend_rows_refusal(const ForwardBatch& batch, const ExtendRowsLimits& limits);

// The DECODE batch of `batch`'s rows (a valid EXTEND batch): row r keeps its token, position and
// KV location; req_pool_indices / sampling / sample_steps are its request's; seq_lens[r] =
// prefix + j + 1 for the request's token j; prefix_lens[r] = the request's prefix (the first
// position this step writes: DecodeAttentionMeta::kv_new_from); logit_requests = the rows of
// batch.logit_rows(), in that order, so the logits come back as the extend's would.
ForwardBatch extend_as_decode_rows(const ForwardBatch& batch);

}  // namespace grt
