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
namespace {

// Every variant's widest output tile (the n128 decode kernel, the prefill kernel) and K slice,
// also here for builds without CUDA.
constexpr int64_t kTileN = 128;
constexpr int64_t kTileK = 64;

int64_t x_row_stride(const Tensor& x) { return x.size(0) > 1 ? x.stride(0) : x.size(1); }

const char* unfit(const Tensor& x, const Tensor& gate_up) {
  return gate_up_swiglu_decode_unfit(x.size(0), gate_up.size(0) / 2, x.size(1), x.dtype(),
                                     reinterpret_cast<uintptr_t>(x.data()), x_row_stride(x),
                                     reinterpret_cast<uintptr_t>(gate_up.data()));
}

}  // namespace

DecodeSwiglu decode_swiglu_gemm_mode_from_env() {
  return static_cast<DecodeSwiglu>(env_choice("GRAPHRT_DECODE_SWIGLU_GEMM", {"0", "1", "n128", "wide", "tma"}, 1));
}

DecodeSwiglu decode_swiglu_gemm_mode() {
  static const DecodeSwiglu mode = decode_swiglu_gemm_mode_from_env();
  return mode;
}

DecodeSwiglu decode_swiglu_route(DecodeSwiglu mode, int64_t rows, int64_t inter, int64_t sms) {
  if (rows < kDecodeSwigluMinRows || rows > kDecodeSwigluMaxRows || sms < 1) return DecodeSwiglu::kOff;
  return inter / kDecodeSwigluColumns >= sms ? mode : DecodeSwiglu::kOff;
}

const char* gate_up_swiglu_decode_unfit(int64_t rows, int64_t inter, int64_t k, DType dtype, uintptr_t x_addr,
                                        int64_t x_stride, uintptr_t w_addr) {
  if (dtype != DType::BF16) return "the fused GEMM takes bf16 only";
  if (rows < 1) return "no rows";
  if (k <= 0 || k % kTileK != 0) return "the hidden size (K) must be a positive multiple of 64";
  if (inter <= 0 || inter % kTileN != 0) return "the intermediate size must be a positive multiple of 128";
  if (x_addr % 16 != 0 || w_addr % 16 != 0) return "x and gate_up must start 16-byte aligned";
  if (rows > 1 && (x_stride < k || x_stride % 8 != 0)) return "x's row stride must be >= K and a multiple of 8";
  return nullptr;
}

DecodeSwiglu gate_up_swiglu_decode_choice(const Tensor& x, const Tensor& gate_up) {
  const DecodeSwiglu mode = decode_swiglu_gemm_mode();
  if (mode == DecodeSwiglu::kOff) return mode;
  check_gate_up_operands("gate_up_swiglu_decode_choice", x, gate_up);
  if (!x.device().is_cuda() || x.size(0) < kDecodeSwigluMinRows || x.size(0) > kDecodeSwigluMaxRows ||
      unfit(x, gate_up) != nullptr)
    return DecodeSwiglu::kOff;
#ifdef GRAPHRT_WITH_CUDA
  if (!::grt::cuda::gate_up_swiglu_decode_device_ok()) return DecodeSwiglu::kOff;
  return decode_swiglu_route(mode, x.size(0), gate_up.size(0) / 2,
                             ::grt::cuda::gate_up_swiglu_decode_sms(x.device().index));
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
  const char* why = unfit(x, gate_up);
  GRT_CHECK(why == nullptr, "{}: x {} and gate_up {} do not fit the fused GEMM: {}", op, x.str(), gate_up.str(), why);
  GRT_CHECK(::grt::cuda::gate_up_swiglu_decode_device_ok(), "{}: needs an sm_90 GPU and sm_90a code in this build ({})",
            op, x.str());
  if (kernel == DecodeSwiglu::kTma) {
    ::grt::cuda::gate_up_swiglu_decode_tma(x.device(), x.data(), x_row_stride(x), gate_up.data(), out.data(),
                                           x.size(0), inter, x.size(1));
    return out;
  }
  const int64_t tile_n =
      kernel == DecodeSwiglu::kTile64 ? ::grt::cuda::kDecodeSwigluTileN64 : ::grt::cuda::kDecodeSwigluTileN128;
  ::grt::cuda::gate_up_swiglu_decode(x.device(), x.data(), x_row_stride(x), gate_up.data(), out.data(), x.size(0),
                                     inter, x.size(1), tile_n);
  return out;
#else
  fail_no_cuda(op, x);
#endif
}

}  // namespace grt::ops
