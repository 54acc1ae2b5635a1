// The decode-sized gate_up GEMM with SwiGLU in its epilogue (issue 18, session 10): a Hopper (sm_90a)
// wgmma kernel for 1..64 rows of x (decode batches), computing the same outputs as the prefill
// kernel of gate_up_swiglu.h with tiles sized for a step that streams the weights from DRAM:
// 64-row tiles, one consumer warpgroup, kDecodeSwigluTileN64 or kDecodeSwigluTileN128 output
// columns a block, and the first stages' weights requested before the PDL wait. Callers
// (ops/gate_up_swiglu_decode.cpp) have validated the shapes with ops::gate_up_swiglu_decode_unfit.
#pragma once
#include <cstdint>

#include "core/device_id.h"

namespace grt::cuda {

// Rows of x a block covers (one m64 wgmma tile); more rows run more row tiles.
inline constexpr int64_t kDecodeSwigluTileM = 64;
// Output columns a block owns (2 x that many weight rows: gate, then up), the two variants.
inline constexpr int64_t kDecodeSwigluTileN64 = 64;
inline constexpr int64_t kDecodeSwigluTileN128 = 128;
// K is consumed 64 at a time.
inline constexpr int64_t kDecodeSwigluTileK = 64;

// True when this process can run the kernel on the current device (an sm_90 GPU, sm_90a code built).
bool gate_up_swiglu_decode_device_ok();

// The SM count of cuda:`index` (read once per device), for the routing rule.
int gate_up_swiglu_decode_sms(int index);

// out[r, i] = round(round(silu(g)) * u), g = Σk x[r, k] · w[i, k], u = Σk x[r, k] · w[inter + i, k],
// accumulated in float32, as cuda::gate_up_swiglu. x: [rows, k] bf16 with row stride x_stride
// (elements); w: [2 * inter, k] bf16 contiguous (gate rows, then up rows); out: contiguous
// [rows, inter] bf16. tile_n: kDecodeSwigluTileN64 or kDecodeSwigluTileN128. Requires (not
// re-checked) k % 64 == 0, inter % tile_n == 0, 16-byte aligned rows, the device check above.
// A row's bits depend on its own x row only (not on `rows`). Launches on the device's current
// stream (capturable, PDL).
void gate_up_swiglu_decode(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows,
                           int64_t inter, int64_t k, int64_t tile_n);

// The same outputs, bit for bit, from the TMA-fed form of the kDecodeSwigluTileN64 kernel (one
// producer thread issuing bulk tensor copies into deeper rings; gate_up_swiglu_decode.cu). Same
// requirements, plus rows, k and 2 * inter below 2^31 (tensor-map coordinates); a tensor map the
// driver refuses is an Error.
void gate_up_swiglu_decode_tma(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows,
                               int64_t inter, int64_t k);

}  // namespace grt::cuda
