// The attention prologue of one layer in one kernel: Qwen3's per-head q/k RMSNorm (optional),
// neox rotary embedding of q and k, and the store of the new tokens' K and V into the paged
// KV cache. Same results as the sequence it replaces (see prepare_qkv_), one launch instead of
// up to four.
#pragma once
#include "core/tensor.h"
#include "ops/kernel_params.h"

namespace grt::ops {

// For every token t (rows of q, k, v), with hd = head_dim:
//   q[t] head by head: q ← rope(rms_norm(q, q_norm)) in place;
//   k_cache[out_cache_loc[t]] ← rope(rms_norm(k[t], k_norm)) head by head;
//   v_cache[out_cache_loc[t]] ← v[t].
// q: [T, nq*hd]; k, v: [T, nkv*hd] — one dtype, last dim contiguous, any row stride (column
// slices of a fused QKV output). q_norm / k_norm: [hd] of that dtype, or an undefined Tensor for
// no norm (each independently), eps their epsilon. positions: i32 [T]; cos_sin: f32 [P, hd] from
// rope_cos_sin_cache; out_cache_loc: i32 [T]; k_cache, v_cache: contiguous [num_slots, nkv*hd]
// of the same dtype. Positions and slots are read on the device (CUDA-graph capturable; no
// allocation). A position outside [0, P) skips rope for its token (norm and store still run); a
// slot outside [0, num_slots) skips the store for its token (q is still prepared).
// k and v are only read: k in the QKV buffer is NOT normed or roped (only its cache row is).
//
// Equality: the results (q, and the cache rows) are bit for bit those of
//   rms_norm_([T, nq, hd] view of q, q_norm, eps); rms_norm_([T, nkv, hd] view of k, k_norm, eps);
//   apply_rope_(q, k, positions, cos_sin, hd); store_kv(k, v, out_cache_loc, k_cache, v_cache)
// on the CPU (f32) and on CUDA (bf16 and f32): every intermediate is rounded to the dtype where
// that sequence stores it, and the norm's reduction runs in the same order as the rms_norm kernel.
//
// parts: all of the above (kAll), or only q's part (kQ: k, v and the caches are neither read nor
// written) or only k's and v's (kKv: q is left as it is). kQ then kKv, in either order, is kAll
// bit for bit. Every argument is checked whatever the part.
void prepare_qkv_(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm, const Tensor& k_norm,
                  float eps, const Tensor& positions, const Tensor& cos_sin, int head_dim, const Tensor& out_cache_loc,
                  const Tensor& k_cache, const Tensor& v_cache, PrepareParts parts = PrepareParts::kAll);

// prepare_qkv_'s q part alone: q [T, nq*hd] (last dim contiguous, any row stride) in place,
// q_norm [hd] of q's dtype or undefined, positions i32 [T], cos_sin f32 [P, hd]. The arguments
// (checked, an Error naming what is wrong) for the ops that run this part inside their own
// kernels (attention_extend_prepare_q_out_), then nothing runs; prepare_q_ runs it.
PrepareQkvArgs prepare_q_args(const Tensor& q, const Tensor& q_norm, float eps, const Tensor& positions,
                              const Tensor& cos_sin, int head_dim);
void prepare_q_(const Tensor& q, const Tensor& q_norm, float eps, const Tensor& positions, const Tensor& cos_sin,
                int head_dim);

// prepare_qkv_'s checks (an Error naming the argument and what is allowed) and its kernel arguments,
// for the ops that run its work inside their own kernels (attention_decode_prepare). Nothing runs.
PrepareQkvArgs prepare_qkv_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_norm,
                                const Tensor& k_norm, float eps, const Tensor& positions, const Tensor& cos_sin,
                                int head_dim, const Tensor& out_cache_loc, const Tensor& k_cache,
                                const Tensor& v_cache);

}  // namespace grt::ops
