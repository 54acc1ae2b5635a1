#include "ops/cuda/sm90a_device.h"

#include <cuda_runtime_api.h>

#include <atomic>

namespace grt::cuda {

// Threads may race to fill the cache (0 unknown, 1 no, 2 yes): each computes the same answer.
bool sm90a_device() {
#if defined(GRAPHRT_CUDA_SM90A)
  static std::atomic<int> cached[64] = {};
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  const int known = dev >= 0 && dev < 64 ? cached[dev].load(std::memory_order_relaxed) : 0;
  if (known != 0) return known == 2;
  const bool yes = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
                   cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess &&
                   major == 9 && minor == 0;
  if (dev >= 0 && dev < 64) cached[dev].store(yes ? 2 : 1, std::memory_order_relaxed);
  return yes;
#else
  return false;
#endif
}

}  // namespace grt::cuda
