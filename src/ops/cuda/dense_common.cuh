// Device helpers shared by the dense CUDA kernels: float conversion of bf16/f32 elements,
// 16-byte chunk loads/stores with a scalar fallback, a block-wide sum, an L2 prefetch, the launch
// stream and the resident blocks of a kernel.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "core/device_id.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_stream.h"
#include "device/stream.h"

namespace grt::cuda::dense {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// v rounded to T and back: what HF's `.to(dtype)` does to an intermediate.
template <typename T>
__device__ __forceinline__ float round_to(float v) { return to_float(from_float<T>(v)); }

// The neox rotation of the pair (a, b) = (x[j], x[j + head_dim/2]) by (c, s) = (cos, sin):
// lo = a*c - b*s, hi = b*c + a*s, each product and sum rounded to float32 on its own (the _rn
// intrinsics are never contracted into FMAs), so every kernel calling this — apply_rope_ and
// prepare_qkv_ — gets the same bits, which are also the CPU reference's.
__device__ __forceinline__ void rope_rotate(float a, float b, float c, float s, float& lo, float& hi) {
  lo = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
  hi = __fadd_rn(__fmul_rn(b, c), __fmul_rn(a, s));
}

// Elements of T per 16-byte chunk.
template <typename T>
constexpr int kChunk = 16 / static_cast<int>(sizeof(T));

// Loads the chunk of kChunk<T> elements starting at element c of row p (n elements long) as
// floats: one 16-byte load when `vec` (row aligned, n a multiple of the chunk), else element by
// element with zeros past the end.
template <typename T>
__device__ __forceinline__ void load_chunk(const T* p, int64_t c, int64_t n, bool vec, float* out) {
  constexpr int V = kChunk<T>;
  if (vec) {
    uint4 raw = *reinterpret_cast<const uint4*>(p + c);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] = to_float(e[j]);
    return;
  }
#pragma unroll
  for (int j = 0; j < V; ++j) out[j] = c + j < n ? to_float(p[c + j]) : 0.0f;
}

template <typename T>
__device__ __forceinline__ void store_chunk(T* p, int64_t c, int64_t n, bool vec, const float* in) {
  constexpr int V = kChunk<T>;
  if (vec) {
    uint4 raw;
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int j = 0; j < V; ++j) e[j] = from_float<T>(in[j]);
    *reinterpret_cast<uint4*>(p + c) = raw;
    return;
  }
#pragma unroll
  for (int j = 0; j < V; ++j)
    if (c + j < n) p[c + j] = from_float<T>(in[j]);
}

// Sum of `v` over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
// Uses one static shared array without a trailing barrier: call it once per kernel.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / 32;
  v = lane < warps ? partial[lane] : 0.0f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The closing pass of a residual add + RMSNorm over a row of n elements, this thread holding `ss`,
// its part of the row's sum of squares: out = w * round(res * rsqrt(mean + eps)) (HF's order) over
// the chunks this thread wrote into `res` itself, so no barrier is needed before it. Calls
// block_sum: once per kernel.
template <typename T>
__device__ __forceinline__ void norm_row_from_residual(const T* res, const T* w, T* out, int64_t n, float ss, float eps,
                                                       bool vec) {
  constexpr int V = kChunk<T>;
  const float inv = rsqrtf(block_sum(ss) / static_cast<float>(n) + eps);
  float a[V], b[V];
  for (int64_t c = static_cast<int64_t>(threadIdx.x) * V; c < n; c += static_cast<int64_t>(blockDim.x) * V) {
    load_chunk(res, c, n, vec, b);
    load_chunk(w, c, n, vec, a);
#pragma unroll
    for (int j = 0; j < V; ++j) b[j] = a[j] * round_to<T>(b[j] * inv);
    store_chunk(out, c, n, vec, b);
  }
}

// True when `p` + every multiple of `stride_elems` elements is 16-byte aligned.
inline bool aligned16(const void* p, int64_t stride_elems, size_t elem_size) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0 && (static_cast<size_t>(stride_elems) * elem_size) % 16 == 0;
}

// The stream the op launches on: the device's current stream, with the device made current.
inline cudaStream_t launch_stream(Device d) {
  use_device(d.index);
  return native_stream(current_stream(d));
}

// Asks L2 for the 128-byte line holding p; nothing waits on it (a later load then hits L2). The
// "memory" clobber keeps it where it is written among the loads and stores.
__device__ __forceinline__ void prefetch_l2(const void* p) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p) : "memory");
}

// Blocks of `threads` threads (no dynamic shared memory) of `kernel` that device `dev` holds at
// once: occupancy x SMs, at least 1; read once per kernel and device.
inline int64_t resident_blocks(const void* kernel, int threads, int dev) {
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, int64_t> cache;  // (kernel, dev) -> blocks; one block size a kernel
  std::lock_guard<std::mutex> lock(mu);
  int64_t& n = cache[{kernel, dev}];
  if (n == 0) {
    int sms = 0, per_sm = 0;
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "reading the SM count of cuda:{}",
                   dev);
    GRT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0),
                   "reading the occupancy of a kernel of {} threads on cuda:{}", threads, dev);
    n = static_cast<int64_t>(sms) * per_sm > 0 ? static_cast<int64_t>(sms) * per_sm : 1;
  }
  return n;
}

// Threads for one block per row of `chunks` chunks: a multiple of 32 in [32, 1024].
inline int row_threads(int64_t chunks) {
  int64_t t = (chunks + 31) / 32 * 32;
  return static_cast<int>(t < 32 ? 32 : (t > 1024 ? 1024 : t));
}

// acc + w . x over one 16-byte chunk of bf16 (8 elements, ascending, one fmaf each): the order of
// the grouped GEMVs (moe_gemv.cu) and of the 1-row linear (gemv_row1.cu).
__device__ __forceinline__ float dot8(const uint4& w, const uint4& x, float acc) {
  const __nv_bfloat162* a = reinterpret_cast<const __nv_bfloat162*>(&w);
  const __nv_bfloat162* b = reinterpret_cast<const __nv_bfloat162*>(&x);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 p = __bfloat1622float2(a[i]), q = __bfloat1622float2(b[i]);
    acc = fmaf(p.x, q.x, acc);
    acc = fmaf(p.y, q.y, acc);
  }
  return acc;
}

// The sum over the warp by an xor butterfly (16, 8, 4, 2, 1): every lane gets the same bits.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

}  // namespace grt::cuda::dense
