// The per-chunk arithmetic of prepare_qkv_'s lanes kernels (prepare_qkv.cu): a head of hd elements
// is L lanes of one 16-byte chunk each; the RMSNorm's sum is a butterfly over the L lanes, RoPE's
// partner element comes from lane + L/2 by one shuffle. Shared with the decode attention that does
// prepare_qkv_'s work for its rows itself (attention_decode_mma.cu, "Fused prepare"), so both
// produce the same bits. Every lane of a warp must call the shuffling functions together.
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "ops/cuda/dense_common.cuh"

namespace grt::cuda::prep {

using dense::from_float;
using dense::kChunk;
using dense::round_to;
using dense::store_chunk;
using dense::to_float;

// The chunk's V elements as floats, by bit operations on its four 32-bit words (the exact
// conversion to_float does; no 16-bit register moves).
template <typename T>
__device__ __forceinline__ void unpack_chunk_bits(const uint4& raw, float* x) {
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(T) == 2) {
      x[2 * i] = __uint_as_float(w[i] << 16);
      x[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    } else {
      x[i] = __uint_as_float(w[i]);
    }
  }
}

// The lane's chunk as floats (x) and the sum of squares of the head's elements over its L lanes
// (each lane FMAs its own chunk in order, then a butterfly; as rms_norm_kernel sums). kBits: the
// chunk unpacked by unpack_chunk_bits (the same floats).
template <typename T, int L, bool kBits = false>
__device__ __forceinline__ float chunk_sum_sq(const uint4& raw, float* x) {
  constexpr int V = kChunk<T>;
  if constexpr (kBits) {
    unpack_chunk_bits<T>(raw, x);
  } else {
    const T* xe = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int j = 0; j < V; ++j) x[j] = to_float(xe[j]);
  }
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < V; ++j) ss = __fmaf_rn(x[j], x[j], ss);
#pragma unroll
  for (int o = L / 2; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  return ss;
}

// The V cos and V sin values of the lane's elements (j0.. of the half head) from cos/sin row `row`.
template <int V>
__device__ __forceinline__ void load_cos_sin(const float* row, int j0, int half, float* cs_c, float* cs_s) {
#pragma unroll
  for (int j = 0; j < V; j += 4) {
    const float4 cv = *reinterpret_cast<const float4*>(row + j0 + j);
    const float4 sv = *reinterpret_cast<const float4*>(row + half + j0 + j);
    cs_c[j] = cv.x, cs_c[j + 1] = cv.y, cs_c[j + 2] = cv.z, cs_c[j + 3] = cv.w;
    cs_s[j] = sv.x, cs_s[j + 1] = sv.y, cs_s[j + 2] = sv.z, cs_s[j + 3] = sv.w;
  }
}

// Two values rounded to the dtype and back (round_to<T> of each: the same round-to-nearest, two
// elements per conversion instruction for bf16). kBits: back to float by bit operations on the
// 32-bit pair (bf16 -> f32 is the 16 bits placed high, exactly), one instruction an element.
template <typename T, bool kBits = false>
__device__ __forceinline__ void round_pair(float& a, float& b) {
  if constexpr (sizeof(T) == 2) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    if constexpr (kBits) {
      const uint32_t bits = *reinterpret_cast<const uint32_t*>(&h);  // a in the low half
      a = __uint_as_float(bits << 16);
      b = __uint_as_float(bits & 0xffff0000u);
    } else {
      a = __low2float(h);
      b = __high2float(h);
    }
  }
}

// norm_rope_chunk's arithmetic (same operations, same order, same bits) with fewer instructions.
// kBits (the default lanes kernel's kNext form): the dtype -> float conversions by bit operations (unpack_chunk_bits).
// The result y of the lane's elements; false (y not computed) where !write.
template <typename T, int L, bool kBits = false>
__device__ __forceinline__ bool cut_norm_rope_values(const uint4& raw, bool norm, const uint4& wraw, float eps,
                                                     bool rope, const float* cs_c, const float* cs_s, int sub,
                                                     bool write, float (&y)[kChunk<T>]) {
  constexpr int V = kChunk<T>, hd = L * V;
  float x[V];
  const float ss = chunk_sum_sq<T, L, kBits>(raw, x);
  if (norm) {
    const float inv = rsqrtf(ss / static_cast<float>(hd) + eps);
    const T* we = reinterpret_cast<const T*>(&wraw);
#pragma unroll
    for (int j = 0; j < V; ++j) x[j] = x[j] * inv;
#pragma unroll
    for (int j = 0; j < V; j += 2) round_pair<T, kBits>(x[j], x[j + 1]);
    if constexpr (kBits) {
      float wf[V];
      unpack_chunk_bits<T>(wraw, wf);
#pragma unroll
      for (int j = 0; j < V; ++j) x[j] = wf[j] * x[j];
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) x[j] = to_float(we[j]) * x[j];
    }
#pragma unroll
    for (int j = 0; j < V; j += 2) round_pair<T, kBits>(x[j], x[j + 1]);
  }
  float partner[V];
#pragma unroll
  for (int j = 0; j < V; ++j) partner[j] = __shfl_xor_sync(0xffffffffu, x[j], L / 2);
  if (!write) return false;
  if (rope) {
    // rope_rotate's lo = a c - b s (low half: a = x, b = partner) and hi = b c + a s (high half:
    // b = x, a = partner) are both x c + partner (+-s): the sign bit of the product flips in the low half.
    const uint32_t flip = sub < L / 2 ? 0x80000000u : 0u;
#pragma unroll
    for (int j = 0; j < V; ++j)
      y[j] = __fadd_rn(__fmul_rn(x[j], cs_c[j]), __uint_as_float(__float_as_uint(__fmul_rn(partner[j], cs_s[j])) ^ flip));
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) y[j] = x[j];
  }
  return true;
}

// cut_norm_rope_values stored to out (the chunk's place) where write.
template <typename T, int L, bool kBits = false>
__device__ __forceinline__ void cut_norm_rope_chunk(const uint4& raw, bool norm, const uint4& wraw, float eps,
                                                    bool rope, const float* cs_c, const float* cs_s, int sub,
                                                    bool write, T* out) {
  float y[kChunk<T>];
  if (cut_norm_rope_values<T, L, kBits>(raw, norm, wraw, eps, rope, cs_c, cs_s, sub, write, y))
    store_chunk(out, 0, L * kChunk<T>, true, y);
}

// The chunk's values rounded to the dtype, packed as store_chunk stores them.
template <typename T>
__device__ __forceinline__ uint4 pack_chunk(const float* y) {
  uint4 raw;
  T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
  for (int j = 0; j < kChunk<T>; ++j) e[j] = from_float<T>(y[j]);
  return raw;
}

}  // namespace grt::cuda::prep
