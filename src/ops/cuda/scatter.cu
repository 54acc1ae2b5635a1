#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_stream.h"
#include "ops/cuda/scatter_cuda.h"

namespace grt::cuda {
namespace {

__global__ void scatter_i32_kernel(int32_t* dst, int64_t numel, const int64_t* pairs, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int64_t at = pairs[2 * i];
  if (at >= 0 && at < numel) dst[at] = static_cast<int32_t>(pairs[2 * i + 1]);
}

}  // namespace

void scatter_i32(Stream& stream, int32_t* dst, int64_t numel, const int64_t* pairs, int64_t n) {
  if (n == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  GRT_CHECK(blocks <= 0x7fffffff, "scatter_i32: {} entries exceed one grid", n);
  scatter_i32_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, native_stream(stream)>>>(dst, numel, pairs, n);
  GRT_CUDA_CHECK_LAUNCH("scatter_i32 n={} numel={}", n, numel);
}

}  // namespace grt::cuda
