// Attention over the paged KV cache: extend (prefill with a cached prefix, many requests in one
// batch, causal) and decode (one query per request). K/V of the tokens being processed must be
// in the cache already (store_kv runs first); every position is read through req_to_token.
//
// Layout: q is [rows, num_q_heads * head_dim] (last dim contiguous, any row stride); caches are
// contiguous [num_slots, num_kv_heads * head_dim]; outputs are contiguous
// [rows, num_q_heads * head_dim] in q's dtype. GQA: query head h reads kv head
// h / (num_q_heads / num_kv_heads). Scores are scaled by `scale`, softmax and accumulation are
// float32 (CPU: float32 reference for any float dtype; CUDA: f32, f16, bf16 inputs, head_dim
// even and <= 256 for extend, a multiple of 8 and <= 256 for decode, 16-byte aligned rows).
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace grt::ops {

struct ExtendAttentionMeta {
  Tensor req_to_token;      // i32 [max_reqs, max_context]: (request slot, position) → KV slot
  Tensor req_pool_indices;  // i32 [B]
  Tensor prefix_lens;       // i32 [B]: cached tokens before this extend
  Tensor extend_lens;       // i32 [B]
  Tensor extend_start_loc;  // i32 [B]: row in q of the request's first new token
  int num_reqs = 0;         // host values sizing the grid: extend attention always runs eagerly
  int max_extend_len = 0;
  // Decodes riding in the batch (a MIXED step, runtime/scheduler.h): the last `decode_tail`
  // requests each extend by exactly one token, on the consecutive rows decode_first_row ..
  // decode_first_row + decode_tail - 1 (host values, like num_reqs). Those rows are computed as
  // decode attention computes them (one query row a request, the decode kernels' split over the
  // context) instead of as extend tiles of mostly empty rows; seq_lens (i32 [>= num_reqs], prefix +
  // extend) is then required. 0: every request runs as an extend.
  int decode_tail = 0;
  int decode_first_row = 0;
  Tensor seq_lens;
  // Host: the requests cover exactly rows [0, covered_rows) of q, packed in order
  // (packed_extend_rows); the rows after them (a graph's padding) are then the only ones zeroed.
  // -1 (unknown): every row is zeroed before the kernel writes the covered ones.
  int covered_rows = -1;
  // The launch is fixed for every replay of a capture (a full extend graph,
  // runtime/graph_input_schema.h): num_reqs and max_extend_len are then bounds, not the batch's
  // values — the kernels run num_reqs x max_extend_len's tiles, read each request's lengths on the
  // device (a request of extend length 0 does nothing, a tile past its request's length returns)
  // — so the call may be captured. Rows no request covers are left as they are, not zeroed:
  // only a caller whose later ops never mix rows (a dense layer's row-wise GEMMs, norms and
  // activations; padding rows' outputs are dropped) may set it. decode_tail must be 0.
  bool fixed_launch = false;
};

// The rows the requests cover when they are packed from row 0 in order (extend_start_loc[b] =
// extend_lens[0] + ... + extend_lens[b - 1], every length >= 0): their sum; otherwise -1.
int packed_extend_rows(const std::vector<int32_t>& extend_start_loc, const std::vector<int32_t>& extend_lens);

// New token j of request b sits at position prefix_lens[b] + j and attends causally to positions
// 0 .. prefix_lens[b] + j. Rows of q covered by no request are written as zeros. The per-request
// values are read on the device; extend_lens[b] must not exceed max_extend_len (longer requests
// are cut to max_extend_len rows on CUDA). With decode_tail > 0 and a head_dim decode attention
// takes (a multiple of 8), the tail requests run through attention_decode (the same result up to
// float rounding). That the tail's requests extend by one token each is the caller's promise
// (runtime/forward_batch.h's decode_tail_of); the op does not read the device values to check it.
Tensor attention_extend(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                        const ExtendAttentionMeta& meta, int num_q_heads, int num_kv_heads, int head_dim,
                        float scale);
// The same into `out` (contiguous [q rows, num_q_heads * head_dim] of q's dtype, not overlapping q
// or the caches): a piecewise graph's split op writes the buffer the next piece reads, with no
// copy at replay. Zeroes only the rows after meta.covered_rows when that is set (>= 0) and
// GRAPHRT_EXTEND_ZERO is "tail" (the default; "all" zeroes every row first, the old way).
void attention_extend_out_(const Tensor& out, const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                           const ExtendAttentionMeta& meta, int num_q_heads, int num_kv_heads, int head_dim,
                           float scale);

// attention_extend_out_ of q after prepare_qkv_'s q part, prepare_q_(q, q_norm, eps, positions,
// cos_sin, head_dim) (ops/prepare_qkv.h): q holds the raw q (the model's qkv columns; its k and v
// went through prepare_qkv_ with parts kKv). On CUDA the extend kernel prepares each Q tile itself
// where it can (cuda::extend_prepares_q: the warp-specialised wgmma kernels, bf16), reading q and
// leaving it as it is; elsewhere, and where decodes ride in the batch (meta.decode_tail), q is
// prepared in place first. The same output bits either way. Why: at a 4096-token qwen3-0.6b
// prefill the q half of prepare_qkv_ read and wrote 33.5 MB a layer that the attention reads anyway.
void attention_extend_prepare_q_out_(const Tensor& out, const Tensor& q, const Tensor& q_norm, float eps,
                                     const Tensor& positions, const Tensor& cos_sin, const Tensor& k_cache,
                                     const Tensor& v_cache, const ExtendAttentionMeta& meta, int num_q_heads,
                                     int num_kv_heads, int head_dim, float scale);

// Whether the model's extends should split their prepare (k and v by prepare_qkv_ with parts kKv,
// q by attention_extend_prepare_q_out_) for q's shape [tokens, num_q_heads * head_dim]: on CUDA
// where the extend kernel for such an extend takes q's prepare with a measured gain
// (cuda::extend_prepare_q_pays); never on the CPU (the same ops in two calls). A function of the
// shape and the device only, so a piecewise graph's pieces and its split op agree at every replay.
bool extend_prepare_q_pays(const Tensor& q, int num_q_heads, int num_kv_heads, int head_dim);

struct DecodeAttentionMeta {
  Tensor req_to_token;      // i32 [max_reqs, max_context]
  Tensor req_pool_indices;  // i32 [B]
  Tensor seq_lens;          // i32 [B]: tokens in the cache including the current one
  // Optional i32 [B]: the first position of row b's request that this step writes (its prefix
  // length). Undefined: seq_lens[b] - 1 (a decode: one new token a request). Set when the rows
  // are the tokens of extends (several rows of one request, each attending to its prefix and
  // itself: runtime/extend_rows.h), so the CUDA kernels that copy old K/V before their PDL wait
  // leave every position this step stores for after it.
  Tensor kv_new_from;
};

// Row b attends to positions 0 .. seq_lens[b] - 1 of request slot req_pool_indices[b]. Rows may
// share a request slot (an extend's tokens as rows, meta.kv_new_from set); their K/V must all be
// in the cache before the call.
// CUDA-graph capturable: seq lens and indices are read only on the device, and the launch
// depends only on B, the head counts, head_dim and req_to_token's width, so a captured call
// replays correctly with changed seq_lens / req_to_token contents. seq_lens[b] <= 0 gives a zero
// row (never NaN); seq lens beyond max_context are clamped to it.
Tensor attention_decode(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                        const DecodeAttentionMeta& meta, int num_q_heads, int num_kv_heads, int head_dim,
                        float scale);

// prepare_qkv_(q, k, v, q_norm, k_norm, eps, positions, cos_sin, head_dim, out_cache_loc, k_cache,
// v_cache) (ops/prepare_qkv.h) of a decode's rows, then attention_decode(q, k_cache, v_cache, meta,
// ...) of them: the same output and cache bits. On CUDA one kernel can do both (the small-batch
// tensor-core kernel, bf16, no meta.kv_new_from; GRAPHRT_DECODE_FUSE_PREPARE=1, off by default:
// measured slower, see ops/cuda/attention_decode.cu): q is then left as it is (not prepared in place; where the two run, it is), and the new
// token's K and V are used as computed, so out_cache_loc[b] must be the slot req_to_token gives row
// b's position seq_lens[b] - 1 (as the runtime builds them). Takes prepare_qkv_'s arguments with its
// checks, and their head counts must be the attention's. CUDA-graph capturable like both ops.
Tensor attention_decode_prepare(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm,
                                const Tensor& k_norm, float eps, const Tensor& positions, const Tensor& cos_sin,
                                const Tensor& out_cache_loc, const Tensor& k_cache, const Tensor& v_cache,
                                const DecodeAttentionMeta& meta, int num_q_heads, int num_kv_heads, int head_dim,
                                float scale);

}  // namespace grt::ops
