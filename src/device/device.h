// What devices exist and the raw, uncached operations on them. Everything that allocates in
// graphrt goes through memory/CachingAllocator, which sits on device_malloc/device_free.
#pragma once
#include <cstddef>
#include <string>

#include "core/device_id.h"

namespace grt {

// Number of devices of a type (CPU: 1; CUDA: 0 when built without CUDA or no GPU/driver).
int device_count(DeviceType type);
bool cuda_available();
// cuda:0 when a GPU is usable, else cpu.
Device default_device();
// Throws Error when `device` does not exist here, saying why ("built without CUDA", "no CUDA
// device on this machine", "cuda:3 requested but 1 CUDA device").
void check_device(Device device);
std::string device_name(Device device);
size_t device_total_memory(Device device);
// Blocks until all work on all streams of the device ran. Refused during capture.
void device_synchronize(Device device);
// Raw allocation (cudaMalloc / aligned host allocation), 256-byte aligned.
void* device_malloc(Device device, size_t bytes);
void device_free(Device device, void* ptr);

}  // namespace grt
