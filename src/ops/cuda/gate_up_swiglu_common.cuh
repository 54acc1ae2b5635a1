// The epilogue shared by the gate_up + SwiGLU GEMM kernels (gate_up_swiglu.cu: 128-row tiles;
// gate_up_swiglu_m192.cu: 192-row tiles; gate_up_swiglu_decode.cu: decode rows), so all give the
// same bits from the same sums. Device code only where __CUDA_ARCH_FEAT_SM90_ALL is defined
// (sm_90a).
#pragma once
#include <cuda_bf16.h>

namespace grt::cuda::swiglu_gemm {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// silu(g) rounded to bf16 (silu_and_mul's silu_mul), times u, in f32.
__device__ __forceinline__ float swiglu(float g, float u) {
  return __bfloat162float(__float2bfloat16_rn(g / (1.0f + expf(-g)))) * u;
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace grt::cuda::swiglu_gemm
