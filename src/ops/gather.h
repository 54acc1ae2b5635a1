// Row gather: picks rows of a matrix by a device index vector (e.g. the last token of each request).
#pragma once
#include "core/tensor.h"

namespace grt::ops {

// out[i, :] = x[index[i], :]. x: [T, H] (any dtype; last dim contiguous, any row stride),
// index: i32 [N] contiguous, same device. Returns a contiguous [N, H] of x's dtype. An index
// outside [0, T) yields a row of zeros (never an out-of-bounds read).
Tensor gather_rows(const Tensor& x, const Tensor& index);

}  // namespace grt::ops
