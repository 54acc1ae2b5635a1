#include "ops/op_checks.h"

namespace grt::ops {

void check_defined(const char* op, const Tensor& t, const char* what) {
  GRT_CHECK(t.defined(), "{}: {} is an undefined tensor", op, what);
}

void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  GRT_CHECK(a.device() == b.device(), "{}: tensors on different devices: {} and {}", op, a.str(), b.str());
}

void check_vector(const char* op, const Tensor& t, const char* what, DType dtype, int64_t length) {
  check_defined(op, t, what);
  GRT_CHECK(t.rank() == 1 && t.is_contiguous(), "{}: {} must be a contiguous vector, got {}", op, what, t.str());
  GRT_CHECK(t.dtype() == dtype, "{}: {} must be {}, got {}", op, what, dtype_name(dtype), t.str());
  GRT_CHECK(length < 0 || t.size(0) == length, "{}: {} must have {} elements, got {}", op, what, length, t.str());
}

void fail_no_cuda(const char* op, const Tensor& t) { GRT_FAIL("{} on {}: graphrt was built without CUDA", op, t.str()); }

void check_cpu_f32(const char* op, const Tensor& t) {
  GRT_CHECK(t.dtype() == DType::F32, "{} on the CPU supports f32 only, got {} ({})", op, dtype_name(t.dtype()),
            t.str());
}

}  // namespace grt::ops
