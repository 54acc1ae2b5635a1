#include "core/tensor.h"

namespace grt {

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> st(shape.rank());
  int64_t s = 1;
  for (size_t i = shape.rank(); i-- > 0;) {
    st[i] = s;
    s *= shape[i];
  }
  return st;
}

namespace {
void check_extents(const Shape& shape) {
  for (auto d : shape.dims()) GRT_CHECK(d >= 0, "negative extent in shape {}", shape.str());
}
}  // namespace

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype, int64_t offset)
    : Tensor(std::move(storage), shape, contiguous_strides(shape), dtype, offset) {}

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, std::vector<int64_t> strides, DType dtype,
               int64_t offset)
    : storage_(std::move(storage)), shape_(std::move(shape)), strides_(std::move(strides)), offset_(offset),
      dtype_(dtype) {
  GRT_CHECK(storage_, "tensor {} built without storage", shape_.str());
  check_extents(shape_);
  GRT_CHECK(strides_.size() == shape_.rank(), "shape {} has rank {} but {} strides given", shape_.str(),
            shape_.rank(), strides_.size());
  GRT_CHECK(offset_ >= 0, "negative offset {}", offset_);
  if (numel() == 0) return;
  // The furthest element must lie inside the storage.
  int64_t last = offset_;
  for (size_t i = 0; i < shape_.rank(); ++i) {
    GRT_CHECK(strides_[i] >= 0, "negative stride in tensor of shape {}", shape_.str());
    last += (shape_[i] - 1) * strides_[i];
  }
  size_t need = static_cast<size_t>(last + 1) * dtype_size(dtype_);
  GRT_CHECK(need <= storage_->bytes(), "view {} of {} at offset {} needs {} bytes but storage has {}",
            shape_.str(), dtype_name(dtype_), offset_, need, storage_->bytes());
}

Tensor Tensor::from_blob(void* data, Shape shape, DType dtype, Device device) {
  size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  return Tensor(std::make_shared<Storage>(data, bytes, device), std::move(shape), dtype);
}

Device Tensor::device() const {
  GRT_CHECK(defined(), "device() of an undefined tensor");
  return storage_->device();
}

int Tensor::norm_dim(int d) const {
  int r = static_cast<int>(rank());
  int n = d < 0 ? d + r : d;
  GRT_CHECK(n >= 0 && n < r, "dimension {} out of range for tensor {}", d, str());
  return n;
}

int64_t Tensor::size(int d) const { return shape_[static_cast<size_t>(norm_dim(d))]; }
int64_t Tensor::stride(int d) const { return strides_[static_cast<size_t>(norm_dim(d))]; }

void* Tensor::data() const {
  GRT_CHECK(defined(), "data() of an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(element_size());
}

bool Tensor::is_contiguous() const {
  int64_t expect = 1;
  for (size_t i = rank(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expect) return false;
    expect *= shape_[i];
  }
  return true;
}

Tensor Tensor::slice(int d, int64_t start, int64_t end) const {
  int n = norm_dim(d);
  int64_t extent = shape_[static_cast<size_t>(n)];
  GRT_CHECK(0 <= start && start <= end && end <= extent, "slice [{}, {}) of dimension {} of tensor {}", start,
            end, d, str());
  Shape s = shape_;
  s[static_cast<size_t>(n)] = end - start;
  return Tensor(storage_, s, strides_, dtype_, offset_ + start * strides_[static_cast<size_t>(n)]);
}

Tensor Tensor::narrow(int d, int64_t start, int64_t length) const {
  GRT_CHECK(length >= 0, "narrow with negative length {} of tensor {}", length, str());
  return slice(d, start, start + length);
}

Tensor Tensor::select(int d, int64_t index) const {
  int n = norm_dim(d);
  GRT_CHECK(index >= 0 && index < shape_[static_cast<size_t>(n)], "index {} out of range for dimension {} of {}",
            index, d, str());
  std::vector<int64_t> dims = shape_.dims(), st = strides_;
  int64_t off = offset_ + index * st[static_cast<size_t>(n)];
  dims.erase(dims.begin() + n);
  st.erase(st.begin() + n);
  return Tensor(storage_, Shape(dims), st, dtype_, off);
}

Tensor Tensor::view(Shape shape) const {
  GRT_CHECK(is_contiguous(), "view {} of non-contiguous tensor {}", shape.str(), str());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.rank(); ++i) {
    if (shape[i] == -1) {
      GRT_CHECK(infer < 0, "view {} has more than one -1", shape.str());
      infer = static_cast<int>(i);
    } else {
      GRT_CHECK(shape[i] >= 0, "view {} has a negative extent", shape.str());
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    GRT_CHECK(known > 0 && numel() % known == 0, "cannot view tensor {} as {}", str(), shape.str());
    shape[static_cast<size_t>(infer)] = numel() / known;
  }
  GRT_CHECK(shape.numel() == numel(), "cannot view tensor {} ({} elements) as {}", str(), numel(), shape.str());
  return Tensor(storage_, shape, contiguous_strides(shape), dtype_, offset_);
}

Tensor Tensor::transpose(int d0, int d1) const {
  int a = norm_dim(d0), b = norm_dim(d1);
  std::vector<int64_t> dims = shape_.dims(), st = strides_;
  std::swap(dims[static_cast<size_t>(a)], dims[static_cast<size_t>(b)]);
  std::swap(st[static_cast<size_t>(a)], st[static_cast<size_t>(b)]);
  return Tensor(storage_, Shape(dims), st, dtype_, offset_);
}

Tensor Tensor::borrow() const {
  GRT_CHECK(defined(), "borrow() of an undefined tensor");
  auto weak = std::make_shared<Storage>(storage_->data(), storage_->bytes(), storage_->device());
  return Tensor(weak, shape_, strides_, dtype_, offset_);
}

std::string Tensor::str() const {
  if (!defined()) return "undefined tensor";
  return std::string(dtype_name(dtype_)) + shape_.str() + " on " + device().str();
}

}  // namespace grt
