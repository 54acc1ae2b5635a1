#include "ops/rms_norm.h"

#include "memory/tensor_alloc.h"
#include "ops/cpu/dense_cpu.h"
#include "ops/kernel_params.h"
#include "ops/op_checks.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/dense_cuda.h"
#endif

namespace grt::ops {
namespace {

void check_weight(const char* op, const Tensor& x, const Tensor& w) {
  check_defined(op, x, "x");
  GRT_CHECK(x.rank() >= 1 && x.size(-1) > 0, "{}: x must have a non-empty last dimension, got {}", op, x.str());
  check_vector(op, w, "weight", x.dtype(), x.size(-1));
  check_same_device(op, x, w);
  if (x.device().is_cpu()) check_cpu_f32(op, x);
}

void run_norm([[maybe_unused]] const char* op, const Tensor& x, const RowLayout& xl, const Tensor& out, const RowLayout& ol,
              const Tensor& w, float eps) {
  if (xl.rows == 0) return;
  const int64_t hidden = x.size(-1);
  if (x.device().is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    ::grt::cuda::rms_norm(x.device(), x.dtype(), x.data(), xl, out.data(), ol, w.data(), hidden, eps);
#else
    fail_no_cuda(op, x);
#endif
  } else {
    ::grt::cpu::rms_norm(x.device(), x.dtype(), x.data(), xl, out.data(), ol, w.data(), hidden, eps);
  }
}

}  // namespace

Tensor rms_norm(const Tensor& x, const Tensor& w, float eps) {
  check_weight("rms_norm", x, w);
  RowLayout xl = row_layout(x, "rms_norm");
  Tensor out = empty(x.shape(), x.dtype(), x.device());
  RowLayout ol = row_layout(out, "rms_norm");
  run_norm("rms_norm", x, xl, out, ol, w, eps);
  return out;
}

void rms_norm_(const Tensor& x, const Tensor& w, float eps) {
  check_weight("rms_norm_", x, w);
  GRT_CHECK(x.rank() == 2 || x.rank() == 3, "rms_norm_: x must be of rank 2 or 3, got {}", x.str());
  RowLayout xl = row_layout(x, "rms_norm_");
  run_norm("rms_norm_", x, xl, x, xl, w, eps);
}

void fused_add_rms_norm_(const Tensor& x, const Tensor& residual, const Tensor& w, float eps) {
  const char* op = "fused_add_rms_norm_";
  check_weight(op, x, w);
  check_defined(op, residual, "residual");
  check_same_device(op, x, residual);
  GRT_CHECK(x.rank() == 2 && residual.shape() == x.shape() && residual.dtype() == x.dtype(),
            "{}: x and residual must be [T, H] of one dtype, got {} and {}", op, x.str(), residual.str());
  RowLayout xl = row_layout(x, op), rl = row_layout(residual, op);
  const int64_t rows = x.size(0), hidden = x.size(1);
  if (rows == 0) return;
  if (x.device().is_cuda()) {
#ifdef GRAPHRT_WITH_CUDA
    ::grt::cuda::fused_add_rms_norm(x.device(), x.dtype(), x.data(), xl.outer_stride, residual.data(),
                                    rl.outer_stride, w.data(), rows, hidden, eps);
#else
    fail_no_cuda(op, x);
#endif
  } else {
    ::grt::cpu::fused_add_rms_norm(x.device(), x.dtype(), x.data(), xl.outer_stride, residual.data(),
                                   rl.outer_stride, w.data(), rows, hidden, eps);
  }
}

}  // namespace grt::ops
