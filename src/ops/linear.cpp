#include "ops/linear.h"

#include "memory/tensor_alloc.h"
#include "ops/cpu/dense_cpu.h"
#include "ops/op_checks.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/dense_cuda.h"
#endif

namespace grt::ops {

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias, DType out_dtype) {
  const char* op = "linear";
  check_defined(op, x, "x");
  check_defined(op, w, "weight");
  GRT_CHECK(w.rank() == 2 && w.is_contiguous(), "{}: weight must be a contiguous [out, in], got {}", op, w.str());
  GRT_CHECK(x.rank() >= 2 && x.size(-1) == w.size(1), "{}: x {} does not match weight {} (x must be [T, {}])", op,
            x.str(), w.str(), w.size(1));
  GRT_CHECK(x.dtype() == w.dtype(), "{}: x {} and weight {} differ in dtype", op, x.str(), w.str());
  check_same_device(op, x, w);
  const int64_t N = w.size(0), K = w.size(1);
  if (bias.defined()) {
    check_vector(op, bias, "bias", bias.dtype(), N);
    check_same_device(op, x, bias);
  }
  Tensor x2 = x;
  if (x.rank() > 2) {
    GRT_CHECK(x.is_contiguous(), "{}: x of rank {} must be contiguous, got {}", op, x.rank(), x.str());
    x2 = x.view(Shape{x.numel() / K, K});
  }
  GRT_CHECK(x2.size(1) <= 1 || x2.stride(1) == 1, "{}: the last dimension of x must be contiguous, got {}", op,
            x.str());
  const int64_t M = x2.size(0);
  std::vector<int64_t> out_dims = x.shape().dims();
  out_dims.back() = N;
  if (x.device().is_cpu()) {
    check_cpu_f32(op, x);
    GRT_CHECK(out_dtype == DType::F32 && (!bias.defined() || bias.dtype() == DType::F32),
              "{} on the CPU supports f32 only, got output {}{}", op, dtype_name(out_dtype),
              bias.defined() ? fmt::format(" and bias {}", bias.str()) : std::string());
  }
  GRT_CHECK(K > 0, "{}: the inner dimension is empty (x {}, weight {})", op, x.str(), w.str());
  Tensor out = empty(Shape(out_dims), out_dtype, x.device());
  if (M == 0 || N == 0) return out;
  const void* b = bias.defined() ? bias.data() : nullptr;
  const DType bdt = bias.defined() ? bias.dtype() : out_dtype;
  const int64_t x_stride = M > 1 ? x2.stride(0) : K;
  GRT_CHECK(x_stride >= K, "{}: rows of x overlap (row stride {} < {}) in {}", op, x_stride, K, x.str());
  if (x.device().is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    ::grt::cuda::linear(x.device(), x2.data(), x_stride, x.dtype(), w.data(), b, bdt, out.data(), out_dtype, M, N, K);
#else
    fail_no_cuda(op, x);
#endif
  } else {
    ::grt::cpu::linear(x.device(), x2.data(), x_stride, x.dtype(), w.data(), b, bdt, out.data(), out_dtype, M, N, K);
  }
  return out;
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  GRT_CHECK(x.defined(), "linear: x is an undefined tensor");
  return linear(x, w, bias, x.dtype());
}

}  // namespace grt::ops
