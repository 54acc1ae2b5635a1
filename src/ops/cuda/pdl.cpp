#include "ops/cuda/pdl.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "device/cuda/cuda_check.h"

namespace grt::cuda {
namespace {

constexpr int kMaxDevices = 64;
std::atomic<int> g_override{-1};

bool env_allows() {
  static const bool allowed = [] {
    const char* v = std::getenv("GRAPHRT_DISABLE_PDL");
    return v == nullptr || *v == '\0' || std::strcmp(v, "0") == 0;
  }();
  return allowed;
}

// Per device: 0 unknown, 1 supported (compute capability >= 9), 2 not.
std::array<std::atomic<int>, kMaxDevices>& support() {
  static std::array<std::atomic<int>, kMaxDevices> s{};
  return s;
}

bool device_supports(int index) {
  if (index < 0 || index >= kMaxDevices) return false;
  std::atomic<int>& s = support()[static_cast<size_t>(index)];
  int v = s.load(std::memory_order_relaxed);
  if (v == 0) {
    int major = 0;
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index),
                   "reading the compute capability of cuda:{} (programmatic dependent launch)", index);
    v = major >= 9 ? 1 : 2;
    s.store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

}  // namespace

bool pdl_enabled(int index) {
  const int o = g_override.load(std::memory_order_relaxed);
  if (o == 0 || (o < 0 && !env_allows())) return false;
  return device_supports(index);
}

void set_pdl_override(int mode) { g_override.store(mode < 0 ? -1 : (mode ? 1 : 0), std::memory_order_relaxed); }

}  // namespace grt::cuda
