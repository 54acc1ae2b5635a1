// The decode route of the gate_up GEMM with SwiGLU in its epilogue (issue 18, session 10):
//   gate_up_swiglu_decode(x, gu) ~= silu_and_mul(linear(x, gu))
// for decode batches of kDecodeSwigluMinRows..kDecodeSwigluMaxRows rows,
// where cuBLASLt's gate_up GEMM + silu_and_mul ran before. On the H100 (session 10, s10-sw64) it
// made llama-3.1-8b's bs-64 graph step 9.504 -> 9.388 ms (-3.6 us a layer), so it is on by default. At those rows the step streams the weights from DRAM; the fused kernel
// (ops/cuda/gate_up_swiglu_decode.h) removes the silu_and_mul kernel and its [rows, 2 * inter]
// round trip, and runs under PDL (cuBLASLt launches do not). Rounding as ops/gate_up_swiglu.h:
// the gate and up sums stay float32 (the unfused path rounds both to bf16 before silu_and_mul),
// so outputs differ from the unfused path in the last bits. Deterministic; a row's bits depend on
// that row alone (decode graphs pad batches).
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"

namespace grt::ops {

// The kernels the route can take (GRAPHRT_DECODE_SWIGLU_GEMM, read once; graph ms of llama-3.1-8b
// bs 64 on the H100, means of 3 fresh processes, bench/results/h100_2026-11-24_s10_sw64):
//   "0"    kOff: cuBLASLt GEMM + silu_and_mul (the unfused ops): 9.504;
//   "1"    kTile64: the decode kernel with 64 x 64 output tiles (two blocks an SM): 9.388;
//   "n128" kTile128: the decode kernel with 64 x 128 output tiles (one block an SM): 9.453;
//   "wide" kPrefill: the prefill kernel of ops/gate_up_swiglu.h (128 x 128 tiles, rows past M
//          zero-filled): 9.557 (2 rounds);
//   "tma"  kTma, the default: kTile64's tiles and bits fed by TMA tensor copies from one producer
//          thread into deeper rings (session 11, bench/results/h100_2026-11-24_s11_tmadec: 9.321
//          against kTile64's 9.425 in the same job, 3 interleaved rounds; ncu 89.7 vs 93.7 us).
enum class DecodeSwiglu { kOff, kTile64, kTile128, kPrefill, kTma };
DecodeSwiglu decode_swiglu_gemm_mode();
// The switch's value read now (not cached; decode_swiglu_gemm_mode caches its first answer):
// unset or empty gives kTma, a value outside the list above is an Error naming it.
DecodeSwiglu decode_swiglu_gemm_mode_from_env();

// Rows the route takes: 17 (above the GEMV's 16 rows: at <= 16 rows the GEMV fusions of
// ops/fused_linear.h already put silu in gate_up's epilogue, and the decoder tries them first
// whatever GRAPHRT_GEMV_MAX_ROWS says) up to one 64-row tile (more rows would stream the weights
// once per row tile). Session 10 started at 33 (llama bs 32 7.943 -> 7.930 ms with the cp.async
// kernel, one round); with the TMA form, session 30 (H100, bench/results/h100_2026-11-26_session30,
// call D, fresh processes ABBA x 2) measured llama-3.1-8b bs 17 / 24 / 32 7.010-7.021 / 7.285-7.299 /
// 7.724-7.734 -> 6.889-6.913 / 7.172-7.184 / 7.572-7.589 ms.
inline constexpr int64_t kDecodeSwigluMinRows = 17;
inline constexpr int64_t kDecodeSwigluMaxRows = 64;
// Output columns a block of the decode kernel owns at least (kTile64).
inline constexpr int64_t kDecodeSwigluColumns = 64;
// Column tiles the route needs by default: none. Session 10 asked for one tile an SM (inter / 64 >=
// the SM count) so that every SM streams weights, which kept qwen3-0.6b's 3072 (48 tiles) on
// cuBLASLt + silu_and_mul. Measured on the H100 (session 30, calls A and D, ABCCBA x 2), its 48
// blocks take gate_up + silu 9.3 -> 8.45 us a layer: qwen3-0.6b bs 24 / 32 / 48 / 64 -0.02..-0.04 ms
// (bs 64 3.827-3.851 -> 3.792-3.844), prefill 32 / 48 / 64 -0.01..-0.03, nothing slower.
inline constexpr int64_t kDecodeSwigluMinTiles = 0;

// The routing rule without a device: `mode` when rows lies in [min_rows, kDecodeSwigluMaxRows]
// and inter / kDecodeSwigluColumns >= min_tiles (min_tiles < 0: the SM count `sms`, session 10's
// rule), else kOff. A function of the shape and the device only, so every decode batch-size graph
// (and its eager run) takes the path of its own row count.
DecodeSwiglu decode_swiglu_route(DecodeSwiglu mode, int64_t rows, int64_t inter, int64_t sms,
                                 int64_t min_rows = kDecodeSwigluMinRows, int64_t min_tiles = kDecodeSwigluMinTiles);

// A/B knobs of the rule (read once): GRAPHRT_DECODE_SWIGLU_MIN_ROWS (17..64, default
// kDecodeSwigluMinRows; 33 is session 10's rule) and GRAPHRT_DECODE_SWIGLU_MIN_TILES (default
// kDecodeSwigluMinTiles; -1: one tile an SM, session 10's rule).
int64_t decode_swiglu_min_rows();
int64_t decode_swiglu_min_tiles();

// The shape rule of the kernels, without a device: nullptr when x [rows, k] (row stride x_stride
// elements, at x_addr) and gate_up [2 * inter, k] (contiguous, at w_addr) of `dtype` fit, else the
// first reason (a static string): bf16 only, rows >= 1, k a positive multiple of 64, inter a
// positive multiple of 128 (every variant's tile), 16-byte aligned rows (addresses and strides).
const char* gate_up_swiglu_decode_unfit(int64_t rows, int64_t inter, int64_t k, DType dtype, uintptr_t x_addr,
                                        int64_t x_stride, uintptr_t w_addr);

// Which kernel gate_up_swiglu_decode(x, gate_up) runs here: decode_swiglu_route of the switch,
// x's rows, the intermediate and x's device's SM count, where x is on a CUDA sm_90 device with
// sm_90a code and the shape rule holds; else kOff (run the unfused ops). Shapes, dtypes,
// alignment and the device only.
DecodeSwiglu gate_up_swiglu_decode_choice(const Tensor& x, const Tensor& gate_up);

// x: [T, H] (last dim contiguous), gate_up: [2 * inter, H] contiguous (gate rows, then up rows), of
// x's dtype. Returns a contiguous [T, inter] of x's dtype. CPU: the reference composition
// silu_and_mul(linear(x, gate_up)). CUDA: `kernel` (not kOff) whatever the switch and the row
// count; a shape outside gate_up_swiglu_decode_unfit's rule or a device without sm_90a code is an
// error naming the reason.
Tensor gate_up_swiglu_decode(const Tensor& x, const Tensor& gate_up, DecodeSwiglu kernel);

}  // namespace grt::ops
