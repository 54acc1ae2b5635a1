// The PDL-edge probe (pdl_probe.h).
#include "ops/cuda/pdl_probe.h"

#include <mutex>
#include <set>
#include <utility>

#include "core/error.h"
#include "device/cuda/cuda_check.h"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda {
namespace {

constexpr int kMaxSmem = 200 * 1024;

template <bool kBarrier>
__global__ void pdl_probe_kernel(PdlProbeArgs a) {
  pdl_wait();
  if (!a.trigger_after) pdl_trigger();
  if (threadIdx.x == 0 && a.trips > 0) {
    uint32_t* w = a.words + static_cast<size_t>(blockIdx.x) * 32;
    uint32_t v = 0;
    for (int i = 0; i < a.trips; ++i) v = __ldcg(w + (v & 1u));  // words 0 and 1 stay 0: every trip reads word 0
    __stcg(w + 2, v + static_cast<uint32_t>(a.trips));
  }
  if constexpr (kBarrier) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
  }
  if (a.trigger_after) pdl_trigger();
}

}  // namespace

int pdl_probe_sms(Device d) {
  int sms = 0;
  GRT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, d.index), "pdl probe: reading the SM count of {}",
                 d.str());
  return sms;
}

void pdl_probe(Device d, const PdlProbeArgs& a) {
  GRT_CHECK(a.blocks >= 1 && a.threads >= 32 && a.threads <= 1024 && a.threads % 32 == 0,
            "pdl probe: {} blocks of {} threads (blocks >= 1, threads 32..1024 in warps)", a.blocks, a.threads);
  GRT_CHECK(a.cluster == 1 || a.cluster == 2 || a.cluster == 4 || a.cluster == 8,
            "pdl probe: cluster {} (1, 2, 4 or 8)", a.cluster);
  GRT_CHECK(a.blocks % a.cluster == 0, "pdl probe: {} blocks are not whole clusters of {}", a.blocks, a.cluster);
  GRT_CHECK(!a.cluster_barrier || a.cluster > 1, "pdl probe: a cluster barrier needs clusters (cluster {})", a.cluster);
  GRT_CHECK(a.smem >= 0 && a.smem <= kMaxSmem, "pdl probe: {} bytes of shared memory (0..{})", a.smem, kMaxSmem);
  GRT_CHECK(a.trips >= 0 && (a.trips == 0 || a.words != nullptr), "pdl probe: {} trips need words", a.trips);
  auto kernel = a.cluster_barrier ? pdl_probe_kernel<true> : pdl_probe_kernel<false>;
  {  // the shared-memory limit, once per kernel
    static std::mutex mu;
    static std::set<std::pair<int, bool>> done;
    std::lock_guard<std::mutex> lock(mu);
    if (done.insert({d.index, a.cluster_barrier}).second)
      GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem),
                     "pdl probe: allowing {} bytes of shared memory on {}", kMaxSmem, d.str());
  }
  (void)launch_pdl(d.index, kernel, dim3(static_cast<unsigned>(a.blocks)), dim3(static_cast<unsigned>(a.threads)),
                   static_cast<size_t>(a.smem), dense::launch_stream(d), static_cast<unsigned>(a.cluster), a);
  GRT_CUDA_CHECK_LAUNCH("pdl probe: {} blocks of {} threads, cluster {}{}, {} trips, {} bytes shared", a.blocks,
                        a.threads, a.cluster, a.cluster_barrier ? " with a barrier" : "", a.trips, a.smem);
}

}  // namespace grt::cuda
