// Tensor: a strided view (shape, strides, element offset, dtype) on a ref-counted Storage.
// Views share their Storage; a borrowed view (borrow()) shares the bytes but not ownership —
// the seeds' weak tensor reference: whoever allocated the memory may free or reuse it.
// Allocation and copies live above core (memory/tensor_alloc.h, ops/copy.h).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device_id.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"

namespace grt {

// Bytes on a device. The deleter (if any) runs once, when the last owner lets go.
class Storage {
 public:
  using Deleter = std::function<void(void*)>;
  Storage(void* data, size_t bytes, Device device, Deleter deleter = nullptr)
      : data_(data), bytes_(bytes), device_(device), deleter_(std::move(deleter)) {}
  ~Storage() {
    if (deleter_) deleter_(data_);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  bool owning() const { return static_cast<bool>(deleter_); }

 private:
  void* data_;
  size_t bytes_;
  Device device_;
  Deleter deleter_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  // A contiguous tensor over `storage`, starting `offset` elements in.
  Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype, int64_t offset = 0);
  Tensor(std::shared_ptr<Storage> storage, Shape shape, std::vector<int64_t> strides, DType dtype,
         int64_t offset);
  // A non-owning contiguous view of memory someone else owns.
  static Tensor from_blob(void* data, Shape shape, DType dtype, Device device);

  bool defined() const { return static_cast<bool>(storage_); }
  const Shape& shape() const { return shape_; }
  size_t rank() const { return shape_.rank(); }
  // Extent of dimension d; negative d counts from the end.
  int64_t size(int d) const;
  int64_t numel() const { return shape_.numel(); }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t stride(int d) const;
  int64_t offset() const { return offset_; }
  DType dtype() const { return dtype_; }
  Device device() const;
  size_t element_size() const { return dtype_size(dtype_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  bool owns_memory() const { return storage_ && storage_->owning(); }

  // Address of the first element.
  void* data() const;
  // Typed address; throws if T's size does not match the dtype's.
  template <typename T>
  T* data_as() const {
    GRT_CHECK(sizeof(T) == element_size(), "tensor {} viewed as a {}-byte type", str(), sizeof(T));
    return static_cast<T*>(data());
  }

  bool is_contiguous() const;
  // Elements [start, end) of dimension d (negative d counts from the end). A view.
  Tensor slice(int d, int64_t start, int64_t end) const;
  // `length` elements of dimension d starting at `start`. A view.
  Tensor narrow(int d, int64_t start, int64_t length) const;
  // Removes dimension d by picking `index`. A view.
  Tensor select(int d, int64_t index) const;
  // Same elements, new shape (one extent may be -1). Needs a contiguous tensor. A view.
  Tensor view(Shape shape) const;
  // Dimensions d0 and d1 swapped. A view.
  Tensor transpose(int d0, int d1) const;
  // A view of the same bytes that does not keep them alive.
  Tensor borrow() const;

  // "bf16[2, 3] on cuda:0"
  std::string str() const;

 private:
  int norm_dim(int d) const;

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::F32;
};

// Row-major strides of a shape.
std::vector<int64_t> contiguous_strides(const Shape& shape);

}  // namespace grt
