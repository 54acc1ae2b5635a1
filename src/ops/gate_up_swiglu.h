// The prefill gate_up GEMM with SwiGLU in its epilogue (issue 18, session 10):
//   gate_up_swiglu(x, gu) ~= silu_and_mul(linear(x, gu))
// as one Hopper wgmma kernel that never writes the [T, 2 * inter] intermediate (cuBLASLt has no
// SwiGLU epilogue). Rounding differs from the unfused ops in the last bits: the gate and up sums
// stay float32 (the unfused path rounds both to bf16 before silu_and_mul); silu(gate) and the
// product are rounded to bf16 as silu_and_mul does. Deterministic (no split-K, no atomics) and
// the same kernel eager and captured. The decoder routes prefill-sized gate_up through it where it
// was measured to win (GRAPHRT_PREFILL_SWIGLU_GEMM, below; model/decoder_model.cpp).
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/tensor.h"

namespace grt::ops {

// Rows from which GRAPHRT_PREFILL_SWIGLU_GEMM=1 uses the fused GEMM (one full 128-row tile; fewer
// rows leave most of a tile idle, and the small-M GEMV fusions of ops/fused_linear.h cover
// decode-sized batches).
inline constexpr int64_t kSwigluGemmMinRows = 128;

// The fused kernel: 128 rows x 256 weight rows a tile (gate_up_swiglu.cu, producer warpgroup + two
// consumers), or 192 x 256 (gate_up_swiglu_m192.cu, three warpgroups: 19% fewer L2 bytes per
// FLOP) with one block a tile or a persistent grid (the next tile's loads under the epilogue), its
// stages fed by cp.async (Rows192, Rows192Persistent) or by bulk tensor copies (TMA) from one
// thread (Rows192Tma, persistent). Measured on the H100 (session 10, qwen3-0.6b K 1024 -> 2 x 3072
// at 4096 rows, ncu at its locked clock): 128 rows 120 us (60% tensor active), 192 / 192p ~25%
// slower (every thread's fence.proxy.async waited for its own copies in flight), 192t 106 us (70%):
// prefill 4096 11.84-11.89 ms against 12.16-12.25 with 128 (-0.31), so 192t is the default.
enum class SwigluTile { Rows128, Rows192, Rows192Persistent, Rows192Tma };

// The `auto` rule (the default), from H100 A/Bs of qwen3-0.6b prefill (K 1024 -> 2 x 3072; session
// 10, bench/results/h100_2026-11-24_s10_swiglu and _s10_sw3): the 128-row kernel is fed at ~0.011 B
// of L2 traffic per FLOP against cuBLASLt's ~0.008, so it runs the GEMM ~15% slower and wins only
// where removing silu_and_mul's [T, 2 * inter] round trip pays for that: at K 1024 from 2048 rows
// (-0.12 ms at 2048 tokens, -0.08 at 4096, -0.06 at 8192; +0.09 at 1024, +0.08 at 256); the 192t
// kernel then took 2048 / 4096 a further -0.09 / -0.27 ms (below 2048 rows not yet measured). A larger K
// makes the GEMM's share grow with the same silu bytes (llama-3.1-8b, K 4096: not measured with
// this kernel, so not taken).
inline constexpr int64_t kSwigluGemmAutoMinRows = 2048;
inline constexpr int64_t kSwigluGemmAutoMaxK = 1024;

// GRAPHRT_PREFILL_SWIGLU_GEMM (read once): `auto` (default) the measured rule above, `0` never,
// `1` every fitting shape from kSwigluGemmMinRows rows (the A/B of session 10's first run).
enum class PrefillSwiglu { kOff, kOn, kAuto };
PrefillSwiglu prefill_swiglu_gemm_mode();

// The shape rule of the kernel, without a device: nullptr when x [rows, k] (row stride x_stride
// elements, at x_addr) and gate_up [2 * inter, k] (contiguous, at w_addr) of `dtype` fit, else the
// first reason they do not (a static string): bf16 only, k a positive multiple of 64, inter a
// positive multiple of 128, 16-byte aligned rows (addresses and strides), rows >= 1.
const char* gate_up_swiglu_unfit(int64_t rows, int64_t inter, int64_t k, DType dtype, uintptr_t x_addr,
                                 int64_t x_stride, uintptr_t w_addr);

// The same rule for x and gate_up as tensors (rows, inter, K, dtype, addresses and x's row stride
// read from them; call check_gate_up_operands first).
const char* gate_up_swiglu_unfit(const Tensor& x, const Tensor& gate_up);

// x's row stride in elements as the fused kernels take it (a single row: its length).
int64_t gate_up_swiglu_row_stride(const Tensor& x);

// The operand checks of the fused GEMMs (this one and ops/gate_up_swiglu_decode.h): x [T, H] with a
// contiguous last dim, gate_up a contiguous [2 * inter, H] of x's dtype on x's device; an Error
// naming `op` and the tensors otherwise.
void check_gate_up_operands(const char* op, const Tensor& x, const Tensor& gate_up);

// Whether the decoder asks for the fused GEMM at all (the mode is not kOff).
bool prefill_swiglu_gemm_enabled();

// GRAPHRT_SWIGLU_TILE (read once): 192t (Rows192Tma, default), 128, 192 or 192p
// (Rows192Persistent), the kernel gate_up_swiglu(x, gate_up) runs.
SwigluTile swiglu_gemm_tile();

// The row / K part of the routing rule under `mode`, without a device: kOff never; kOn from
// kSwigluGemmMinRows rows; kAuto from kSwigluGemmAutoMinRows rows with K <= kSwigluGemmAutoMaxK.
bool prefill_swiglu_routed(PrefillSwiglu mode, int64_t rows, int64_t k);

// Whether gate_up_swiglu(x, gate_up) runs the fused kernel here: prefill_swiglu_routed under the
// switch's mode, x on a CUDA sm_90 device with sm_90a code built, and the shape rule holds.
// Depends on shapes, dtypes, alignment and the device only (eager and captured runs of one shape
// take the same path).
bool gate_up_swiglu_fusable(const Tensor& x, const Tensor& gate_up);

// x: [T, H] (last dim contiguous), gate_up: [2 * inter, H] contiguous (gate rows, then up rows), of
// x's dtype. Returns a contiguous [T, inter] of x's dtype. CPU: the reference composition
// silu_and_mul(linear(x, gate_up)) (f32). CUDA: the fused kernel of swiglu_gemm_tile() (or of
// `tile`) whatever the switch and the row count; a shape outside gate_up_swiglu_unfit's rule or a
// device without it is an error naming the reason (callers check gate_up_swiglu_fusable and
// otherwise run the unfused ops). All kernels give the same sums in the same order and the same
// epilogue (the CUDA tests compare their bits).
Tensor gate_up_swiglu(const Tensor& x, const Tensor& gate_up);
Tensor gate_up_swiglu(const Tensor& x, const Tensor& gate_up, SwigluTile tile);

}  // namespace grt::ops
