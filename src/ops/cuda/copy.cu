// Strided element-wise copy with dtype conversion (copy_, contiguous, cast). One kernel for all
// dtype pairs: the dtypes are runtime arguments (a switch per element costs nothing next to the
// memory traffic, and keeps the build to one instantiation).
#include <cuda_fp16.h>

#include <algorithm>

#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/dense_cuda.h"

namespace grt::cuda {
namespace {

enum Kind : int { kF32, kBF16, kF16, kRaw1, kRaw2, kRaw4, kRaw8 };

__device__ __forceinline__ float load_float(const char* p, int kind) {
  if (kind == kF32) return *reinterpret_cast<const float*>(p);
  if (kind == kBF16) return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
  return __half2float(*reinterpret_cast<const __half*>(p));
}

__device__ __forceinline__ void store_float(char* p, int kind, float v) {
  if (kind == kF32) *reinterpret_cast<float*>(p) = v;
  else if (kind == kBF16) *reinterpret_cast<__nv_bfloat16*>(p) = __float2bfloat16_rn(v);
  else *reinterpret_cast<__half*>(p) = __float2half_rn(v);
}

// kind < kRaw1: convert src_kind -> dst_kind through float; else copy raw elements.
__global__ void copy_strided_kernel(char* dst, int dst_kind, int dst_size, const char* src, int src_kind,
                                    int src_size, ops::Strided4 s, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = i;
    const int64_t e3 = rest % s.shape[3];
    rest /= s.shape[3];
    const int64_t e2 = rest % s.shape[2];
    rest /= s.shape[2];
    const int64_t e1 = rest % s.shape[1];
    const int64_t e0 = rest / s.shape[1];
    const int64_t so = e0 * s.src_stride[0] + e1 * s.src_stride[1] + e2 * s.src_stride[2] + e3 * s.src_stride[3];
    const int64_t dof = e0 * s.dst_stride[0] + e1 * s.dst_stride[1] + e2 * s.dst_stride[2] + e3 * s.dst_stride[3];
    const char* sp = src + so * src_size;
    char* dp = dst + dof * dst_size;
    switch (dst_kind) {
      case kRaw1: *dp = *sp; break;
      case kRaw2: *reinterpret_cast<uint16_t*>(dp) = *reinterpret_cast<const uint16_t*>(sp); break;
      case kRaw4: *reinterpret_cast<uint32_t*>(dp) = *reinterpret_cast<const uint32_t*>(sp); break;
      case kRaw8: *reinterpret_cast<uint64_t*>(dp) = *reinterpret_cast<const uint64_t*>(sp); break;
      default: store_float(dp, dst_kind, load_float(sp, src_kind));
    }
  }
}

int float_kind(DType dt) {
  switch (dt) {
    case DType::F32: return kF32;
    case DType::BF16: return kBF16;
    case DType::F16: return kF16;
    default: GRT_FAIL("cast on CUDA converts f32, bf16 and f16, not {}", dtype_name(dt));
  }
}

int raw_kind(size_t size) {
  switch (size) {
    case 1: return kRaw1;
    case 2: return kRaw2;
    case 4: return kRaw4;
    case 8: return kRaw8;
    default: GRT_FAIL("copy on CUDA: unsupported element size {}", size);
  }
}

}  // namespace

void copy_strided(Device d, void* dst, DType dst_dtype, const void* src, DType src_dtype, const ops::Strided4& s) {
  const int64_t n = s.numel();
  int dk, sk;
  if (dst_dtype == src_dtype) {
    dk = sk = raw_kind(dtype_size(dst_dtype));
  } else {
    dk = float_kind(dst_dtype);
    sk = float_kind(src_dtype);
  }
  cudaStream_t st = dense::launch_stream(d);
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 65536);
  copy_strided_kernel<<<static_cast<unsigned>(blocks), threads, 0, st>>>(
      static_cast<char*>(dst), dk, static_cast<int>(dtype_size(dst_dtype)), static_cast<const char*>(src), sk,
      static_cast<int>(dtype_size(src_dtype)), s, n);
  GRT_CUDA_CHECK_LAUNCH("copy {} -> {} of [{}, {}, {}, {}]", dtype_name(src_dtype), dtype_name(dst_dtype), s.shape[0],
                        s.shape[1], s.shape[2], s.shape[3]);
}

}  // namespace grt::cuda
