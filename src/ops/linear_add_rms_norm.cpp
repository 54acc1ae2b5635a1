#include "ops/linear_add_rms_norm.h"

#include <atomic>

#include "core/env_switch.h"
#include "core/error.h"
#include "memory/tensor_alloc.h"
#include "ops/linear.h"
#include "ops/op_checks.h"
#include "ops/rms_norm.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/dense_cuda.h"
#endif

namespace grt::ops {
namespace {

bool cuts(int64_t k, int splits) { return splits >= 2 && k % splits == 0 && (k / splits) % 8 == 0; }

std::atomic<int> g_mode_override{-1};  // a SplitKAddNorm, or -1: the environment's
std::atomic<int64_t> g_calls{0};

}  // namespace

SplitKAddNorm split_k_add_norm_mode_from_env() {
  return static_cast<SplitKAddNorm>(env_choice("GRAPHRT_SPLITK_ADD_NORM", {"0", "auto", "1"}, 1));
}

SplitKAddNorm split_k_add_norm_mode() {
  const int forced = g_mode_override.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<SplitKAddNorm>(forced);
  static const SplitKAddNorm mode = split_k_add_norm_mode_from_env();
  return mode;
}

void set_split_k_add_norm_mode(SplitKAddNorm mode) { g_mode_override.store(static_cast<int>(mode)); }
void reset_split_k_add_norm_mode() { g_mode_override.store(-1); }

int64_t linear_add_rms_norm_calls() { return g_calls.load(std::memory_order_relaxed); }

int split_k_add_norm_splits_rule(int64_t n, int64_t k, int forced) {
  if (forced > 0) return cuts(k, forced) ? forced : 0;
  const int want = n * k * 2 <= kSplitKAddNormMaxWeightBytes ? 4 : 2;
  for (int s = want; s >= 2; s /= 2)
    if (cuts(k, s)) return s;
  return 0;
}

int split_k_add_norm_forced_splits_from_env() {
  const int forced = env_int("GRAPHRT_SPLITK_ADD_NORM_SPLITS", 0, 0, 8);
  GRT_CHECK(forced != 1, "GRAPHRT_SPLITK_ADD_NORM_SPLITS=1 is not allowed: 2..8 splits, or 0 for the rule");
  return forced;
}

int split_k_add_norm_splits(int64_t n, int64_t k) {
  static const int forced = split_k_add_norm_forced_splits_from_env();
  return split_k_add_norm_splits_rule(n, k, forced);
}

int split_k_add_norm_route(SplitKAddNorm mode, bool cuda, DType dtype, int64_t rows, int64_t n, int64_t k) {
  if (mode == SplitKAddNorm::kOff || rows < kSplitKAddNormMinRows || n < 1) return 0;
  if (!cuda) return mode == SplitKAddNorm::kOn ? 2 : 0;  // the CPU runs the reference whatever the count
  if (dtype != DType::BF16) return 0;
  if (mode == SplitKAddNorm::kOn) return rows <= kSplitKAddNormForcedMaxRows ? split_k_add_norm_splits(n, k) : 0;
  if (rows > kSplitKAddNormMaxRows || n * k * 2 > kSplitKAddNormMaxWeightBytes) return 0;
  return split_k_add_norm_splits(n, k);
}

int linear_add_rms_norm_choice(const Tensor& x, const Tensor& w) {
  const SplitKAddNorm mode = split_k_add_norm_mode();
  if (mode == SplitKAddNorm::kOff || !x.defined() || !w.defined() || x.rank() != 2 || w.rank() != 2) return 0;
  if (x.size(1) > 1 && x.stride(1) != 1) return 0;
  return split_k_add_norm_route(mode, x.device().is_cuda(), x.dtype(), x.size(0), w.size(0), w.size(1));
}

Tensor linear_add_rms_norm_(const Tensor& x, const Tensor& w, const Tensor& residual, const Tensor& nw, float eps,
                            int splits) {
  const char* op = "linear_add_rms_norm_";
  check_defined(op, x, "x");
  check_defined(op, w, "weight");
  check_defined(op, residual, "residual");
  GRT_CHECK(x.rank() == 2 && (x.size(1) <= 1 || x.stride(1) == 1),
            "{}: x must be [T, in] with a contiguous last dim, got {}", op, x.str());
  GRT_CHECK(w.rank() == 2 && w.is_contiguous() && w.size(1) == x.size(1) && w.dtype() == x.dtype(),
            "{}: weight must be a contiguous [out, {}] of {}, got {}", op, x.size(1), dtype_name(x.dtype()), w.str());
  GRT_CHECK(residual.rank() == 2 && residual.size(0) == x.size(0) && residual.size(1) == w.size(0) &&
                residual.dtype() == x.dtype() && (residual.size(1) <= 1 || residual.stride(1) == 1),
            "{}: residual must be [{}, {}] of {} with a contiguous last dim, got {}", op, x.size(0), w.size(0),
            dtype_name(x.dtype()), residual.str());
  check_vector(op, nw, "norm weight", x.dtype(), w.size(0));
  check_same_device(op, x, w);
  check_same_device(op, x, residual);
  check_same_device(op, x, nw);
  {
    // The residual is written while x is read: they must not share bytes.
    const auto lo = [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data()); };
    const auto hi = [](const Tensor& t) {
      return reinterpret_cast<uintptr_t>(t.data()) +
             static_cast<uintptr_t>(((t.size(0) - 1) * t.stride(0) + t.size(1)) * dtype_size(t.dtype()));
    };
    GRT_CHECK(x.size(0) == 0 || hi(residual) <= lo(x) || hi(x) <= lo(residual), "{}: residual {} overlaps x {}", op,
              residual.str(), x.str());
  }
  GRT_CHECK(splits == 0 || splits >= 2, "{}: {} splits (0: the unfused ops, or 2..8)", op, splits);
  g_calls.fetch_add(1, std::memory_order_relaxed);
  if (splits == 0 || x.device().is_cpu()) {
    // The reference composition (the CPU's f32 path has no rounding for the split order to change).
    Tensor y = linear(x, w, Tensor(), x.dtype());
    fused_add_rms_norm_(y, residual, nw, eps);
    return y;
  }
  const int64_t rows = x.size(0), n = w.size(0), k = w.size(1);
  GRT_CHECK(x.dtype() == DType::BF16, "{} with {} splits: bf16 only, got {}", op, splits, x.str());
  GRT_CHECK(cuts(k, splits), "{}: {} splits do not cut K {} into slices of a multiple of 8 columns", op, splits, k);
  Tensor out = empty(Shape{rows, n}, x.dtype(), x.device());
  if (rows == 0) return out;
#ifdef GRAPHRT_WITH_CUDA
  Tensor partials = empty(Shape{splits, rows, n}, DType::F32, x.device());
  const int64_t x_stride = rows > 1 ? x.stride(0) : k;
  ::grt::cuda::linear_k_split_partials(x.device(), x.data(), x_stride, x.dtype(), w.data(),
                                       static_cast<float*>(partials.data()), rows, n, k, splits);
  ::grt::cuda::split_k_add_rms_norm(x.device(), x.dtype(), static_cast<const float*>(partials.data()), splits,
                                    residual.data(), rows > 1 ? residual.stride(0) : n, nw.data(), out.data(), n, rows,
                                    n, eps);
#else
  fail_no_cuda(op, x);
#endif
  return out;
}

}  // namespace grt::ops
