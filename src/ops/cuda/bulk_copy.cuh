// One-dimensional TMA bulk copies (cp.async.bulk, sm_90+) from global into shared memory,
// completed on a shared-memory mbarrier: one thread hands the copy engine a whole contiguous run
// of bytes, with no registers or instructions per 16 bytes. On an H100 they stream no faster than
// 16-byte loads with >= 32 KB in flight an SM, and a kernel with a ring of them starts ~1 us later
// (bench/results/h100_2026-11-23_s5_stream); used by moe_one_token.cu's down kernel and the
// stream probe. Namespace tma: attention_mma.cuh has its own smem_addr.
//
// Rules: addresses and sizes 16-byte aligned, sizes < 2^20 per mbarrier phase (its transaction
// count). On architectures before sm_90 these compile to a trap: callers launch them only where
// bulk_copy_supported() holds.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace grt::cuda::tma {

// Whether device `major`.x runs the bulk copies below (compute capability 9.0 or newer).
inline bool bulk_copy_supported(int major) { return major >= 9; }

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Initialise an mbarrier that completes a phase after `count` arrivals (and its expected bytes).
// The caller then synchronises the block before any thread waits on or arrives at it.
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#else
  __trap();
#endif
}

// One arrival that also announces `bytes` more to come by bulk copies in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
#else
  __trap();
#endif
}

// One plain arrival (no bytes announced).
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(smem_addr(bar)) : "memory");
#else
  __trap();
#endif
}

// Arrives once this thread's earlier cp.async copies have landed (the barrier's count includes
// this arrival: .noinc).
__device__ __forceinline__ void cp_async_mbar_arrive(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(bar)) : "memory");
#else
  __trap();
#endif
}

// Blocks until the phase of parity `parity` has completed (its arrivals and bytes all in).
// kCluster: with acquire at cluster scope, for bytes other blocks of the cluster stored into this
// block's shared memory (st.async counted on `bar`), visible once it returns.
template <bool kCluster = false>
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const uint32_t a = smem_addr(bar);
  uint32_t done = 0;
  do {
    if constexpr (kCluster)
      asm volatile(
          "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
          : "=r"(done)
          : "r"(a), "r"(parity)
          : "memory");
    else
      asm volatile(
          "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
          : "=r"(done)
          : "r"(a), "r"(parity)
          : "memory");
  } while (!done);
#else
  __trap();
#endif
}

// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from global `src` into this
// block's shared `dst`; their arrival counts against `bar`'s expected bytes.
__device__ __forceinline__ void bulk_copy_g2s(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar))
      : "memory");
#else
  __trap();
#endif
}

}  // namespace grt::cuda::tma
