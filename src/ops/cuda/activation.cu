// silu_and_mul, two kernels with the same result bits (GRAPHRT_SILU_KERNEL, read at every call):
//  - rows (default where it applies: 16-byte aligned rows of at most 1024 chunks, from
//    kRowsMinRows rows): a block per two rows, a thread per 16-byte chunk (blockDim = the row's
//    chunks rounded up to a warp; qwen3-0.6b's 3072: 384 threads), both rows' four loads issued
//    before any math. Why: at 4096 tokens the column kernel ran 27.5 us a layer for 75 MB (2.7
//    TB/s, the copy rate is ~3.0): one 16-byte load pair per thread, and its second block of each
//    row half idle (384 chunks in blocks of 256 threads);
//  - cols: rows on grid.x, 16-byte column chunks over grid.y x threads, so a single decode row
//    still spreads over many SMs (every shape).
// On the decode path: PDL contract of ops/cuda/pdl.cuh.
#include "core/env_switch.h"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/dense_cuda.h"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda {
namespace {

using namespace dense;

constexpr int kThreads = 256;

// HF: silu(g) rounded to the dtype, times up. Both kernels compute each element with this.
template <typename T, int V>
__device__ __forceinline__ void silu_mul(float* g, const float* u) {
#pragma unroll
  for (int j = 0; j < V; ++j) g[j] = round_to<T>(g[j] / (1.0f + expf(-g[j]))) * u[j];
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
  silu_mul<T, V>(g, u);
  store_chunk(out + static_cast<int64_t>(blockIdx.x) * inter, c, inter, vec, g);
}

// Rows 2b and 2b + 1 (the second when it exists); 16-byte aligned rows, inter % V == 0.
template <typename T>
__global__ void silu_and_mul_rows_kernel(const T* x, int64_t xs, T* out, int64_t inter, int64_t rows) {
  constexpr int V = kChunk<T>;
  pdl_wait();
  pdl_trigger();
  const int64_t c = static_cast<int64_t>(threadIdx.x) * V, r = static_cast<int64_t>(blockIdx.x) * 2;
  if (c >= inter) return;
  const bool second = r + 1 < rows;
  const T* x0 = x + r * xs;
  float g0[V], u0[V], g1[V], u1[V];
  load_chunk(x0, c, inter, true, g0);
  load_chunk(x0 + inter, c, inter, true, u0);
  if (second) {
    load_chunk(x0 + xs, c, inter, true, g1);
    load_chunk(x0 + xs + inter, c, inter, true, u1);
  }
  silu_mul<T, V>(g0, u0);
  store_chunk(out + r * inter, c, inter, true, g0);
  if (second) {
    silu_mul<T, V>(g1, u1);
    store_chunk(out + (r + 1) * inter, c, inter, true, g1);
  }
}

// From this many rows the rows kernel runs (>= 512 blocks; below, the column kernel spreads
// each row over two blocks, so a few hundred rows still fill the GPU).
constexpr int64_t kRowsMinRows = 1024;
constexpr int kMaxRowThreads = 1024;

bool rows_kernel_chosen() {
  return env_choice("GRAPHRT_SILU_KERNEL", {"auto", "rows", "cols"}, 0) != 2;
}
bool rows_kernel_forced() { return env_choice("GRAPHRT_SILU_KERNEL", {"auto", "rows", "cols"}, 0) == 1; }

template <typename T>
void launch(int dev, cudaStream_t s, const void* x, int64_t xs, void* out, int64_t rows, int64_t inter) {
  constexpr int V = kChunk<T>;
  const bool vec = inter % V == 0 && aligned16(x, xs, sizeof(T)) && aligned16(x, inter, sizeof(T)) &&
                   aligned16(out, inter, sizeof(T));
  const int64_t chunks = (inter + V - 1) / V;
  if (vec && chunks <= kMaxRowThreads && rows_kernel_chosen() && (rows >= kRowsMinRows || rows_kernel_forced())) {
    const int64_t blocks = (rows + 1) / 2;
    GRT_CHECK(blocks <= 0x7fffffff, "silu_and_mul: {} rows exceed one grid", rows);
    (void)launch_pdl(dev, silu_and_mul_rows_kernel<T>, dim3(static_cast<unsigned>(blocks)),
                     dim3(static_cast<unsigned>((chunks + 31) / 32 * 32)), 0, s, 1, static_cast<const T*>(x), xs,
                     static_cast<T*>(out), inter, rows);
    return;
  }
  const int64_t col_blocks = (chunks + kThreads - 1) / kThreads;
  GRT_CHECK(rows <= 0x7fffffff && col_blocks <= 65535, "silu_and_mul: [{}, {}] exceeds one grid", rows, 2 * inter);
  dim3 grid(static_cast<unsigned>(rows), static_cast<unsigned>(col_blocks));
  (void)launch_pdl(dev, silu_and_mul_kernel<T>, grid, dim3(kThreads), 0, s, 1, static_cast<const T*>(x), xs,
                   static_cast<T*>(out), inter, vec);
}

}  // namespace

void silu_and_mul(Device d, DType dt, const void* x, int64_t x_stride, void* out, int64_t rows, int64_t inter) {
  cudaStream_t s = dense::launch_stream(d);
  if (dt == DType::BF16) launch<__nv_bfloat16>(d.index, s, x, x_stride, out, rows, inter);
  else if (dt == DType::F32) launch<float>(d.index, s, x, x_stride, out, rows, inter);
  else GRT_FAIL("silu_and_mul on CUDA supports bf16 and f32, got {}", dtype_name(dt));
  GRT_CUDA_CHECK_LAUNCH("silu_and_mul rows={} intermediate={} dtype={}", rows, inter, dtype_name(dt));
}

}  // namespace grt::cuda
