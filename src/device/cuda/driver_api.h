// The few CUDA driver API functions graphrt needs (virtual memory, error names), reached through
// cudaGetDriverEntryPointByVersion instead of linking libcuda: binaries then load and run their
// CPU paths on machines without a GPU driver.
#pragma once
#include <cuda.h>

namespace grt::cuda {

struct DriverApi {
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
  decltype(&::cuMemGetAllocationGranularity) mem_get_allocation_granularity = nullptr;
  decltype(&::cuMemAddressReserve) mem_address_reserve = nullptr;
  decltype(&::cuMemAddressFree) mem_address_free = nullptr;
  decltype(&::cuMemCreate) mem_create = nullptr;
  decltype(&::cuMemRelease) mem_release = nullptr;
  decltype(&::cuMemMap) mem_map = nullptr;
  decltype(&::cuMemSetAccess) mem_set_access = nullptr;
  decltype(&::cuMemUnmap) mem_unmap = nullptr;
  decltype(&::cuMemGetAddressRange) mem_get_address_range = nullptr;
  decltype(&::cuTensorMapEncodeTiled) tensor_map_encode_tiled = nullptr;  // TMA tensor maps (sm_90)
};

// The driver functions, resolved on first use (once per process). Throws Error saying which
// symbol could not be resolved and why (no driver, driver too old) when they are unavailable.
const DriverApi& driver_api();

}  // namespace grt::cuda
