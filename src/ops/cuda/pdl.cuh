// Programmatic dependent launch (PDL) for the kernels of the decode path (see ops/cuda/pdl.h).
//
// The contract every kernel launched through launch_pdl keeps, in every thread:
//  1. Before pdl_wait(): no global-memory writes, and reads of nothing that any kernel of the
//     forward writes (weights only). The predecessor may still be running; the buffers this kernel
//     writes may still be read by it (the caching allocator reuses memory stream-ordered).
//  2. pdl_wait() is reached unconditionally (no return before it): the kernel then cannot finish
//     before its predecessor has, so "predecessor done" stays transitive along the chain and a
//     kernel two launches later is also ordered after this one's predecessor. One exception: a
//     block that has read nothing but what point 1 allows and writes nothing may return before
//     it, where blocks of the same grid that always exist still wait (decode attention's idle
//     splits, DecodeMmaParams::idle_exit: block 0 of every request and kv head works and waits);
//     the grid completes only after those, so the ordering is the same.
//  3. pdl_trigger() (griddepcontrol.launch_dependents) lets the next kernel be scheduled once every
//     block of this grid has issued it or exited. Small kernels issue it right after their wait,
//     so the next GEMV's blocks load weights while they run; the GEMV (gemv.cu) does the same
//     (GRAPHRT_GEMV_EARLY_TRIGGER=0: after its main loop), attention after its main loop
//     (the mma kernel with GRAPHRT_DECODE_MMA_EARLY_TRIGGER=1: right after its wait).
//     Trigger first (pdl_enter(true); GRAPHRT_PDL_TRIGGER_FIRST, ops/cuda/pdl.h): prepare_qkv's
//     (by default) and the RMSNorm kernels (opt-in, measured slower) may trigger BEFORE their wait. Then the next kernel's pre-wait part
//     can overlap not only this kernel but also this kernel's predecessor (and, were that one to
//     trigger first too, the one before it, and so on back to the nearest kernel that waits before
//     it triggers: that kernel's predecessor has completed). So a kernel K may trigger first only
//     where its successor's pre-wait reads (point 1 and the documented exceptions: decode
//     attention's "Early" metadata and "Preload" K/V rows) are safe against the writes of K's
//     predecessor too, not only K's. Weights are (no kernel writes them); the decode metadata is
//     (the host copies it before the forward's kernels); the preloaded K/V rows are (only the
//     step's prepare_qkv writes K/V, and it writes none of those rows). Never in a kernel whose
//     successor reads, before its wait, what the predecessor computes: e.g. MoE gate_up1 keeps
//     waiting first, as down1 reads the router's expert ids before its wait (moe_one_token.cu).
//     Ordering is unchanged: every kernel still reaches its wait unconditionally (point 2), and a
//     kernel completes only after its wait returned, i.e. after its predecessor completed; the
//     successor's wait waits for this kernel's completion, hence for the whole chain before it.
//     Scheduling: the trigger fires only once every block of this grid has issued it, so all of
//     this grid's blocks (and of every earlier grid) are resident or done before any block of the
//     next one is scheduled: early blocks never take SM slots ahead of an earlier kernel's blocks
//     (no deadlock, no delayed launch), they only compete for bandwidth and issue slots.
//     Without trigger first, every kernel waits before it triggers, so at most one kernel sits
//     waiting ahead of the running one, and a kernel's early weight reads can only overlap the
//     kernel launched just before it; with it, also that kernel's predecessor. None of them may
//     write the weights (at load, a copy or a synchronisation always comes between).
// Without the attribute (PDL off, pre-Hopper, or a predecessor that is not a kernel) the
// instructions are no-ops and launches are ordinary stream order. cuBLASLt launches never carry
// the attribute: edges into them stay full; an edge out of one into a PDL kernel is programmatic,
// but a cuBLAS kernel never triggers early, so the next kernel only starts as its blocks exit.
#pragma once
#include <cuda_runtime.h>

#include <utility>

#include "ops/cuda/pdl.h"

namespace grt::cuda {

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// A kernel's PDL entry: wait, then let the next kernel launch; or, with trigger_first (the host's
// pdl_trigger_first for this kernel's site), let it launch first and then wait (point 3 above).
__device__ __forceinline__ void pdl_enter(bool trigger_first) {
  if (trigger_first) pdl_trigger();
  pdl_wait();
  if (!trigger_first) pdl_trigger();
}

// Launches kernel<<<grid, block, smem, stream>>>(args...) on device `index` (already current),
// with the PDL attribute when pdl_enabled(index) and as thread block clusters of `cluster` blocks
// (x, y, z) when that holds more than one block. The kernel must keep the contract above. Returns
// the launch's error (also left as the last error, which GRT_CUDA_CHECK_LAUNCH reads).
template <typename... Params, typename... Args>
cudaError_t launch_pdl_clusters(int index, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                                cudaStream_t stream, dim3 cluster, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (pdl_enabled(index)) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (cluster.x * cluster.y * cluster.z > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster.x;
    attr[n].val.clusterDim.y = cluster.y;
    attr[n].val.clusterDim.z = cluster.z;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

// launch_pdl_clusters with clusters of `cluster` blocks along x (none when cluster <= 1).
template <typename... Params, typename... Args>
cudaError_t launch_pdl(int index, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                       unsigned cluster, Args&&... args) {
  return launch_pdl_clusters(index, kernel, grid, block, smem, stream, dim3(cluster, 1, 1), std::forward<Args>(args)...);
}

// Clusters of `cluster` blocks (x, y, z) of `block` threads and `smem` dynamic shared memory
// bytes that the device can hold resident at once when launched as launch_pdl_clusters does, or 0
// when such a launch cannot run (the error is cleared). The kernel's attributes (shared memory
// limit, non-portable cluster sizes) must be set first.
template <typename... Params>
int max_active_clusters(void (*kernel)(Params...), dim3 cluster, dim3 block, size_t smem) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = cluster;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = cluster.x;
  attr.val.clusterDim.y = cluster.y;
  attr.val.clusterDim.z = cluster.z;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  int n = 0;
  if (cudaOccupancyMaxActiveClusters(&n, reinterpret_cast<const void*>(kernel), &cfg) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

// Clusters of `cluster` blocks along x (max_active_clusters above).
template <typename... Params>
int max_active_clusters(void (*kernel)(Params...), unsigned cluster, dim3 block, size_t smem) {
  return max_active_clusters(kernel, dim3(cluster, 1, 1), block, smem);
}

}  // namespace grt::cuda
