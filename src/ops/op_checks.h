// Host-side argument checks shared by the dense ops: each Error names the op and the tensors.
#pragma once
#include "core/tensor.h"

namespace grt::ops {

// `t` is defined; `what` names the argument ("x", "weight").
void check_defined(const char* op, const Tensor& t, const char* what);
// `a` and `b` live on the same device.
void check_same_device(const char* op, const Tensor& a, const Tensor& b);
// `t` is a contiguous rank-1 tensor of `dtype`, optionally of length `length` (>= 0).
void check_vector(const char* op, const Tensor& t, const char* what, DType dtype, int64_t length = -1);
// The Error for a CUDA tensor in a build without CUDA.
[[noreturn]] void fail_no_cuda(const char* op, const Tensor& t);
// CPU implementations are float32 references: Error naming the op and dtype otherwise.
void check_cpu_f32(const char* op, const Tensor& t);

}  // namespace grt::ops
