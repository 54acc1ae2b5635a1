#include "ops/activation.h"

#include "memory/tensor_alloc.h"
#include "ops/cpu/dense_cpu.h"
#include "ops/op_checks.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/dense_cuda.h"
#endif

namespace grt::ops {

Tensor silu_and_mul(const Tensor& x) {
  const char* op = "silu_and_mul";
  check_defined(op, x, "x");
  GRT_CHECK(x.rank() == 2 && x.size(1) % 2 == 0, "{}: x must be [T, 2*I], got {}", op, x.str());
  GRT_CHECK(x.size(1) <= 1 || x.stride(1) == 1, "{}: the last dimension of x must be contiguous, got {}", op, x.str());
  const int64_t rows = x.size(0), inter = x.size(1) / 2;
  if (x.device().is_cpu()) check_cpu_f32(op, x);
  Tensor out = empty(Shape{rows, inter}, x.dtype(), x.device());
  if (rows == 0 || inter == 0) return out;
  if (x.device().is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    ::grt::cuda::silu_and_mul(x.device(), x.dtype(), x.data(), x.stride(0), out.data(), rows, inter);
#else
    fail_no_cuda(op, x);
#endif
  } else {
    ::grt::cpu::silu_and_mul(x.device(), x.dtype(), x.data(), x.stride(0), out.data(), rows, inter);
  }
  return out;
}

}  // namespace grt::ops
