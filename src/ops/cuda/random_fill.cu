#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/hash_random.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_stream.h"
#include "device/stream.h"
#include "core/tensor.h"
#include "ops/random_fill.h"

namespace grt::ops::cuda {
namespace {

template <typename T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) { return v; }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __half from_float<__half>(float v) { return __float2half_rn(v); }

template <typename T>
__global__ void fill_kernel(T* out, int64_t n, int64_t cols, HashBlock b, uint64_t seed, float center, float half_width,
                            bool bf16_values) {
  const bool whole_rows = b.col0 == 0 && cols == b.full_cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
  {
    // Whole rows are one run: no division.
    const int64_t index = whole_rows ? b.row0 * cols + i : (b.row0 + i / cols) * b.full_cols + b.col0 + i % cols;
    float v = hash_uniform_in(seed, static_cast<uint64_t>(index), center, half_width);
    if (bf16_values) v = __bfloat162float(__float2bfloat16_rn(v));
    out[i] = from_float<T>(v);
  }
}

}  // namespace

void fill_hash_uniform(Device device, void* data, DType dtype, int64_t n, int64_t cols, HashBlock b, uint64_t seed,
                       float center, float half_width, bool bf16_values) {
  cudaStream_t s = grt::cuda::native_stream(current_stream(device));
  int threads = 256;
  int64_t blocks64 = (n + threads - 1) / threads;
  int blocks = static_cast<int>(blocks64 < 65536 ? blocks64 : 65536);
  if (dtype == DType::F32) fill_kernel<<<blocks, threads, 0, s>>>(static_cast<float*>(data), n, cols, b, seed, center, half_width, bf16_values);
  else if (dtype == DType::BF16)
    fill_kernel<<<blocks, threads, 0, s>>>(static_cast<__nv_bfloat16*>(data), n, cols, b, seed, center, half_width, bf16_values);
  else fill_kernel<<<blocks, threads, 0, s>>>(static_cast<__half*>(data), n, cols, b, seed, center, half_width, bf16_values);
  GRT_CUDA_CHECK_LAUNCH("fill_hash_uniform n={} dtype={}", n, dtype_name(dtype));
}

}  // namespace grt::ops::cuda
