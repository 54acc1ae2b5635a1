#include "ops/fused_linear.h"

#include <cstdlib>
#include <cstring>

#include "core/env_switch.h"
#include "device/cpu/cpu_launch.h"
#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/linear.h"
#include "ops/op_checks.h"
#include "ops/rms_norm.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/gemv_fused.h"
#endif

namespace grt::ops {
namespace {

// GRAPHRT_DECODE_FUSION: 0 none, "norm" the norm and residual fusions only, "all" every fusion
// at any width, unset or "auto" every fusion with the width rule of rms_norm_linear_fusable,
// "nosilu" auto but silu_and_mul only together with a fused norm (as before
// silu_epilogue_fusable: an A/B baseline).
enum FusionLevel { kNone = 0, kNormOnly = 1, kAll = 2, kAuto = 3, kNoSilu = 4 };
int fusion_level() {
  static const int level = [] {
    constexpr int kLevels[] = {kAuto, kNone, kNormOnly, kAll, kNoSilu};
    return kLevels[env_choice("GRAPHRT_DECODE_FUSION", {"auto", "0", "norm", "all", "nosilu"}, 0)];
  }();
  return level;
}
bool width_rule() { return fusion_level() == kAuto || fusion_level() == kNoSilu; }

void check_rows_x(const char* op, const Tensor& x, const Tensor& w) {
  check_defined(op, x, "x");
  check_defined(op, w, "weight");
  GRT_CHECK(x.rank() == 2 && w.rank() == 2 && w.is_contiguous() && x.size(1) == w.size(1) &&
                (x.size(1) <= 1 || x.stride(1) == 1),
            "{}: x must be [T, in] with a contiguous last dim and w a contiguous [out, in], got x {} and w {}", op,
            x.str(), w.str());
  GRT_CHECK(x.dtype() == w.dtype(), "{}: x {} and weight {} differ in dtype", op, x.str(), w.str());
  check_same_device(op, x, w);
}

int64_t row_stride(const Tensor& x) { return x.size(0) > 1 ? x.stride(0) : x.size(1); }

#ifdef GRAPHRT_WITH_CUDA
bool cuda_fits(const Tensor& x, const Tensor& w) {
  return ::grt::cuda::small_m_fits(x.data(), row_stride(x), x.dtype(), w.data(), x.size(0), w.size(0), w.size(1));
}
#endif

}  // namespace

bool linear_fusable(const Tensor& x, const Tensor& w) {
  if (fusion_level() == 0) return false;
  check_rows_x("linear_fusable", x, w);
  if (x.device().is_cpu()) return true;
#ifdef GRAPHRT_WITH_CUDA
  return x.size(0) > 0 && cuda_fits(x, w);
#else
  return false;
#endif
}

Tensor rms_norm_linear(const Tensor& x, const Tensor& norm_w, float eps, const Tensor& w, const Tensor& bias) {
  const char* op = "rms_norm_linear";
  check_rows_x(op, x, w);
  if (x.device().is_cpu() || x.size(0) == 0) return linear(rms_norm(x, norm_w, eps), w, bias);
#ifdef GRAPHRT_WITH_CUDA
  check_vector(op, norm_w, "norm weight", x.dtype(), x.size(1));
  check_same_device(op, x, norm_w);
  if (bias.defined()) {
    check_vector(op, bias, "bias", bias.dtype(), w.size(0));
    check_same_device(op, x, bias);
  }
  GRT_CHECK(cuda_fits(x, w), "{}: x {} and weight {} do not fit the one-kernel path (check linear_fusable first)", op,
            x.str(), w.str());
  Tensor out = empty(Shape{x.size(0), w.size(0)}, x.dtype(), x.device());
  ::grt::cuda::rms_norm_linear_small_m(x.device(), x.data(), row_stride(x), x.dtype(), norm_w.data(), eps, w.data(),
                                       bias.defined() ? bias.data() : nullptr,
                                       bias.defined() ? bias.dtype() : x.dtype(), out.data(), x.size(0), w.size(0),
                                       w.size(1));
  return out;
#else
  fail_no_cuda(op, x);
#endif
}

bool rms_norm_linear_fusable(const Tensor& x, const Tensor& w) {
  if (!linear_fusable(x, w)) return false;
  return x.device().is_cpu() || !width_rule() || w.size(1) <= kNormPrologueMaxK;
}

bool silu_epilogue_fusable(const Tensor& x, const Tensor& gate_up) {
  return (fusion_level() == kAll || fusion_level() == kAuto) && gate_up.rank() == 2 && gate_up.size(0) % 2 == 0 &&
         linear_fusable(x, gate_up);
}

bool gate_up_silu_fusable(const Tensor& x, const Tensor& gate_up) {
  const bool silu = fusion_level() == kNoSilu || silu_epilogue_fusable(x, gate_up);  // nosilu: with a fused norm
  return silu && gate_up.rank() == 2 && gate_up.size(0) % 2 == 0 && rms_norm_linear_fusable(x, gate_up);
}

Tensor rms_norm_gate_up_silu(const Tensor& x, const Tensor& norm_w, float eps, const Tensor& gate_up) {
  const char* op = "rms_norm_gate_up_silu";
  check_rows_x(op, x, gate_up);
  GRT_CHECK(gate_up.size(0) % 2 == 0, "{}: gate_up {} must hold 2 x intermediate rows", op, gate_up.str());
  if (x.device().is_cpu() || x.size(0) == 0)
    return silu_and_mul(linear(norm_w.defined() ? rms_norm(x, norm_w, eps) : x, gate_up));
#ifdef GRAPHRT_WITH_CUDA
  if (norm_w.defined()) {
    check_vector(op, norm_w, "norm weight", x.dtype(), x.size(1));
    check_same_device(op, x, norm_w);
  }
  GRT_CHECK(cuda_fits(x, gate_up),
            "{}: x {} and gate_up {} do not fit the one-kernel path (check gate_up_silu_fusable first)", op, x.str(),
            gate_up.str());
  const int64_t inter = gate_up.size(0) / 2;
  Tensor out = empty(Shape{x.size(0), inter}, x.dtype(), x.device());
  ::grt::cuda::rms_norm_gate_up_silu_small_m(x.device(), x.data(), row_stride(x), x.dtype(),
                                             norm_w.defined() ? norm_w.data() : nullptr, eps,
                                             gate_up.data(), out.data(), x.size(0), inter, x.size(1));
  return out;
#else
  fail_no_cuda(op, x);
#endif
}

void linear_add_(const Tensor& x, const Tensor& w, const Tensor& residual) {
  const char* op = "linear_add_";
  check_rows_x(op, x, w);
  check_defined(op, residual, "residual");
  check_same_device(op, x, residual);
  GRT_CHECK(residual.rank() == 2 && residual.size(0) == x.size(0) && residual.size(1) == w.size(0) &&
                residual.dtype() == x.dtype() && (residual.size(1) <= 1 || residual.stride(1) == 1),
            "{}: residual must be [{}, {}] of {} with a contiguous last dim, got {}", op, x.size(0), w.size(0),
            dtype_name(x.dtype()), residual.str());
  GRT_CHECK(residual.data() != x.data(), "{}: residual {} and x {} share memory", op, residual.str(), x.str());
  if (x.size(0) == 0) return;
  if (x.device().is_cpu()) {
    // The reference: the f32 CPU path has no rounding to apply.
    check_cpu_f32(op, x);
    // out is freed stream-ordered, after the add has run.
    Tensor out = linear(x, w);
    const int64_t rows = x.size(0), n = w.size(0), rs = row_stride(residual);
    float* r = static_cast<float*>(residual.data());
    const float* o = static_cast<const float*>(out.data());
    ::grt::cpu::launch(current_stream(x.device()), [=] {
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < n; ++j) r[i * rs + j] += o[i * n + j];
    });
    return;
  }
#ifdef GRAPHRT_WITH_CUDA
  GRT_CHECK(cuda_fits(x, w), "{}: x {} and weight {} do not fit the one-kernel path (check linear_fusable first)", op,
            x.str(), w.str());
  ::grt::cuda::linear_add_small_m(x.device(), x.data(), row_stride(x), x.dtype(), w.data(), residual.data(),
                                  row_stride(residual), x.size(0), w.size(0), w.size(1));
#else
  fail_no_cuda(op, x);
#endif
}

}  // namespace grt::ops
