#include "memory/tensor_alloc.h"

#include <memory>

#include "core/logging.h"
#include "device/capture_state.h"
#include "device/cpu/cpu_launch.h"
#include "device/stream.h"
#include "memory/caching_allocator.h"

namespace grt {
namespace {

size_t bytes_of(const Shape& shape, DType dtype) {
  for (auto d : shape.dims()) GRT_CHECK(d >= 0, "negative extent in shape {}", shape.str());
  return static_cast<size_t>(shape.numel()) * dtype_size(dtype);
}

// Storage whose bytes go back to the device's allocator when the last owner lets go.
std::shared_ptr<Storage> allocate_storage(size_t bytes, Device device, Stream& stream) {
  auto& alloc = CachingAllocator::get(device);
  void* p = alloc.allocate(bytes, stream);
  return std::make_shared<Storage>(p, bytes, device, [&alloc](void* ptr) {
    try {
      alloc.free(ptr);
    } catch (const std::exception& e) {  // a destructor must not throw
      GRT_ERROR("freeing tensor memory failed: {}", e.what());
    }
  });
}

}  // namespace

Tensor empty(const Shape& shape, DType dtype, Device device) {
  size_t bytes = bytes_of(shape, dtype);
  return Tensor(allocate_storage(bytes, device, current_stream(device)), shape, dtype);
}

Tensor empty_like(const Tensor& t) {
  GRT_CHECK(t.defined(), "empty_like of an undefined tensor");
  return empty(t.shape(), t.dtype(), t.device());
}

Tensor zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (t.nbytes() > 0) current_stream(device).memset_async(t.data(), 0, t.nbytes());
  return t;
}

// The caller may free `data` as soon as we return, while the copy is stream-ordered (the new
// block may be reused memory whose earlier work is still queued, so a synchronous copy would
// race). Therefore:
//  - CPU: the bytes are staged in a heap buffer that a no-op task enqueued after the copy keeps
//    alive; it is released when the stream drops that task, i.e. after the copy ran.
//  - CUDA: the copy is followed by a stream synchronize.
// Refused during capture on both (CUDA cannot capture a copy from pageable host memory, and a
// captured copy would replay stale bytes): fill persistent buffers before capturing.
Tensor from_host(const void* data, const Shape& shape, DType dtype, Device device) {
  Stream& stream = current_stream(device);
  refuse_during_capture("from_host (a copy from host memory)", &stream);
  size_t bytes = bytes_of(shape, dtype);
  GRT_CHECK(data || bytes == 0, "from_host of a null pointer for {} {}", dtype_name(dtype), shape.str());
  Tensor t(allocate_storage(bytes, device, stream), shape, dtype);
  if (bytes == 0) return t;
  if (device.is_cpu()) {
    auto staging = std::make_shared<std::vector<char>>(static_cast<const char*>(data),
                                                       static_cast<const char*>(data) + bytes);
    stream.copy_async(t.data(), staging->data(), bytes);
    cpu::launch(stream, [staging] {});
  } else {
    stream.copy_async(t.data(), data, bytes);
    stream.synchronize();
  }
  return t;
}

Tensor from_floats(const std::vector<float>& values, const Shape& shape, DType dtype, Device device) {
  GRT_CHECK(dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16,
            "from_floats stores f32, f16 or bf16, not {}", dtype_name(dtype));
  GRT_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "{} values for shape {}", values.size(),
            shape.str());
  if (dtype == DType::F32) return from_host(values.data(), shape, dtype, device);
  std::vector<uint16_t> half(values.size());
  convert_elements(values.data(), DType::F32, half.data(), dtype, values.size());
  return from_host(half.data(), shape, dtype, device);
}

void copy_to_host(const Tensor& t, void* dst) {
  GRT_CHECK(t.defined(), "copy_to_host of an undefined tensor");
  GRT_CHECK(t.is_contiguous(), "copy_to_host needs a contiguous tensor, got {}", t.str());
  if (t.nbytes() == 0) return;
  current_stream(t.device()).copy_to_host(dst, t.data(), t.nbytes());
}

std::vector<float> to_host_floats(const Tensor& t) {
  GRT_CHECK(t.defined(), "to_host_floats of an undefined tensor");
  GRT_CHECK(is_floating(t.dtype()), "to_host_floats of a non-floating tensor {}", t.str());
  std::vector<char> raw(t.nbytes());
  copy_to_host(t, raw.data());
  std::vector<float> out(static_cast<size_t>(t.numel()));
  convert_elements(raw.data(), t.dtype(), out.data(), DType::F32, out.size());
  return out;
}

}  // namespace grt
