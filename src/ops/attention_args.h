// Raw arguments of the attention / KV-store / sampling kernels, shared by the dispatchers
// (ops/*.cpp) and the CPU and CUDA implementations. Plain values only: CPU closures and CUDA
// launches copy them, so nothing here may point at host memory that dies with the caller.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "ops/kernel_params.h"

namespace grt::ops {

struct StoreKvArgs {
  const void* k;
  const void* v;
  int64_t k_row_stride, v_row_stride;  // elements
  const int32_t* loc;
  void* k_cache;
  void* v_cache;
  int64_t rows, width, num_slots;
  DType dtype;
};

// Fields common to extend and decode.
struct PagedAttentionArgs {
  const void* q;
  int64_t q_row_stride;  // elements
  const void* k_cache;
  const void* v_cache;
  int64_t num_slots;
  void* out;  // contiguous [rows, nq * hd]
  const int32_t* req_to_token;
  int64_t max_reqs, max_context;  // req_to_token extents
  const int32_t* req_pool_indices;
  int num_q_heads, num_kv_heads, head_dim;
  float scale;
  DType dtype;
};

struct ExtendArgs {
  PagedAttentionArgs a;
  const int32_t* prefix_lens;
  const int32_t* extend_lens;
  const int32_t* extend_start_loc;
  int64_t num_rows;  // rows of q / out
  int num_reqs, max_extend_len;
  // Set (ops::attention_extend_prepare_q_out_, where cuda::extend_prepares_q): a.q is raw and the
  // kernel applies this q part of prepare_qkv_ (parts kQ) to each Q tile itself.
  const PrepareQkvArgs* prepare_q = nullptr;
};

struct DecodeArgs {
  PagedAttentionArgs a;
  const int32_t* seq_lens;
  int batch;
  const int32_t* kv_new_from = nullptr;  // DecodeAttentionMeta::kv_new_from (null: seq_lens - 1)
  // Set (ops::attention_decode_prepare): prepare_qkv_ of the same rows comes first, in the attention's
  // kernel where it can (same bits), else as its own kernel. a.q is then prepare->q.
  const PrepareQkvArgs* prepare = nullptr;
};

struct SampleArgs {
  const float* logits;  // [batch, vocab] contiguous
  int32_t* out;
  const float* temperature;
  const int32_t* top_k;
  const float* top_p;
  const int64_t* seed;
  const int32_t* step;
  int64_t batch, vocab;
};

}  // namespace grt::ops
