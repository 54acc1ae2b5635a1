// RMSNorm kernels: one block per row, two passes over the row (sum of squares, then scale), the
// second re-reading x from cache rather than holding a row of any length in registers. Both are on
// the decode path and keep the PDL contract (ops/cuda/pdl.cuh): they wait first, then let the next
// kernel (a GEMV streaming weights) launch at once; with GRAPHRT_PDL_TRIGGER_FIRST=norms|all (opt-in:
// measured slower, MoE bs 1 +0.12 ms a step, see ops/cuda/pdl.h) they
// let it launch first, before their wait (pdl.cuh point 3), so its weight reads start under this
// kernel's predecessor too (e.g. a one-token MoE block's down1 before the next layer's qkv GEMV).
// Their PDL successors (GEMVs, the router) read only weights before their wait.
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/dense_cuda.h"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda {
namespace {

using namespace dense;

template <typename T>
__global__ void rms_norm_kernel(const T* x, ops::RowLayout xl, T* out, ops::RowLayout ol, const T* w, int64_t n,
                                float eps, bool vec, bool first) {
  constexpr int V = kChunk<T>;
  pdl_enter(first);
  const int64_t r = blockIdx.x;
  const T* xr = x + xl.row_offset(r);
  T* orow = out + ol.row_offset(r);
  float v[V], wv[V];
  float ss = 0.0f;
  for (int64_t c = static_cast<int64_t>(threadIdx.x) * V; c < n; c += static_cast<int64_t>(blockDim.x) * V) {
    load_chunk(xr, c, n, vec, v);
#pragma unroll
    for (int j = 0; j < V; ++j) ss = __fmaf_rn(v[j], v[j], ss);  // explicit: prepare_qkv_ repeats it bit for bit
  }
  const float inv = rsqrtf(block_sum(ss) / static_cast<float>(n) + eps);
  for (int64_t c = static_cast<int64_t>(threadIdx.x) * V; c < n; c += static_cast<int64_t>(blockDim.x) * V) {
    load_chunk(xr, c, n, vec, v);
    load_chunk(w, c, n, vec, wv);
#pragma unroll
    for (int j = 0; j < V; ++j) v[j] = wv[j] * round_to<T>(v[j] * inv);  // HF: w * y.to(dtype)
    store_chunk(orow, c, n, vec, v);
  }
}

template <typename T>
__global__ void fused_add_rms_norm_kernel(T* x, int64_t xs, T* res, int64_t rs, const T* w, int64_t n, float eps,
                                          bool vec, bool first) {
  constexpr int V = kChunk<T>;
  pdl_enter(first);
  T* xr = x + static_cast<int64_t>(blockIdx.x) * xs;
  T* rr = res + static_cast<int64_t>(blockIdx.x) * rs;
  float a[V], b[V];
  float ss = 0.0f;
  for (int64_t c = static_cast<int64_t>(threadIdx.x) * V; c < n; c += static_cast<int64_t>(blockDim.x) * V) {
    load_chunk(xr, c, n, vec, a);
    load_chunk(rr, c, n, vec, b);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      b[j] = round_to<T>(a[j] + b[j]);  // the residual stream keeps the dtype's rounding
      ss += b[j] * b[j];
    }
    store_chunk(rr, c, n, vec, b);
  }
  norm_row_from_residual(rr, w, xr, n, ss, eps, vec);
}

template <typename T>
void launch_rms_norm(int dev, cudaStream_t s, const void* x, const ops::RowLayout& xl, void* out, const ops::RowLayout& ol,
                     const void* w, int64_t n, float eps) {
  constexpr int V = kChunk<T>;
  const bool vec = n % V == 0 && aligned16(x, xl.outer_stride, sizeof(T)) && aligned16(x, xl.inner_stride, sizeof(T)) &&
                   aligned16(out, ol.outer_stride, sizeof(T)) && aligned16(out, ol.inner_stride, sizeof(T)) &&
                   aligned16(w, 0, sizeof(T));
  (void)launch_pdl(dev, rms_norm_kernel<T>, dim3(static_cast<unsigned>(xl.rows)), dim3(row_threads((n + V - 1) / V)), 0,
                   s, 1, static_cast<const T*>(x), xl, static_cast<T*>(out), ol, static_cast<const T*>(w), n, eps, vec,
                   pdl_trigger_first(TriggerFirstSite::norms));
}

template <typename T>
void launch_fused(int dev, cudaStream_t s, void* x, int64_t xs, void* r, int64_t rs, const void* w, int64_t rows, int64_t n,
                  float eps) {
  constexpr int V = kChunk<T>;
  const bool vec = n % V == 0 && aligned16(x, xs, sizeof(T)) && aligned16(r, rs, sizeof(T)) && aligned16(w, 0, sizeof(T));
  (void)launch_pdl(dev, fused_add_rms_norm_kernel<T>, dim3(static_cast<unsigned>(rows)),
                   dim3(row_threads((n + V - 1) / V)), 0, s, 1, static_cast<T*>(x), xs, static_cast<T*>(r), rs,
                   static_cast<const T*>(w), n, eps, vec,
                   pdl_trigger_first(TriggerFirstSite::norms));
}

void check_rows(const char* op, int64_t rows) {
  GRT_CHECK(rows <= 0x7fffffff, "{}: {} rows exceed one grid", op, rows);
}

}  // namespace

void rms_norm(Device d, DType dt, const void* x, const ops::RowLayout& xl, void* out, const ops::RowLayout& ol,
              const void* w, int64_t hidden, float eps) {
  check_rows("rms_norm", xl.rows);
  cudaStream_t s = dense::launch_stream(d);
  if (dt == DType::BF16) launch_rms_norm<__nv_bfloat16>(d.index, s, x, xl, out, ol, w, hidden, eps);
  else if (dt == DType::F32) launch_rms_norm<float>(d.index, s, x, xl, out, ol, w, hidden, eps);
  else GRT_FAIL("rms_norm on CUDA supports bf16 and f32, got {}", dtype_name(dt));
  GRT_CUDA_CHECK_LAUNCH("rms_norm rows={} hidden={} dtype={}", xl.rows, hidden, dtype_name(dt));
}

void fused_add_rms_norm(Device d, DType dt, void* x, int64_t x_stride, void* residual, int64_t residual_stride,
                        const void* w, int64_t rows, int64_t hidden, float eps) {
  check_rows("fused_add_rms_norm_", rows);
  cudaStream_t s = dense::launch_stream(d);
  if (dt == DType::BF16) launch_fused<__nv_bfloat16>(d.index, s, x, x_stride, residual, residual_stride, w, rows, hidden, eps);
  else if (dt == DType::F32) launch_fused<float>(d.index, s, x, x_stride, residual, residual_stride, w, rows, hidden, eps);
  else GRT_FAIL("fused_add_rms_norm_ on CUDA supports bf16 and f32, got {}", dtype_name(dt));
  GRT_CUDA_CHECK_LAUNCH("fused_add_rms_norm_ rows={} hidden={} dtype={}", rows, hidden, dtype_name(dt));
}

}  // namespace grt::cuda
