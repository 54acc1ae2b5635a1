// Plain descriptions of memory layouts that the dense ops hand to their CPU and CUDA
// implementations (raw numbers only, so a kernel or a CPU closure can hold them by value).
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace grt::ops {

// Rows of `hidden` contiguous elements. Row r starts at element
//   (r / inner) * outer_stride + (r % inner) * inner_stride
// which covers [T, H] with any row stride (inner = 1) and [T, heads, H] with any strides.
struct RowLayout {
  int64_t rows = 0;
  int64_t inner = 1;
  int64_t outer_stride = 0;
  int64_t inner_stride = 0;

  constexpr int64_t row_offset(int64_t r) const { return (r / inner) * outer_stride + (r % inner) * inner_stride; }
};

// The rows of `t` (rank >= 1, last dimension contiguous): rank 1 is one row, rank 2 any row
// stride, rank 3 any strides on the first two dimensions, rank > 3 when the leading dimensions
// collapse into one stride. Error naming `op` and the tensor otherwise.
RowLayout row_layout(const Tensor& t, const char* op);

// A rank <= 4 element-wise copy: shape padded to 4 with leading 1s, strides in elements.
struct Strided4 {
  int64_t shape[4] = {1, 1, 1, 1};
  int64_t src_stride[4] = {0, 0, 0, 0};
  int64_t dst_stride[4] = {0, 0, 0, 0};
  constexpr int64_t numel() const { return shape[0] * shape[1] * shape[2] * shape[3]; }
};

// Which heads prepare_qkv_ prepares: all (q in place, k and v into the caches), q only, or k and v
// only (ops/prepare_qkv.h; an extend attention that prepares its Q tiles itself takes the q part).
enum class PrepareParts : uint8_t { kAll, kQ, kKv };

// The raw arguments of prepare_qkv_ (ops/prepare_qkv.h). Strides in elements; norm weights null
// when that norm is off; q, k, v, the weights and the caches share `dtype`. With parts == kQ only
// q, q_heads, q_stride, q_norm, eps, positions, cos_sin, max_positions, tokens, head_dim and dtype
// are read.
struct PrepareQkvArgs {
  void* q;
  int64_t q_stride, q_heads;
  const void* k;
  int64_t k_stride;
  const void* v;
  int64_t v_stride, kv_heads;
  const void* q_norm;
  const void* k_norm;
  float eps;
  const int32_t* positions;
  const float* cos_sin;
  int64_t max_positions;
  const int32_t* out_cache_loc;
  void* k_cache;
  void* v_cache;
  int64_t num_slots, tokens, head_dim;
  DType dtype;
  PrepareParts parts = PrepareParts::kAll;
};

}  // namespace grt::ops
