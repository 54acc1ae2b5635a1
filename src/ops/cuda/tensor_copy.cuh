// The device side of TMA tensor copies (sm_90a): one thread hands the copy engine a whole 2-D box
// of a tensor map (ops/cuda/tensor_map.h), written into shared memory through the async proxy
// (so wgmma reads it with no proxy fence) and completed on an mbarrier by byte count (the
// issuing thread announces the bytes with smem_mbar::mbar_arrive_expect_tx). Used by
// gate_up_swiglu_m192.cu and gate_up_swiglu_decode.cu. Device code only where
// __CUDA_ARCH_FEAT_SM90_ALL is defined (sm_90a).
#pragma once
#include <cuda.h>

#include <cstdint>

namespace grt::cuda::tma {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// One bulk tensor copy of the box at (c0 = column, c1 = row) of `map` (a __grid_constant__ kernel
// parameter) into shared memory at `dst`, completing on the barrier at `bar` with the box's bytes.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace grt::cuda::tma
