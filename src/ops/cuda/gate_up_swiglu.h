// The prefill gate_up GEMM with SwiGLU in its epilogue (issue 18, session 10): one Hopper (sm_90a)
// wgmma kernel computing out = silu(x · Wgᵀ) * (x · Wuᵀ) without writing the [M, 2 * inter]
// intermediate that cuBLASLt's GEMM + silu_and_mul write and read back. Callers (ops/gate_up_swiglu.cpp)
// have validated the shapes with ops::gate_up_swiglu_unfit.
#pragma once
#include <cstdint>

#include "core/device_id.h"
#include "core/dtype.h"

namespace grt::cuda {

// Output tile of one block: kSwigluTileM rows x kSwigluTileN output columns (so 2 x kSwigluTileN
// rows of the gate_up weight); K is consumed kSwigluTileK at a time.
inline constexpr int64_t kSwigluTileM = 128;
inline constexpr int64_t kSwigluTileN = 128;
inline constexpr int64_t kSwigluTileK = 64;
// Rows of a tile of gate_up_swiglu_m192 (three warpgroups of 64 rows).
inline constexpr int64_t kSwigluM192TileM = 192;

// True when this process can run the kernel on the current device: an sm_90 GPU and sm_90a code
// built (CMAKE_CUDA_ARCHITECTURES with 90a).
bool gate_up_swiglu_device_ok();

// out[r, i] = round(round(silu(g)) * u) with g = Σk x[r, k] · w[i, k] and u = Σk x[r, k] · w[inter + i, k]
// accumulated in float32 (never rounded to bf16). x: [rows, k] bf16 with row stride x_stride
// (elements); w: [2 * inter, k] bf16 contiguous (gate rows, then up rows); out: contiguous
// [rows, inter] bf16. Requires (not re-checked) k % 64 == 0, inter % 128 == 0, 16-byte aligned
// rows, gate_up_swiglu_device_ok(). Launches on the device's current stream (capturable, PDL).
void gate_up_swiglu(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows, int64_t inter,
                    int64_t k);

// How gate_up_swiglu_m192 fills its shared-memory ring: cp.async by every thread, one block a
// tile (CpAsync) or persistent (CpAsyncPersistent: min(tiles, SMs) blocks looping over the tiles,
// the next tile's first slices loading under the epilogue); or bulk tensor copies (TMA, tensor
// maps) issued by one thread, persistent (Tma).
enum class M192Copies { CpAsync, CpAsyncPersistent, Tma };

// The same result from the 192-row-tile kernel (gate_up_swiglu_m192.cu: 192 x 256 weight-row
// tiles, three warpgroups, 19% fewer L2 bytes per FLOP than the 128-row kernel; the cp.async forms
// measured slower than it, see that file), same requirements. Each output is the same sequence of
// k16 wgmma steps over K and the same epilogue as gate_up_swiglu's (one m64n256 instruction a
// step where that kernel issues two m64n128), whatever `copies`.
void gate_up_swiglu_m192(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows,
                         int64_t inter, int64_t k, M192Copies copies);

}  // namespace grt::cuda
