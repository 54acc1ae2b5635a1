// The closing kernel of linear_add_rms_norm_ (ops/linear_add_rms_norm.h): one block per row sums
// the linear's K-split partials (f32, written by cuBLASLt as a strided batch), rounds the sum to
// the dtype (the linear's own output rounding), adds it into the residual and normalizes, in
// fused_add_rms_norm_kernel's order (norm.cu): given the same linear output, the same bits.
// Why: see ops/linear_add_rms_norm.h (one kernel instead of cuBLASLt's split-K reduce and the fused
// add+norm kernel, after faster partial GEMMs; bench/results/h100_2026-11-26_session32).
// PDL: waits first (the partials are the predecessor's output), then lets the next kernel launch.
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/dense_cuda.h"
#include "ops/cuda/pdl.cuh"
#include "ops/cuda/pdl.h"

namespace grt::cuda {
namespace {

using namespace dense;

// The sum of the row's partials at chunk c, in split order 0..splits-1.
template <typename T>
__device__ __forceinline__ void sum_partials(const float* p, int64_t split_stride, int splits, int64_t c, int64_t n,
                                             bool vec, float* out) {
  constexpr int V = kChunk<T>;
  constexpr int F = kChunk<float>;
  static_assert(V % F == 0, "a chunk of T spans whole f32 chunks");
#pragma unroll
  for (int h = 0; h < V; h += F) load_chunk(p, c + h, n, vec, out + h);
  for (int s = 1; s < splits; ++s) {
    float v[V];
#pragma unroll
    for (int h = 0; h < V; h += F) load_chunk(p + s * split_stride, c + h, n, vec, v + h);
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] += v[j];
  }
}

template <typename T>
__global__ void split_k_add_rms_norm_kernel(const float* partials, int splits, int64_t rows, T* res, int64_t rs,
                                            const T* w, T* out, int64_t os, int64_t n, float eps, bool vec,
                                            bool first) {
  constexpr int V = kChunk<T>;
  pdl_enter(first);
  const float* pr = partials + static_cast<int64_t>(blockIdx.x) * n;
  T* rr = res + static_cast<int64_t>(blockIdx.x) * rs;
  T* orow = out + static_cast<int64_t>(blockIdx.x) * os;
  float a[V], b[V];
  float ss = 0.0f;
  for (int64_t c = static_cast<int64_t>(threadIdx.x) * V; c < n; c += static_cast<int64_t>(blockDim.x) * V) {
    sum_partials<T>(pr, rows * n, splits, c, n, vec, a);
    load_chunk(rr, c, n, vec, b);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      b[j] = round_to<T>(round_to<T>(a[j]) + b[j]);  // the linear's output, then the residual stream's rounding
      ss += b[j] * b[j];
    }
    store_chunk(rr, c, n, vec, b);
  }
  norm_row_from_residual(rr, w, orow, n, ss, eps, vec);
}

}  // namespace

void split_k_add_rms_norm(Device d, DType dt, const float* partials, int splits, void* residual,
                          int64_t residual_stride, const void* w, void* out, int64_t out_stride, int64_t rows,
                          int64_t hidden, float eps) {
  GRT_CHECK(dt == DType::BF16, "split_k_add_rms_norm on CUDA supports bf16, got {}", dtype_name(dt));
  GRT_CHECK(rows <= 0x7fffffff && splits >= 1, "split_k_add_rms_norm: {} rows / {} splits do not fit one grid", rows,
            splits);
  if (rows == 0) return;
  using T = __nv_bfloat16;
  constexpr int V = kChunk<T>;
  cudaStream_t s = launch_stream(d);
  const bool vec = hidden % V == 0 && aligned16(partials, hidden, sizeof(float)) &&
                   aligned16(residual, residual_stride, sizeof(T)) && aligned16(out, out_stride, sizeof(T)) &&
                   aligned16(w, 0, sizeof(T));
  (void)launch_pdl(d.index, split_k_add_rms_norm_kernel<T>, dim3(static_cast<unsigned>(rows)),
                   dim3(row_threads((hidden + V - 1) / V)), 0, s, 1, partials, splits, rows, static_cast<T*>(residual),
                   residual_stride, static_cast<const T*>(w), static_cast<T*>(out), out_stride, hidden, eps, vec,
                   pdl_trigger_first(TriggerFirstSite::norms));
  GRT_CUDA_CHECK_LAUNCH("split_k_add_rms_norm rows={} hidden={} splits={}", rows, hidden, splits);
}

}  // namespace grt::cuda
