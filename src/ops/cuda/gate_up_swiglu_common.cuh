// What the gate_up + SwiGLU GEMM kernels share (gate_up_swiglu.cu: 128-row tiles;
// gate_up_swiglu_m192.cu: 192-row tiles; gate_up_swiglu_decode.cu: decode rows): the epilogue, so
// all give the same bits from the same sums, and the cp.async producer of the 128-row and decode
// kernels. Device code only where __CUDA_ARCH_FEAT_SM90_ALL is defined (sm_90a).
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "ops/cuda/attention_wgmma.cuh"

namespace grt::cuda::swiglu_gemm {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// silu(g) rounded to bf16 (silu_and_mul's silu_mul), times u, in f32.
__device__ __forceinline__ float swiglu(float g, float u) {
  return __bfloat162float(__float2bfloat16_rn(g / (1.0f + expf(-g)))) * u;
}

// The cp.async copy plan of one producer thread for a stage holding BM rows of x (A_BYTES) and
// then BN gate rows and BN up rows, each BK = 64 columns wide (one 128-byte swizzled column
// block). Thread t copies 16-byte chunk t % 8 of rows t / 8 + 16 i; rows with the same r % 8 share
// the swizzle, so per slice it only steps three row pointers (x, gate, up) by 64 columns. x rows
// past `rows` are zero-filled.
template <int BM, int BN, uint32_t A_BYTES>
struct CpAsyncSliceProducer {
  static constexpr int kBK = 64;
  const __nv_bfloat16* xp;  // x row r0, this thread's chunk
  const __nv_bfloat16* x0;  // x row 0 of the tile (an address inside x for the zero-filled rows)
  const __nv_bfloat16* gp;  // gate row i0 + r0
  const __nv_bfloat16* up;  // up row inter + i0 + r0
  int64_t xstep, wstep;     // 16 rows of x, of w
  uint32_t dst;             // the chunk's offset in a stage's x tile (row r0)
  int r0, rows;

  __device__ __forceinline__ CpAsyncSliceProducer(const __nv_bfloat16* x, int64_t xs, const __nv_bfloat16* w,
                                                  int64_t k, int64_t inter, int i0, int rows_, int tid) {
    const int chunk = tid % 8;
    r0 = tid / 8;
    rows = rows_;
    xp = x + static_cast<int64_t>(r0) * xs + chunk * 8;
    x0 = x;
    gp = w + (i0 + r0) * k + chunk * 8;
    up = w + (inter + i0 + r0) * k + chunk * 8;
    xstep = 16 * xs;
    wstep = 16 * k;
    dst = wg::sw128(r0, chunk, BM);  // row r0 + 16 i lies 16 i * 128 bytes further, same swizzle
  }
  // Slice kt's x tile into the stage at `stage_addr`.
  __device__ __forceinline__ void copy_x(uint32_t stage_addr, int kt) const {
    const __nv_bfloat16* p = xp + static_cast<int64_t>(kt) * kBK;
#pragma unroll
    for (int i = 0; i < BM / 16; ++i, p += xstep) {
      const bool ok = r0 + 16 * i < rows;
      wg::cp_async16(stage_addr + dst + i * 16 * 128, ok ? p : x0, ok);  // x0: an address in x, never read
    }
  }
  // Slice kt's gate and up rows into the stage at `stage_addr` (after its x tile).
  __device__ __forceinline__ void copy_w(uint32_t stage_addr, int kt) const {
    const int64_t col = static_cast<int64_t>(kt) * kBK;
    const uint32_t b = stage_addr + A_BYTES + dst;
    const __nv_bfloat16* p = gp + col;
#pragma unroll
    for (int i = 0; i < BN / 16; ++i, p += wstep) wg::cp_async16(b + i * 16 * 128, p, true);
    p = up + col;
#pragma unroll
    for (int i = 0; i < BN / 16; ++i, p += wstep) wg::cp_async16(b + (BN + 16 * i) * 128, p, true);
  }
};
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace grt::cuda::swiglu_gemm
