// mbarrier operations on barriers given by their 32-bit shared-memory address (one register,
// where a generic pointer takes two): used by the warp-specialised extend attention kernels
// (attention_extend_ws.cu) and the 192-row gate_up + SwiGLU GEMM (gate_up_swiglu_m192.cu, with
// its TMA expect_tx), whose threads keep 128 accumulators live next to them. Device code only
// where __CUDA_ARCH_FEAT_SM90_ALL is defined (sm_90a). bulk_copy.cuh (namespace tma) has pointer
// forms.
#pragma once
#include <cstdint>

namespace grt::cuda::smem_mbar {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Initialise the barrier at `bar` for `count` arrivals a phase (the block synchronises before
// use).
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
// One arrival that also announces `bytes` more to come in this phase from bulk (TMA) copies.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Arrives once this thread's earlier cp.async copies have landed (the count was set for it).
__device__ __forceinline__ void cp_async_mbar_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Waits until the phase of parity `parity` has completed (a fresh barrier: parity 1 is done).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (done == 0);
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace grt::cuda::smem_mbar
