// silu_and_mul: rows on grid.x, 16-byte column chunks over grid.y x threads, so a single decode
// row still spreads over many SMs. On the decode path: PDL contract of ops/cuda/pdl.cuh.
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/dense_cuda.h"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda {
namespace {

using namespace dense;

constexpr int kThreads = 256;

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
  for (int j = 0; j < V; ++j) g[j] = round_to<T>(g[j] / (1.0f + expf(-g[j]))) * u[j];  // HF: silu(g) in dtype, * up
  store_chunk(out + static_cast<int64_t>(blockIdx.x) * inter, c, inter, vec, g);
}

template <typename T>
void launch(int dev, cudaStream_t s, const void* x, int64_t xs, void* out, int64_t rows, int64_t inter) {
  constexpr int V = kChunk<T>;
  const bool vec = inter % V == 0 && aligned16(x, xs, sizeof(T)) && aligned16(x, inter, sizeof(T)) &&
                   aligned16(out, inter, sizeof(T));
  const int64_t col_blocks = ((inter + V - 1) / V + kThreads - 1) / kThreads;
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
