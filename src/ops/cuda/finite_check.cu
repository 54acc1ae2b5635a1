#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_stream.h"
#include "device/stream.h"
#include "core/tensor.h"

namespace grt::ops::cuda {
namespace {

// One pass over the bits: a thread ORs "exponent all ones" over its elements, a warp votes, and
// one lane per warp that saw a bad value stores 1 (all stores write the same value: no atomics).
template <typename Bits>
__global__ void flag_nonfinite_kernel(const Bits* data, int64_t n, Bits exp_mask, int32_t* flag) {
  bool bad = false;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    bad |= (data[i] & exp_mask) == exp_mask;
  if (__any_sync(0xffffffffu, bad) && (threadIdx.x & 31) == 0) *flag = 1;
}

}  // namespace

void flag_nonfinite(Device device, const void* data, DType dtype, int64_t n, int32_t* flag) {
  cudaStream_t s = grt::cuda::native_stream(current_stream(device));
  const int threads = 256;
  const int64_t blocks64 = (n + threads - 1) / threads;
  const int blocks = static_cast<int>(blocks64 < 4096 ? blocks64 : 4096);
  if (dtype == DType::F32)
    flag_nonfinite_kernel<uint32_t><<<blocks, threads, 0, s>>>(static_cast<const uint32_t*>(data), n, 0x7f800000u, flag);
  else
    flag_nonfinite_kernel<uint16_t><<<blocks, threads, 0, s>>>(
        static_cast<const uint16_t*>(data), n, static_cast<uint16_t>(dtype == DType::BF16 ? 0x7f80u : 0x7c00u), flag);
  GRT_CUDA_CHECK_LAUNCH("flag_nonfinite n={} dtype={}", n, dtype_name(dtype));
}

}  // namespace grt::ops::cuda
