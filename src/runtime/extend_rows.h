// An extend step run as decode rows: one row per new token, so a small extend (a short prompt, the
// last chunk of a prompt, a mixed step of chunks and decodes) replays a decode graph — one graph
// with no eager attention between pieces — instead of a piecewise graph. Row r of request b (its
// token j) attends to positions 0 .. prefix_lens[b] + j of b's request slot: the extend's causal
// attention, computed the way decode attention computes a row (the same values up to float
// rounding). Every row's K/V is stored before attention runs (the forward's prepare step), and
// kv_new_from tells the kernels which positions this step stores (ops/attention.h).
// Each row reads its request's whole prefix, so the rule caps the positions the rows re-read.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/forward_batch.h"

namespace grt {

struct ExtendRowsLimits {
  int max_tokens = 0;           // 0: off
  // Positions the rows read beyond reading each of their requests' positions once (a request of
  // e tokens after a prefix p: (e - 1) p + e (e - 1) / 2; 0 for a decode riding in a mixed step).
  int64_t max_rereads = 0;
};

// The default of --decode-graph-extend-max-tokens (see its README line for the measurement).
inline constexpr int kDefaultExtendRowsMaxTokens = 64;
// Positions the rows of one step may re-read (ExtendRowsLimits::max_rereads): each row re-reads
// its request's prefix, where extend attention reads it once. Measured on an H100 (qwen3-0.6b, no
// prefix, bench/results/h100_2026-11-24_s12_rows): 64 tokens (2,016 re-reads) win over the
// piecewise graph, 96 (4,560) lose, so the cap sits between; 4 tokens after a prefix of 1,000
// re-read 3,006, 16 tokens after 1,000 re-read 15,120 and stay on piecewise graphs (short extends
// after a prefix were not measured as rows).
inline constexpr int64_t kDefaultExtendRowsMaxRereads = 4096;

// Why `batch` does not run as decode rows under `limits` ("" when it does): not an EXTEND batch,
// more tokens than max_tokens, or rows re-reading more positions than max_rereads.
std::string extend_rows_refusal(const ForwardBatch& batch, const ExtendRowsLimits& limits);

// The DECODE batch of `batch`'s rows (a valid EXTEND batch): row r keeps its token, position and
// KV location; req_pool_indices / sampling / sample_steps are its request's; seq_lens[r] =
// prefix + j + 1 for the request's token j; prefix_lens[r] = the request's prefix (the first
// position this step writes: DecodeAttentionMeta::kv_new_from); logit_requests = the rows of
// batch.logit_rows(), in that order, so the logits come back as the extend's would.
ForwardBatch extend_as_decode_rows(const ForwardBatch& batch);

}  // namespace grt
