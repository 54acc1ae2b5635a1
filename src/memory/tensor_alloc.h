// Making tensors: memory comes from the device's CachingAllocator, stream-ordered on the
// device's current stream (so during capture it comes from the capture's graph pool).
#pragma once
#include <cstring>
#include <vector>

#include "core/tensor.h"

namespace grt {

// Uninitialised contents.
Tensor empty(const Shape& shape, DType dtype, Device device);
Tensor empty_like(const Tensor& t);
// Filled with zero bytes (stream-ordered memset).
Tensor zeros(const Shape& shape, DType dtype, Device device);
// A new tensor holding a copy of `shape.numel()` contiguous host elements of `dtype`.
Tensor from_host(const void* data, const Shape& shape, DType dtype, Device device);
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, DType dtype, Device device) {
  GRT_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "{} values for shape {}", values.size(),
            shape.str());
  GRT_CHECK(sizeof(T) == dtype_size(dtype), "host element size {} does not match {}", sizeof(T),
            dtype_name(dtype));
  return from_host(values.data(), shape, dtype, device);
}
// Float values stored as `dtype` (f32, f16 or bf16; rounded to nearest even).
Tensor from_floats(const std::vector<float>& values, const Shape& shape, DType dtype, Device device);

// Waits for the tensor's device work (current stream), then copies its bytes to host memory.
// The tensor must be contiguous. Refused during capture (a host read of device memory).
void copy_to_host(const Tensor& t, void* dst);
template <typename T>
std::vector<T> to_host_vector(const Tensor& t) {
  GRT_CHECK(sizeof(T) == t.element_size(), "reading {} as {}-byte elements", t.str(), sizeof(T));
  std::vector<T> out(static_cast<size_t>(t.numel()));
  copy_to_host(t, out.data());
  return out;
}
// Any floating tensor's values as float32.
std::vector<float> to_host_floats(const Tensor& t);

}  // namespace grt
