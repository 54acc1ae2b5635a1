#include "ops/gate_up_swiglu.h"

#include "core/env_switch.h"
#include "core/error.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/linear.h"
#include "ops/op_checks.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/gate_up_swiglu.h"
#endif

namespace grt::ops {
namespace {

// The kernel's tiles (ops/cuda/gate_up_swiglu.h), also here for builds without CUDA.
constexpr int64_t kTileK = 64;
constexpr int64_t kTileN = 128;

bool aligned16(uintptr_t addr) { return addr % 16 == 0; }

}  // namespace

void check_gate_up_operands(const char* op, const Tensor& x, const Tensor& gate_up) {
  check_defined(op, x, "x");
  check_defined(op, gate_up, "gate_up");
  GRT_CHECK(x.rank() == 2 && gate_up.rank() == 2 && gate_up.is_contiguous() && x.size(1) == gate_up.size(1) &&
                gate_up.size(0) % 2 == 0 && (x.size(1) <= 1 || x.stride(1) == 1),
            "{}: x must be [T, H] with a contiguous last dim and gate_up a contiguous [2 * inter, H], got x {} and "
            "gate_up {}",
            op, x.str(), gate_up.str());
  GRT_CHECK(x.dtype() == gate_up.dtype(), "{}: x {} and gate_up {} differ in dtype", op, x.str(), gate_up.str());
  check_same_device(op, x, gate_up);
}

int64_t gate_up_swiglu_row_stride(const Tensor& x) { return x.size(0) > 1 ? x.stride(0) : x.size(1); }

const char* gate_up_swiglu_unfit(const Tensor& x, const Tensor& gate_up) {
  return gate_up_swiglu_unfit(x.size(0), gate_up.size(0) / 2, x.size(1), x.dtype(),
                              reinterpret_cast<uintptr_t>(x.data()), gate_up_swiglu_row_stride(x),
                              reinterpret_cast<uintptr_t>(gate_up.data()));
}

const char* gate_up_swiglu_unfit(int64_t rows, int64_t inter, int64_t k, DType dtype, uintptr_t x_addr,
                                 int64_t x_stride, uintptr_t w_addr) {
  if (dtype != DType::BF16) return "the fused GEMM takes bf16 only";
  if (rows < 1) return "no rows";
  if (k <= 0 || k % kTileK != 0) return "the hidden size (K) must be a positive multiple of 64";
  if (inter <= 0 || inter % kTileN != 0) return "the intermediate size must be a positive multiple of 128";
  if (!aligned16(x_addr) || !aligned16(w_addr)) return "x and gate_up must start 16-byte aligned";
  if (rows > 1 && (x_stride < k || x_stride % 8 != 0)) return "x's row stride must be >= K and a multiple of 8";
  return nullptr;
}

PrefillSwiglu prefill_swiglu_gemm_mode() {
  static const PrefillSwiglu mode = static_cast<PrefillSwiglu>(
      env_choice("GRAPHRT_PREFILL_SWIGLU_GEMM", {"0", "1", "auto"}, static_cast<int>(PrefillSwiglu::kAuto)));
  return mode;
}

bool prefill_swiglu_gemm_enabled() { return prefill_swiglu_gemm_mode() != PrefillSwiglu::kOff; }

bool prefill_swiglu_routed(PrefillSwiglu mode, int64_t rows, int64_t k) {
  switch (mode) {
    case PrefillSwiglu::kOff: return false;
    case PrefillSwiglu::kOn: return rows >= kSwigluGemmMinRows;
    case PrefillSwiglu::kAuto: return rows >= kSwigluGemmAutoMinRows && k <= kSwigluGemmAutoMaxK;
  }
  return false;
}

SwigluTile swiglu_gemm_tile() {
  // The choices in SwigluTile's order.
  static const SwigluTile tile =
      static_cast<SwigluTile>(env_choice("GRAPHRT_SWIGLU_TILE", {"128", "192", "192p", "192t"}, 3));
  return tile;
}

bool gate_up_swiglu_fusable(const Tensor& x, const Tensor& gate_up) {
  const PrefillSwiglu mode = prefill_swiglu_gemm_mode();
  if (mode == PrefillSwiglu::kOff) return false;
  check_gate_up_operands("gate_up_swiglu_fusable", x, gate_up);
  if (!x.device().is_cuda() || !prefill_swiglu_routed(mode, x.size(0), x.size(1)) ||
      gate_up_swiglu_unfit(x, gate_up) != nullptr)
    return false;
#ifdef GRAPHRT_WITH_CUDA
  return ::grt::cuda::gate_up_swiglu_device_ok();
#else
  return false;
#endif
}

Tensor gate_up_swiglu(const Tensor& x, const Tensor& gate_up) { return gate_up_swiglu(x, gate_up, swiglu_gemm_tile()); }

Tensor gate_up_swiglu(const Tensor& x, const Tensor& gate_up, SwigluTile tile) {
  const char* op = "gate_up_swiglu";
  check_gate_up_operands(op, x, gate_up);
  if (x.device().is_cpu()) return silu_and_mul(linear(x, gate_up));
  const int64_t inter = gate_up.size(0) / 2;
  Tensor out = empty(Shape{x.size(0), inter}, x.dtype(), x.device());
  if (x.size(0) == 0) return out;
#ifdef GRAPHRT_WITH_CUDA
  const char* why = gate_up_swiglu_unfit(x, gate_up);
  GRT_CHECK(why == nullptr, "{}: x {} and gate_up {} do not fit the fused GEMM: {}", op, x.str(), gate_up.str(), why);
  GRT_CHECK(::grt::cuda::gate_up_swiglu_device_ok(), "{}: needs an sm_90 GPU and sm_90a code in this build ({})", op,
            x.str());
  using ::grt::cuda::M192Copies;
  const int64_t xs = gate_up_swiglu_row_stride(x);
  if (tile != SwigluTile::Rows128)
    ::grt::cuda::gate_up_swiglu_m192(x.device(), x.data(), xs, gate_up.data(), out.data(), x.size(0), inter, x.size(1),
                                     tile == SwigluTile::Rows192            ? M192Copies::CpAsync
                                     : tile == SwigluTile::Rows192Persistent ? M192Copies::CpAsyncPersistent
                                                                              : M192Copies::Tma);
  else
    ::grt::cuda::gate_up_swiglu(x.device(), x.data(), xs, gate_up.data(), out.data(), x.size(0), inter, x.size(1));
  return out;
#else
  (void)tile;
  fail_no_cuda(op, x);
#endif
}

}  // namespace grt::ops
