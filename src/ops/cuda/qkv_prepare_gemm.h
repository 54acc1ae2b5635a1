// The QKV projection of an extend with prepare_qkv_'s work in its epilogue (ops/qkv_prepare_gemm.h):
// one Hopper (sm_90a) wgmma kernel (qkv_prepare_gemm.cu) that computes the [rows, (nq + 2 nkv) hd]
// product tile by tile and, instead of storing it, stores q normed and rotated, and k (normed,
// rotated) and v into their cache slots. Callers (ops/qkv_prepare_gemm.cpp) have checked every
// argument.
#pragma once
#include <cstdint>

#include "core/device_id.h"
#include "ops/kernel_params.h"

namespace grt::cuda {

// The kernel's arguments. x: bf16 [rows, k] (row stride x_stride elements); w: bf16 [n, k]
// contiguous, n = (nq + 2 nkv) * 128 and a multiple of 256; k a multiple of 64; rows >= 1;
// 16-byte aligned rows.
//  - prepare == false: out = round_bf16(x · wᵀ), [rows, n] with row stride out_stride (the GEMM
//    alone, whose bits the prepared form starts from);
//  - prepare == true: per row r and head h (head_dim 128) of that product, the arithmetic of
//    prepare_qkv_ (ops/prepare_qkv.h) with the arguments in `prep`, bit for bit: q heads
//    (h < prep.q_heads) normed with prep.q_norm (if not null) and rotated at prep.positions[r] into
//    out (q: [rows, q_heads * 128], row stride out_stride); k heads normed with prep.k_norm and
//    rotated into prep.k_cache[prep.out_cache_loc[r]], v heads copied into prep.v_cache at that
//    slot. A position outside [0, max_positions) skips the rotation, a slot outside [0, num_slots)
//    the cache stores. prep.q / k / v are not read (the product is never written).
struct QkvGemmArgs {
  const void* x;
  int64_t x_stride;
  const void* w;
  int64_t rows, n, k;
  void* out;
  int64_t out_stride;
  bool prepare;
  ops::PrepareQkvArgs prep;  // q_heads and kv_heads also with prepare == false
};

// Launches the persistent kernel (128 x 256 tiles, min(tiles, SMs) blocks) on the device's current
// stream (capturable; PDL: it waits for its predecessor before reading x and lets the next kernel
// launch after its last tile's products).
void qkv_gemm(Device d, const QkvGemmArgs& a);

}  // namespace grt::cuda
