// A tensor's extents. Small, value-typed, printable.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace grt {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  size_t rank() const { return dims_.size(); }
  int64_t operator[](size_t i) const { return dims_.at(i); }
  int64_t& operator[](size_t i) { return dims_.at(i); }
  // Product of the extents (1 for a scalar).
  int64_t numel() const {
    int64_t n = 1;
    for (auto d : dims_) n *= d;
    return n;
  }
  const std::vector<int64_t>& dims() const { return dims_; }
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }
  // "[2, 3, 4]"
  std::string str() const {
    std::string s = "[";
    for (size_t i = 0; i < dims_.size(); ++i) s += (i ? ", " : "") + std::to_string(dims_[i]);
    return s + "]";
  }

 private:
  std::vector<int64_t> dims_;
};

}  // namespace grt
