#include "ops/cuda/pdl.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/env_switch.h"
#include "core/error.h"
#include "device/cuda/cuda_check.h"

namespace grt::cuda {
namespace {

constexpr int kMaxDevices = 64;
std::atomic<int> g_override{-1};
std::atomic<int> g_first_override{-1};  // set_pdl_trigger_first

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

bool pdl_trigger_first(TriggerFirstSite site) {
  // The mode's bits are the sites: 1 prepare, 2 norms, 3 all (env_choice's index is the mask).
  // Default prepare: measured best (ops/cuda/pdl.h).
  static const int env = env_choice("GRAPHRT_PDL_TRIGGER_FIRST", {"0", "prepare", "norms", "all"}, 1);
  const int o = g_first_override.load(std::memory_order_relaxed);
  return ((o >= 0 ? o : env) & static_cast<int>(site)) != 0;
}

void set_pdl_trigger_first(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 3, "set_pdl_trigger_first: mode {} (expected -1..3)", mode);
  g_first_override.store(mode, std::memory_order_relaxed);
}

}  // namespace grt::cuda
