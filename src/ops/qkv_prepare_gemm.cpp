#include "ops/qkv_prepare_gemm.h"

#include "core/env_switch.h"
#include "core/error.h"
#include "memory/tensor_alloc.h"
#include "ops/copy.h"
#include "ops/gate_up_swiglu.h"
#include "ops/linear.h"
#include "ops/op_checks.h"
#include "ops/prepare_qkv.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/qkv_prepare_gemm.h"
#include "ops/cuda/sm90a_device.h"
#endif

namespace grt::ops {
namespace {

constexpr int64_t kHeadDim = 128;  // the kernel's head (two a 256-column tile)

bool aligned16(uintptr_t addr) { return addr % 16 == 0; }

void check_operands(const char* op, const Tensor& x, const Tensor& w_qkv, int head_dim, int64_t nq, int64_t nkv) {
  check_defined(op, x, "x");
  check_defined(op, w_qkv, "w_qkv");
  GRT_CHECK(head_dim > 0 && nq > 0 && nkv > 0, "{}: head_dim {}, nq {} and nkv {} must be positive", op, head_dim, nq,
            nkv);
  GRT_CHECK(x.rank() == 2 && w_qkv.rank() == 2 && w_qkv.is_contiguous() && x.size(1) == w_qkv.size(1) &&
                w_qkv.size(0) == (nq + 2 * nkv) * head_dim && (x.size(1) <= 1 || x.stride(1) == 1),
            "{}: x must be [T, H] with a contiguous last dim and w_qkv a contiguous [(nq {} + 2 nkv {}) * head_dim {}, "
            "H], got x {} and w_qkv {}",
            op, nq, nkv, head_dim, x.str(), w_qkv.str());
  GRT_CHECK(x.dtype() == w_qkv.dtype(), "{}: x {} and w_qkv {} differ in dtype", op, x.str(), w_qkv.str());
  check_same_device(op, x, w_qkv);
}

const char* unfit(const Tensor& x, const Tensor& w_qkv, const Tensor& bias, int head_dim, int64_t nq, int64_t nkv) {
  return qkv_prepare_gemm_unfit(x.size(0), x.size(1), w_qkv.size(0), w_qkv.size(1), head_dim, nq, nkv, x.dtype(),
                                reinterpret_cast<uintptr_t>(x.data()), gate_up_swiglu_row_stride(x),
                                reinterpret_cast<uintptr_t>(w_qkv.data()), bias.defined());
}

#ifdef GRAPHRT_WITH_CUDA
void check_kernel(const char* op, const Tensor& x, const Tensor& w_qkv, int head_dim, int64_t nq, int64_t nkv) {
  const char* why = unfit(x, w_qkv, Tensor(), head_dim, nq, nkv);
  GRT_CHECK(why == nullptr, "{}: x {} and w_qkv {} (nq {}, nkv {}, head_dim {}) do not fit the kernel: {}", op, x.str(),
            w_qkv.str(), nq, nkv, head_dim, why);
  GRT_CHECK(::grt::cuda::sm90a_device(), "{}: needs an sm_90 GPU and sm_90a code in this build ({})", op, x.str());
}

// The kernel's arguments for x, w_qkv and the output `out` ([T, out columns], contiguous).
::grt::cuda::QkvGemmArgs kernel_args(const Tensor& x, const Tensor& w_qkv, const Tensor& out, int64_t nq,
                                     int64_t nkv) {
  ::grt::cuda::QkvGemmArgs c{};
  c.x = x.data();
  c.x_stride = gate_up_swiglu_row_stride(x);
  c.w = w_qkv.data();
  c.rows = x.size(0);
  c.n = w_qkv.size(0);
  c.k = x.size(1);
  c.out = out.data();
  c.out_stride = out.size(1);
  c.prep.q_heads = nq;
  c.prep.kv_heads = nkv;
  return c;
}
#endif

}  // namespace

QkvPrepareGemm qkv_prepare_gemm_mode() {
  static const QkvPrepareGemm mode = static_cast<QkvPrepareGemm>(
      env_choice("GRAPHRT_QKV_PREPARE_GEMM", {"0", "1", "auto"}, static_cast<int>(QkvPrepareGemm::kAuto)));
  return mode;
}

bool qkv_prepare_routed(QkvPrepareGemm mode, int64_t rows, int64_t k) {
  switch (mode) {
    case QkvPrepareGemm::kOff: return false;
    case QkvPrepareGemm::kOn: return rows >= kQkvPrepareGemmMinRows;
    case QkvPrepareGemm::kAuto: return rows >= kQkvPrepareGemmAutoMinRows && k <= kQkvPrepareGemmAutoMaxK;
  }
  return false;
}

const char* qkv_prepare_gemm_unfit(int64_t rows, int64_t k, int64_t w_rows, int64_t w_cols, int64_t head_dim,
                                   int64_t nq, int64_t nkv, DType dtype, uintptr_t x_addr, int64_t x_stride,
                                   uintptr_t w_addr, bool has_bias) {
  if (dtype != DType::BF16) return "the kernel takes bf16 only";
  if (has_bias) return "the kernel has no bias";
  if (head_dim != kHeadDim) return "head_dim must be 128";
  if (nq <= 0 || nkv <= 0 || (nq + 2 * nkv) % 2 != 0) return "nq + 2 nkv must be even (tiles of two heads)";
  if (w_rows != (nq + 2 * nkv) * head_dim || w_cols != k) return "w_qkv must be [(nq + 2 nkv) * head_dim, K]";
  if (rows < 1) return "no rows";
  if (k <= 0 || k % 64 != 0) return "the hidden size (K) must be a positive multiple of 64";
  if (!aligned16(x_addr) || !aligned16(w_addr)) return "x and w_qkv must start 16-byte aligned";
  if (rows > 1 && (x_stride < k || x_stride % 8 != 0)) return "x's row stride must be >= K and a multiple of 8";
  return nullptr;
}

bool qkv_prepare_gemm_fusable(const Tensor& x, const Tensor& w_qkv, const Tensor& bias, int head_dim, int64_t nq,
                              int64_t nkv) {
  const QkvPrepareGemm mode = qkv_prepare_gemm_mode();
  if (mode == QkvPrepareGemm::kOff) return false;
  check_operands("qkv_prepare_gemm_fusable", x, w_qkv, head_dim, nq, nkv);
  if (!x.device().is_cuda() || !qkv_prepare_routed(mode, x.size(0), x.size(1)) ||
      unfit(x, w_qkv, bias, head_dim, nq, nkv) != nullptr)
    return false;
#ifdef GRAPHRT_WITH_CUDA
  return ::grt::cuda::sm90a_device();
#else
  return false;
#endif
}

Tensor qkv_prepare_gemm(const Tensor& x, const Tensor& w_qkv, const Tensor& q_norm, const Tensor& k_norm, float eps,
                        const Tensor& positions, const Tensor& cos_sin, int head_dim, int64_t nq, int64_t nkv,
                        const Tensor& out_cache_loc, const Tensor& k_cache, const Tensor& v_cache) {
  const char* op = "qkv_prepare_gemm";
  check_operands(op, x, w_qkv, head_dim, nq, nkv);
  const int64_t hd = head_dim;
  if (x.device().is_cpu()) {
    const Tensor qkv = linear(x, w_qkv);
    const Tensor q = qkv.slice(1, 0, nq * hd);
    prepare_qkv_(q, qkv.slice(1, nq * hd, (nq + nkv) * hd), qkv.slice(1, (nq + nkv) * hd, (nq + 2 * nkv) * hd),
                 q_norm, k_norm, eps, positions, cos_sin, head_dim, out_cache_loc, k_cache, v_cache);
    return contiguous(q);
  }
  Tensor q = empty(Shape{x.size(0), nq * hd}, x.dtype(), x.device());
  // prepare_qkv_'s checks of every argument, on q and k / v views shaped as the kernel reads them
  // (the product is never written: w_qkv's first rows stand in for k and v, only their shapes,
  // dtype and device are read).
  const Tensor kv_shape(w_qkv.storage(), Shape{x.size(0), nkv * hd}, {0, 1}, w_qkv.dtype(), w_qkv.offset());
  const PrepareQkvArgs a = prepare_qkv_args(q, kv_shape, kv_shape, q_norm, k_norm, eps, positions, cos_sin, head_dim,
                                            out_cache_loc, k_cache, v_cache);
  if (x.size(0) == 0) return q;
#ifdef GRAPHRT_WITH_CUDA
  check_kernel(op, x, w_qkv, head_dim, nq, nkv);
  ::grt::cuda::QkvGemmArgs c = kernel_args(x, w_qkv, q, nq, nkv);
  c.prepare = true;
  c.prep = a;
  ::grt::cuda::qkv_gemm(x.device(), c);
  return q;
#else
  (void)a;
  fail_no_cuda(op, x);
#endif
}

Tensor qkv_gemm(const Tensor& x, const Tensor& w_qkv, int head_dim, int64_t nq, int64_t nkv) {
  const char* op = "qkv_gemm";
  check_operands(op, x, w_qkv, head_dim, nq, nkv);
  if (x.device().is_cpu()) return linear(x, w_qkv);
  Tensor out = empty(Shape{x.size(0), w_qkv.size(0)}, x.dtype(), x.device());
  if (x.size(0) == 0) return out;
#ifdef GRAPHRT_WITH_CUDA
  check_kernel(op, x, w_qkv, head_dim, nq, nkv);
  const ::grt::cuda::QkvGemmArgs c = kernel_args(x, w_qkv, out, nq, nkv);
  ::grt::cuda::qkv_gemm(x.device(), c);
  return out;
#else
  fail_no_cuda(op, x);
#endif
}

}  // namespace grt::ops
