#include "ops/kernel_params.h"

namespace grt::ops {

RowLayout row_layout(const Tensor& t, const char* op) {
  const size_t r = t.rank();
  GRT_CHECK(r >= 1, "{}: needs a tensor of rank >= 1, got {}", op, t.str());
  GRT_CHECK(t.size(-1) <= 1 || t.stride(-1) == 1, "{}: the last dimension must be contiguous, got {} with strides {}",
            op, t.str(), fmt::join(t.strides(), ", "));
  RowLayout l;
  if (r == 1) {
    l.rows = 1;
    return l;
  }
  if (r == 2) {
    l.rows = t.size(0);
    l.outer_stride = t.stride(0);
    return l;
  }
  if (r == 3) {
    l.rows = t.size(0) * t.size(1);
    l.inner = t.size(1) > 0 ? t.size(1) : 1;
    l.outer_stride = t.stride(0);
    l.inner_stride = t.stride(1);
    return l;
  }
  // Rank > 3: dims 0..r-2 must collapse into one row stride.
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < r; ++d) rows *= t.shape()[d];
  int64_t expect = t.stride(static_cast<int>(r) - 2);
  for (size_t d = r - 2; d-- > 0;) {
    expect *= t.shape()[d + 1];
    GRT_CHECK(t.shape()[d] <= 1 || t.strides()[d] == expect,
              "{}: cannot see {} (strides {}) as rows of its last dimension", op, t.str(), fmt::join(t.strides(), ", "));
  }
  l.rows = rows;
  l.outer_stride = t.stride(static_cast<int>(r) - 2);
  return l;
}

}  // namespace grt::ops
