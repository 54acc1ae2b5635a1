// Every dense decoder layer of one decode token in one op (issue 18: the bs-1 step of small
// models): on CUDA one persistent kernel (ops/cuda/decode_stack.h), elsewhere the op chain it
// replaces (decode_stack_chain_), which is also its reference.
#pragma once
#include <vector>

#include "core/tensor.h"
#include "ops/attention.h"

namespace grt::ops {

// One layer's tensors, as model/model_weights.h holds them (qkv_bias, q_norm, k_norm may be
// undefined) and its KV cache.
struct DecodeStackLayer {
  Tensor input_norm, qkv, qkv_bias, q_norm, k_norm, o_proj, post_norm, gate_up, down;
  Tensor k_cache, v_cache;
};

// The token's inputs: positions, out_cache_loc (i32 [1]), the rope table (f32 [P, head_dim]) and
// the decode metadata of one row.
struct DecodeStackInputs {
  Tensor positions, out_cache_loc, cos_sin;
  DecodeAttentionMeta meta;
  int q_heads = 0, kv_heads = 0, head_dim = 0;
  float eps = 0.0f, scale = 0.0f;
};

// GRAPHRT_DECODE_STACK (read once): "0" (the default) or "1": whether DecoderModel::forward runs a
// one-row decode of a dense model through decode_stack_ where decode_stack_fusable holds. Off by
// default: on an H100 the kernel measured slower than the chain (qwen3-0.6b bs 1: 1.26-1.28
// against 1.03-1.04 ms a step; ops/cuda/decode_stack.cu says why).
bool decode_stack_enabled();

// Whether decode_stack_ runs these tensors as the one kernel: CUDA, bf16, one row, head_dim 128,
// shapes ops/cuda/decode_stack.h takes, contiguous 16-byte aligned tensors. False on the CPU.
bool decode_stack_fusable(const Tensor& residual, const std::vector<DecodeStackLayer>& layers,
                          const DecodeStackInputs& in);

// residual: [1, hidden], the embedding of the token; on return the residual after the last
// layer (the final norm is the caller's). Each layer's K/V of the token goes into its cache at
// out_cache_loc. The semantics of decode_stack_chain_; on CUDA (decode_stack_fusable required)
// every intermediate is rounded as the chain rounds it but sums run in other orders, so results
// agree to float32 rounding of the sums. CUDA-graph capturable.
void decode_stack_(const Tensor& residual, const std::vector<DecodeStackLayer>& layers, const DecodeStackInputs& in);

// The op chain (any device, any row count): per layer
//   qkv = linear(rms_norm(h, input_norm), qkv, qkv_bias)
//   a = attention_decode_prepare(q, k, v, q_norm, k_norm, ...)
//   h += round(linear(a, o_proj));  x = rms_norm(h, post_norm)
//   h += round(linear(silu_and_mul(linear(x, gate_up)), down))
// with every intermediate rounded to h's dtype, as DecoderModel::forward's decode runs them.
void decode_stack_chain_(const Tensor& residual, const std::vector<DecodeStackLayer>& layers,
                         const DecodeStackInputs& in);

}  // namespace grt::ops
