// The interface each device type implements (device/cpu, device/cuda). Only the device layer
// sees it; everything above uses device.h, stream.h, event.h, graph.h and vmm.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/device_id.h"

namespace grt {

class Stream;
class Event;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual int device_count() = 0;
  virtual std::string name(int index) = 0;
  virtual size_t total_memory(int index) = 0;
  virtual void synchronize(int index) = 0;
  virtual void* malloc(int index, size_t bytes) = 0;
  virtual void free(int index, void* ptr) = 0;
  virtual std::shared_ptr<Stream> new_stream(int index) = 0;
  virtual std::unique_ptr<Event> new_event(int index, bool timing) = 0;

  virtual size_t vmm_granularity(int index) = 0;
  virtual void* vmm_reserve(int index, size_t bytes) = 0;
  virtual void vmm_release_range(int index, void* base, size_t bytes) = 0;
  virtual uint64_t vmm_create_chunk(int index, size_t bytes) = 0;
  virtual void vmm_release_chunk(int index, uint64_t handle, size_t bytes) = 0;
  // Maps the chunk at addr and grants read/write access to it.
  virtual void vmm_map(int index, void* addr, size_t bytes, uint64_t handle) = 0;
  virtual void vmm_unmap(int index, void* addr, size_t bytes) = 0;
};

// The backend of a device type. For CUDA, throws Error when graphrt was built without CUDA.
Backend& backend(DeviceType type);

// Defined by device/cpu/ and (when built with CUDA) device/cuda/.
Backend& cpu_backend();
Backend* cuda_backend();  // nullptr when built without CUDA

}  // namespace grt
