// Programmatic dependent launch (PDL) for the kernels of the decode path (see ops/cuda/pdl.h).
//
// The contract every kernel launched through launch_pdl keeps, in every thread:
//  1. Before pdl_wait(): no global-memory writes, and reads of nothing that any kernel of the
//     forward writes (weights only). The predecessor may still be running; the buffers this kernel
//     writes may still be read by it (the caching allocator reuses memory stream-ordered).
//  2. pdl_wait() is reached unconditionally (no return before it): the kernel then cannot finish
//     before its predecessor has, so "predecessor done" stays transitive along the chain and a
//     kernel two launches later is also ordered after this one's predecessor.
//  3. pdl_trigger() (griddepcontrol.launch_dependents) lets the next kernel be scheduled once every
//     block of this grid has issued it or exited. Small kernels issue it right after their wait,
//     so the next GEMV's blocks load weights while they run; the GEMV (gemv.cu) does the same
//     (GRAPHRT_GEMV_EARLY_TRIGGER=0: after its main loop), attention after its main loop
//     (the mma kernel with GRAPHRT_DECODE_MMA_EARLY_TRIGGER=1: right after its wait). Every kernel waits before it triggers, so at most one kernel sits waiting
//     ahead of the running one, and a kernel's early weight reads can only overlap the kernel
//     launched just before it: that one must not write the weights (at load, a copy or a
//     synchronisation always comes between).
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
