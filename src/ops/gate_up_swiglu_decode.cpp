#include "ops/gate_up_swiglu_decode.h"

#include "core/env_switch.h"
#include "core/error.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/gate_up_swiglu.h"
#include "ops/linear.h"
#include "ops/op_checks.h"
#ifdef GRAPHRT_WITH_CUDA
#include "ops/cuda/gate_up_swiglu_decode.h"
#endif

namespace grt::ops {

DecodeSwiglu decode_swiglu_gemm_mode_from_env() {
  return static_cast<DecodeSwiglu>(env_choice("GRAPHRT_DECODE_SWIGLU_GEMM", {"0", "1", "n128", "wide", "tma"}, 4));
}

DecodeSwiglu decode_swiglu_gemm_mode() {
  static const DecodeSwiglu mode = decode_swiglu_gemm_mode_from_env();
  return mode;
}

DecodeSwiglu decode_swiglu_route(DecodeSwiglu mode, int64_t rows, int64_t inter, int64_t sms, int64_t min_rows,
                                 int64_t min_tiles) {
  if (rows < min_rows || rows > kDecodeSwigluMaxRows || sms < 1) return DecodeSwiglu::kOff;
  return inter / kDecodeSwigluColumns >= (min_tiles < 0 ? sms : min_tiles) ? mode : DecodeSwiglu::kOff;
}

int64_t decode_swiglu_min_rows() {
  static const int64_t v = env_int("GRAPHRT_DECODE_SWIGLU_MIN_ROWS", static_cast<int>(kDecodeSwigluMinRows), 17,
                                   static_cast<int>(kDecodeSwigluMaxRows));
  return v;
}

int64_t decode_swiglu_min_tiles() {
  static const int64_t v =
      env_int("GRAPHRT_DECODE_SWIGLU_MIN_TILES", static_cast<int>(kDecodeSwigluMinTiles), -1, 1 << 20);
  return v;
}

// Every decode variant's tile (64 or 128 output columns, 64-wide K slices) divides the prefill
// kernel's, and the alignment needs are the same: the prefill kernel's rule is the rule.
const char* gate_up_swiglu_decode_unfit(int64_t rows, int64_t inter, int64_t k, DType dtype, uintptr_t x_addr,
                                        int64_t x_stride, uintptr_t w_addr) {
  return gate_up_swiglu_unfit(rows, inter, k, dtype, x_addr, x_stride, w_addr);
}

DecodeSwiglu gate_up_swiglu_decode_choice(const Tensor& x, const Tensor& gate_up) {
  const DecodeSwiglu mode = decode_swiglu_gemm_mode();
  if (mode == DecodeSwiglu::kOff) return mode;
  check_gate_up_operands("gate_up_swiglu_decode_choice", x, gate_up);
  if (!x.device().is_cuda() || x.size(0) < decode_swiglu_min_rows() || x.size(0) > kDecodeSwigluMaxRows ||
      gate_up_swiglu_unfit(x, gate_up) != nullptr)
    return DecodeSwiglu::kOff;
#ifdef GRAPHRT_WITH_CUDA
  if (!::grt::cuda::gate_up_swiglu_decode_device_ok()) return DecodeSwiglu::kOff;
  return decode_swiglu_route(mode, x.size(0), gate_up.size(0) / 2,
                             ::grt::cuda::gate_up_swiglu_decode_sms(x.device().index), decode_swiglu_min_rows(),
                             decode_swiglu_min_tiles());
#else
  return DecodeSwiglu::kOff;
#endif
}

Tensor gate_up_swiglu_decode(const Tensor& x, const Tensor& gate_up, DecodeSwiglu kernel) {
  const char* op = "gate_up_swiglu_decode";
  check_gate_up_operands(op, x, gate_up);
  GRT_CHECK(kernel != DecodeSwiglu::kOff, "{}: no kernel named for x {} (kOff means the unfused ops)", op, x.str());
  if (x.device().is_cpu()) return silu_and_mul(linear(x, gate_up));
  if (kernel == DecodeSwiglu::kPrefill) return gate_up_swiglu(x, gate_up);
  const int64_t inter = gate_up.size(0) / 2;
  Tensor out = empty(Shape{x.size(0), inter}, x.dtype(), x.device());
  if (x.size(0) == 0) return out;
#ifdef GRAPHRT_WITH_CUDA
  const char* why = gate_up_swiglu_unfit(x, gate_up);
  GRT_CHECK(why == nullptr, "{}: x {} and gate_up {} do not fit the fused GEMM: {}", op, x.str(), gate_up.str(), why);
  GRT_CHECK(::grt::cuda::gate_up_swiglu_decode_device_ok(), "{}: needs an sm_90 GPU and sm_90a code in this build ({})",
            op, x.str());
  if (kernel == DecodeSwiglu::kTma) {
    ::grt::cuda::gate_up_swiglu_decode_tma(x.device(), x.data(), gate_up_swiglu_row_stride(x), gate_up.data(), out.data(),
                                           x.size(0), inter, x.size(1));
    return out;
  }
  const int64_t tile_n =
      kernel == DecodeSwiglu::kTile64 ? ::grt::cuda::kDecodeSwigluTileN64 : ::grt::cuda::kDecodeSwigluTileN128;
  ::grt::cuda::gate_up_swiglu_decode(x.device(), x.data(), gate_up_swiglu_row_stride(x), gate_up.data(), out.data(),
                                     x.size(0), inter, x.size(1), tile_n);
  return out;
#else
  fail_no_cuda(op, x);
#endif
}

}  // namespace grt::ops
