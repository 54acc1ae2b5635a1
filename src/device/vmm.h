// Virtual-memory primitives: reserve an address range, create a physical chunk, map a chunk at
// an address (with read/write access), unmap, release. CUDA: the driver's cuMem* calls. CPU:
// a PROT_NONE reservation, memfd chunks mapped MAP_SHARED|MAP_FIXED, so one chunk can show the
// same bytes at several addresses. All sizes and offsets are multiples of vmm_granularity().
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/device_id.h"

namespace grt {

size_t vmm_granularity(Device device);
// Rounds bytes up to the device's granularity.
size_t vmm_round_up(Device device, size_t bytes);

// A reserved address range with nothing mapped. Releasing it requires no live mappings in it.
class VirtualRange {
 public:
  VirtualRange(Device device, size_t bytes);
  ~VirtualRange();
  VirtualRange(VirtualRange&& o) noexcept;
  VirtualRange& operator=(VirtualRange&&) = delete;
  VirtualRange(const VirtualRange&) = delete;

  Device device() const { return device_; }
  char* base() const { return base_; }
  size_t size() const { return size_; }

 private:
  Device device_;
  char* base_ = nullptr;
  size_t size_ = 0;
};

// Physical memory not yet at any address.
class PhysicalChunk {
 public:
  PhysicalChunk(Device device, size_t bytes);
  ~PhysicalChunk();
  PhysicalChunk(PhysicalChunk&& o) noexcept;
  PhysicalChunk& operator=(PhysicalChunk&&) = delete;
  PhysicalChunk(const PhysicalChunk&) = delete;

  Device device() const { return device_; }
  size_t size() const { return size_; }
  uint64_t handle() const { return handle_; }

 private:
  Device device_;
  size_t size_ = 0;
  uint64_t handle_ = 0;
};

// `chunk` mapped read/write at `range.base() + offset` until destroyed.
class ChunkMapping {
 public:
  ChunkMapping(const VirtualRange& range, size_t offset, const PhysicalChunk& chunk);
  ~ChunkMapping();
  ChunkMapping(ChunkMapping&& o) noexcept;
  ChunkMapping& operator=(ChunkMapping&&) = delete;
  ChunkMapping(const ChunkMapping&) = delete;

  void* address() const { return address_; }
  size_t size() const { return size_; }

 private:
  Device device_;
  void* address_ = nullptr;
  size_t size_ = 0;
};

}  // namespace grt
