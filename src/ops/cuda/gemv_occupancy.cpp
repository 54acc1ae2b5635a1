#include "ops/cuda/gemv_occupancy.h"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>
#include <tuple>

#include "device/cuda/cuda_check.h"

namespace grt::cuda::gemv_detail {

int gemv_blocks_per_sm(int index, const void* kernel, int threads, size_t smem, const char* what) {
  static std::mutex mu;
  static std::map<std::tuple<int, const void*, size_t>, int> cache;
  std::lock_guard<std::mutex> lock(mu);
  const auto key = std::make_tuple(index, kernel, smem);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  int n = 0;
  if (smem > 0) {
    int optin = 0;
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, index),
                   "reading the shared memory a block may take on cuda:{}", index);
    if (smem > static_cast<size_t>(optin)) {
      cache[key] = 0;
      return 0;
    }
    GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin),
                   "allowing {} bytes of shared memory to the {} on cuda:{}", optin, what, index);
    GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        cudaSharedmemCarveoutMaxShared),
                   "setting the carveout of the {} on cuda:{}", what, index);
  }
  GRT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, threads, smem),
                 "reading the occupancy of the {} on cuda:{} ({} bytes of shared memory)", what, index, smem);
  cache[key] = n;
  return n;
}

}  // namespace grt::cuda::gemv_detail
