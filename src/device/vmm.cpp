#include "device/vmm.h"

#include <exception>

#include "core/error.h"
#include "core/logging.h"
#include "device/backend.h"
#include "device/device.h"

namespace grt {

namespace {
// Destructors cannot throw: a failed unmap or release (a dying context, a driver error) is
// logged and the resource given up, instead of terminating the process.
template <class F>
void release_in_destructor(const char* what, F&& release) noexcept {
  try {
    release();
  } catch (const std::exception& e) {
    GRT_WARN("{} failed while destroying it: {}", what, e.what());
  }
}
}  // namespace

size_t vmm_granularity(Device d) {
  check_device(d);
  return backend(d.type).vmm_granularity(d.index);
}

size_t vmm_round_up(Device d, size_t bytes) {
  size_t g = vmm_granularity(d);
  return (bytes + g - 1) / g * g;
}

VirtualRange::VirtualRange(Device d, size_t bytes) : device_(d), size_(vmm_round_up(d, bytes)) {
  GRT_CHECK(bytes > 0, "reserving an empty virtual range on {}", d.str());
  base_ = static_cast<char*>(backend(d.type).vmm_reserve(d.index, size_));
}

VirtualRange::~VirtualRange() {
  if (base_)
    release_in_destructor("releasing a virtual range",
                          [&] { backend(device_.type).vmm_release_range(device_.index, base_, size_); });
}

VirtualRange::VirtualRange(VirtualRange&& o) noexcept : device_(o.device_), base_(o.base_), size_(o.size_) {
  o.base_ = nullptr;
  o.size_ = 0;
}

PhysicalChunk::PhysicalChunk(Device d, size_t bytes) : device_(d), size_(vmm_round_up(d, bytes)) {
  GRT_CHECK(bytes > 0, "creating an empty physical chunk on {}", d.str());
  handle_ = backend(d.type).vmm_create_chunk(d.index, size_);
}

PhysicalChunk::~PhysicalChunk() {
  if (size_)
    release_in_destructor("releasing a physical chunk",
                          [&] { backend(device_.type).vmm_release_chunk(device_.index, handle_, size_); });
}

PhysicalChunk::PhysicalChunk(PhysicalChunk&& o) noexcept : device_(o.device_), size_(o.size_), handle_(o.handle_) {
  o.size_ = 0;
  o.handle_ = 0;
}

ChunkMapping::ChunkMapping(const VirtualRange& range, size_t offset, const PhysicalChunk& chunk)
    : device_(range.device()), size_(chunk.size()) {
  GRT_CHECK(range.device() == chunk.device(), "mapping a chunk of {} into a range of {}", chunk.device().str(),
            range.device().str());
  GRT_CHECK(offset % vmm_granularity(device_) == 0, "mapping offset {} is not a multiple of the granularity",
            offset);
  GRT_CHECK(offset + chunk.size() <= range.size(), "mapping {} bytes at offset {} overruns a {}-byte range",
            chunk.size(), offset, range.size());
  address_ = range.base() + offset;
  backend(device_.type).vmm_map(device_.index, address_, size_, chunk.handle());
}

ChunkMapping::~ChunkMapping() {
  if (address_)
    release_in_destructor("unmapping a chunk", [&] { backend(device_.type).vmm_unmap(device_.index, address_, size_); });
}

ChunkMapping::ChunkMapping(ChunkMapping&& o) noexcept : device_(o.device_), address_(o.address_), size_(o.size_) {
  o.address_ = nullptr;
  o.size_ = 0;
}

}  // namespace grt
