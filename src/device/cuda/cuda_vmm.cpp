#include "device/cuda/cuda_vmm.h"

#include <map>
#include <mutex>

#include "core/logging.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/driver_api.h"

namespace grt::cuda {
namespace {

CUmemAllocationProp pinned_device_prop(int index) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = index;  // a device ordinal
  return prop;
}

CUdeviceptr to_dptr(void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// Like GRT_CU_CHECK, naming the driver function rather than the pointer expression calling it.
#define GRT_VMM_CHECK(name, call, ...)                                                                 \
  do {                                                                                                 \
    CUresult grt_res_ = (call);                                                                        \
    if (grt_res_ != CUDA_SUCCESS)                                                                      \
      ::grt::cuda::throw_driver_error(grt_res_, name, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
  } while (0)

}  // namespace

size_t vmm_granularity(int index) {
  static std::mutex mu;
  static std::map<int, size_t> cache;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(index);
    if (it != cache.end()) return it->second;
  }
  const DriverApi& api = driver_api();
  use_device(index);
  CUmemAllocationProp prop = pinned_device_prop(index);
  size_t granularity = 0;
  GRT_VMM_CHECK("cuMemGetAllocationGranularity",
                api.mem_get_allocation_granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                "querying the virtual-memory granularity of cuda:{}", index);
  GRT_CHECK(granularity > 0, "cuda:{} reports a virtual-memory granularity of 0", index);
  std::lock_guard<std::mutex> lock(mu);
  cache[index] = granularity;
  return granularity;
}

void* vmm_reserve(int index, size_t bytes) {
  const DriverApi& api = driver_api();
  use_device(index);
  CUdeviceptr ptr = 0;
  GRT_VMM_CHECK("cuMemAddressReserve", api.mem_address_reserve(&ptr, bytes, 0, 0, 0),
                "reserving {} bytes of virtual addresses for cuda:{}", bytes, index);
  return reinterpret_cast<void*>(ptr);
}

void vmm_release_range(int index, void* base, size_t bytes) {
  const DriverApi& api = driver_api();
  use_device(index);
  GRT_VMM_CHECK("cuMemAddressFree", api.mem_address_free(to_dptr(base), bytes),
                "releasing {} bytes of virtual addresses at {} on cuda:{}", bytes, base, index);
}

uint64_t vmm_create_chunk(int index, size_t bytes) {
  const DriverApi& api = driver_api();
  use_device(index);
  CUmemAllocationProp prop = pinned_device_prop(index);
  CUmemGenericAllocationHandle handle = 0;
  GRT_VMM_CHECK("cuMemCreate", api.mem_create(&handle, bytes, &prop, 0),
                "creating a physical chunk of {} bytes ({:.1f} MiB) on cuda:{}", bytes, bytes / 1048576.0, index);
  return static_cast<uint64_t>(handle);
}

void vmm_release_chunk(int index, uint64_t handle, size_t bytes) {
  const DriverApi& api = driver_api();
  use_device(index);
  GRT_VMM_CHECK("cuMemRelease", api.mem_release(static_cast<CUmemGenericAllocationHandle>(handle)),
                "releasing a physical chunk of {} bytes on cuda:{}", bytes, index);
}

void vmm_map(int index, void* addr, size_t bytes, uint64_t handle) {
  const DriverApi& api = driver_api();
  use_device(index);
  GRT_VMM_CHECK("cuMemMap", api.mem_map(to_dptr(addr), bytes, 0, static_cast<CUmemGenericAllocationHandle>(handle), 0),
                "mapping a {}-byte chunk at {} on cuda:{}", bytes, addr, index);
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = index;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CUresult res = api.mem_set_access(to_dptr(addr), bytes, &access, 1);
  if (res != CUDA_SUCCESS) {
    // Leave nothing half-done: a mapping nobody can access would only leak.
    if (api.mem_unmap(to_dptr(addr), bytes) != CUDA_SUCCESS)
      GRT_WARN("cuMemUnmap after a failed cuMemSetAccess at {} on cuda:{} failed too", addr, index);
    throw_driver_error(res, "cuMemSetAccess", __FILE__, __LINE__,
                       fmt::format("granting cuda:{} read/write access to {} bytes at {}", index, bytes, addr));
  }
}

void vmm_unmap(int index, void* addr, size_t bytes) {
  const DriverApi& api = driver_api();
  use_device(index);
  GRT_VMM_CHECK("cuMemUnmap", api.mem_unmap(to_dptr(addr), bytes), "unmapping {} bytes at {} on cuda:{}", bytes, addr,
                index);
}

}  // namespace grt::cuda
