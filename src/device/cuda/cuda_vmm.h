// CUDA virtual memory through the driver API (cuMemAddressReserve, cuMemCreate, cuMemMap, ...),
// internal to device/cuda: the backend forwards its vmm_* calls here. Every failure names the
// driver call, the sizes and the device.
#pragma once
#include <cstddef>
#include <cstdint>

namespace grt::cuda {

// Minimum granularity of pinned device memory on cuda:index (cached per device).
size_t vmm_granularity(int index);
void* vmm_reserve(int index, size_t bytes);
void vmm_release_range(int index, void* base, size_t bytes);
// Returns the CUmemGenericAllocationHandle of `bytes` of physical memory on cuda:index.
uint64_t vmm_create_chunk(int index, size_t bytes);
void vmm_release_chunk(int index, uint64_t handle, size_t bytes);
// Maps the chunk at addr and grants cuda:index read/write access to it.
void vmm_map(int index, void* addr, size_t bytes, uint64_t handle);
void vmm_unmap(int index, void* addr, size_t bytes);

}  // namespace grt::cuda
