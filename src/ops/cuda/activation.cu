// silu_and_mul: rows on grid.x, 16-byte column chunks over grid.y x threads, so a single decode
// row still spreads over many SMs. On the decode path: PDL contract of ops/cuda/pdl.cuh.
// GRAPHRT_SILU_KERNEL (same result bits whichever runs: both call silu_mul):
//  cols (default): silu_and_mul_kernel, as described above;
//  ahead: one flat grid over (row, chunk), every thread one chunk, both 16-byte loads issued
//   before either is used, and the lanes whose chunk starts a 128-byte line first ask L2 for the
//   same chunk's gate and up lines `ahead` rows later (one resident generation of threads). Why:
//   at 4096 x 3072 the column kernel moves 75 MB at 2.7 TB/s (ncu 27.5 us) with a life of launch,
//   a DRAM trip, the math and a store per thread; its grid is row-major in blockIdx.x, so the
//   second column block of every row (128 of 256 threads active) runs as a last third of the
//   kernel at half the warps. From kAheadMinRows rows and aligned rows only (else cols; a decode
//   step's rows are fewer than one generation, so its prefetch would never act).
#include <algorithm>
#include <cstring>

#include "core/env_switch.h"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/dense_cuda.h"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda {
namespace {

using namespace dense;

constexpr int kThreads = 256;
constexpr int64_t kAheadMinRows = 1024;

constexpr const char* kSiluKernels[] = {"cols", "ahead"};
int silu_override = -1;  // set_silu_kernel (tests), host side only
int chosen_silu_kernel() {
  static const int k = env_choice("GRAPHRT_SILU_KERNEL", {kSiluKernels[0], kSiluKernels[1]}, 0);
  return silu_override >= 0 ? silu_override : k;
}

// HF: silu(g) in the dtype, times up. One function for every kernel: the same bits.
template <typename T>
__device__ __forceinline__ float silu_mul(float g, float u) {
  return round_to<T>(g / (1.0f + expf(-g))) * u;
}

template <typename T>
__global__ void silu_and_mul_kernel(const T* x, int64_t xs, T* out, int64_t inter, bool vec) {
  constexpr int V = kChunk<T>;
  pdl_wait();
  pdl_trigger();
  const int64_t c = (static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x) * V;
  if (c >= inter) return;
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * xs;
  float g[V], u[V];
  load_chunk(xr, c, inter, vec, g);
  load_chunk(xr + inter, c, inter, vec, u);
#pragma unroll
  for (int j = 0; j < V; ++j) g[j] = silu_mul<T>(g[j], u[j]);
  store_chunk(out + static_cast<int64_t>(blockIdx.x) * inter, c, inter, vec, g);
}

// The ahead kernel (see the top): thread i takes chunk i % cpr of row i / cpr (cpr = inter / V,
// rows 16-byte aligned), ahead_rows > 0 its prefetch distance.
template <typename T>
__global__ void __launch_bounds__(kThreads) silu_and_mul_ahead_kernel(const T* x, int64_t xs, T* out, int64_t rows,
                                                                      int cpr, int ahead_rows) {
  constexpr int V = kChunk<T>;
  pdl_wait();
  pdl_trigger();
  const unsigned i = blockIdx.x * kThreads + threadIdx.x;  // < 2^31: launch checks rows x cpr
  const int64_t row = i / static_cast<unsigned>(cpr);
  if (row >= rows) return;
  const int ch = static_cast<int>(i - static_cast<unsigned>(row) * static_cast<unsigned>(cpr));
  const int64_t inter = static_cast<int64_t>(cpr) * V;
  const T* const gp = x + row * xs + static_cast<int64_t>(ch) * V;
  const uint4 graw = *reinterpret_cast<const uint4*>(gp);
  const uint4 uraw = *reinterpret_cast<const uint4*>(gp + inter);
  if (ch % (128 / 16) == 0 && row + ahead_rows < rows) {
    const T* const ahead = gp + static_cast<int64_t>(ahead_rows) * xs;
    prefetch_l2(ahead);
    prefetch_l2(ahead + inter);
  }
  const T* ge = reinterpret_cast<const T*>(&graw);
  const T* ue = reinterpret_cast<const T*>(&uraw);
  float y[V];
#pragma unroll
  for (int j = 0; j < V; ++j) y[j] = silu_mul<T>(to_float(ge[j]), to_float(ue[j]));
  store_chunk(out + row * inter, static_cast<int64_t>(ch) * V, inter, true, y);
}

// Rows that one generation of resident threads of `kernel` covers (at least 1): the prefetch distance.
int ahead_rows(const void* kernel, int dev, int64_t cpr) {
  return static_cast<int>(std::max<int64_t>(1, resident_blocks(kernel, kThreads, dev) * kThreads / cpr));
}

template <typename T>
void launch(int dev, cudaStream_t s, const void* x, int64_t xs, void* out, int64_t rows, int64_t inter) {
  constexpr int V = kChunk<T>;
  const bool vec = inter % V == 0 && aligned16(x, xs, sizeof(T)) && aligned16(x, inter, sizeof(T)) &&
                   aligned16(out, inter, sizeof(T));
  if (chosen_silu_kernel() == 1 && vec && rows >= kAheadMinRows && rows * (inter / V) <= 0x7fffffff - kThreads) {
    const int64_t cpr = inter / V, blocks = (rows * cpr + kThreads - 1) / kThreads;
    (void)launch_pdl(dev, silu_and_mul_ahead_kernel<T>, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), 0, s, 1,
                     static_cast<const T*>(x), xs, static_cast<T*>(out), rows, static_cast<int>(cpr),
                     ahead_rows(reinterpret_cast<const void*>(silu_and_mul_ahead_kernel<T>), dev, cpr));
    return;
  }
  const int64_t col_blocks = ((inter + V - 1) / V + kThreads - 1) / kThreads;
  GRT_CHECK(rows <= 0x7fffffff && col_blocks <= 65535, "silu_and_mul: [{}, {}] exceeds one grid", rows, 2 * inter);
  dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(col_blocks));
  (void)launch_pdl(dev, silu_and_mul_kernel<T>, grid, dim3(kThreads), 0, s, 1, static_cast<const T*>(x), xs,
                   static_cast<T*>(out), inter, vec);
}

}  // namespace

void set_silu_kernel(const char* kernel) {
  if (kernel == nullptr) {
    silu_override = -1;
    return;
  }
  for (int i = 0; i < 2; ++i) {
    if (std::strcmp(kSiluKernels[i], kernel) == 0) {
      silu_override = i;
      return;
    }
  }
  GRT_FAIL("set_silu_kernel: unknown kernel '{}' (cols or ahead)", kernel);
}

void silu_and_mul(Device d, DType dt, const void* x, int64_t x_stride, void* out, int64_t rows, int64_t inter) {
  cudaStream_t s = dense::launch_stream(d);
  if (dt == DType::BF16) launch<__nv_bfloat16>(d.index, s, x, x_stride, out, rows, inter);
  else if (dt == DType::F32) launch<float>(d.index, s, x, x_stride, out, rows, inter);
  else GRT_FAIL("silu_and_mul on CUDA supports bf16 and f32, got {}", dtype_name(dt));
  GRT_CUDA_CHECK_LAUNCH("silu_and_mul rows={} intermediate={} dtype={}", rows, inter, dtype_name(dt));
}

}  // namespace grt::cuda
