#include "device/cuda/driver_api.h"

#include <cuda_runtime_api.h>

#include <string>

#include "core/error.h"
#include "core/logging.h"

namespace grt::cuda {
namespace {

struct Resolved {
  DriverApi api;
  std::string error;  // empty when every symbol resolved
};

// Resolves `symbol` at the ABI of the toolkit we compiled against, so the pointer matches the
// declaration in <cuda.h> used for its type. Returns an empty string or why it failed.
template <typename Fn>
std::string resolve(const char* symbol, Fn& out) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  cudaError_t err = cudaGetDriverEntryPointByVersion(symbol, &fn, CUDA_VERSION, cudaEnableDefault, &status);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky; keep later launch checks clean
    return fmt::format("no usable CUDA driver: cudaGetDriverEntryPointByVersion(\"{}\", {}) failed: {} ({})", symbol,
                       CUDA_VERSION, cudaGetErrorName(err), cudaGetErrorString(err));
  }
  if (status == cudaDriverEntryPointVersionNotSufficent || (status == cudaDriverEntryPointSuccess && !fn))
    return fmt::format("driver symbol {} is not available at CUDA version {}: the installed driver is too old", symbol,
                       CUDA_VERSION);
  if (status != cudaDriverEntryPointSuccess)
    return fmt::format("driver symbol {} was not found in the installed CUDA driver", symbol);
  out = reinterpret_cast<Fn>(fn);
  return {};
}

Resolved resolve_all() {
  Resolved r;
  auto one = [&](const char* symbol, auto& out) {
    if (r.error.empty()) r.error = resolve(symbol, out);
  };
  one("cuGetErrorName", r.api.get_error_name);
  one("cuGetErrorString", r.api.get_error_string);
  one("cuMemGetAllocationGranularity", r.api.mem_get_allocation_granularity);
  one("cuMemAddressReserve", r.api.mem_address_reserve);
  one("cuMemAddressFree", r.api.mem_address_free);
  one("cuMemCreate", r.api.mem_create);
  one("cuMemRelease", r.api.mem_release);
  one("cuMemMap", r.api.mem_map);
  one("cuMemSetAccess", r.api.mem_set_access);
  one("cuMemUnmap", r.api.mem_unmap);
  one("cuMemGetAddressRange", r.api.mem_get_address_range);
  one("cuTensorMapEncodeTiled", r.api.tensor_map_encode_tiled);
  if (r.error.empty())
    GRT_DEBUG("CUDA driver API entry points resolved (ABI version {})", CUDA_VERSION);
  else
    GRT_DEBUG("CUDA driver API unavailable: {}", r.error);
  return r;
}

}  // namespace

const DriverApi& driver_api() {
  static const Resolved resolved = resolve_all();  // thread-safe, once
  GRT_CHECK(resolved.error.empty(), "the CUDA driver API is unavailable: {}", resolved.error);
  return resolved.api;
}

}  // namespace grt::cuda
