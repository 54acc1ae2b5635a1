// Element loads shared by the attention kernels: 8 consecutive elements (16 bytes of bf16/f16,
// 32 of f32) or 2 elements, converted to float; and the store of one float as T.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace grt::cuda::attn {

__device__ __forceinline__ void load8(const __nv_bfloat16* p, float f[8]) {
  uint4 u = *reinterpret_cast<const uint4*>(p);
  const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 t = __bfloat1622float2(h[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}
__device__ __forceinline__ void load8(const __half* p, float f[8]) {
  uint4 u = *reinterpret_cast<const uint4*>(p);
  const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 t = __half22float2(h[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}
__device__ __forceinline__ void load8(const float* p, float f[8]) {
  float4 a = *reinterpret_cast<const float4*>(p);
  float4 b = *reinterpret_cast<const float4*>(p + 4);
  f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}

// 8 elements kept as raw bits (4 registers for 16-bit types), converted with load8(raw.elems()).
template <typename T>
struct Raw8 {
  uint4 v[sizeof(T) / 2];
  __device__ __forceinline__ void load(const T* p) {
#pragma unroll
    for (int w = 0; w < static_cast<int>(sizeof(T)) / 2; ++w) v[w] = reinterpret_cast<const uint4*>(p)[w];
  }
  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int w = 0; w < static_cast<int>(sizeof(T)) / 2; ++w) v[w] = make_uint4(0, 0, 0, 0);
  }
  __device__ __forceinline__ const T* elems() const { return reinterpret_cast<const T*>(v); }
};

__device__ __forceinline__ float2 load2(const __nv_bfloat16* p) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
}
__device__ __forceinline__ float2 load2(const __half* p) { return __half22float2(*reinterpret_cast<const __half2*>(p)); }
__device__ __forceinline__ float2 load2(const float* p) { return make_float2(p[0], p[1]); }

__device__ __forceinline__ void store2(__nv_bfloat16* p, float2 v) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __float22bfloat162_rn(v);
}
__device__ __forceinline__ void store2(__half* p, float2 v) { *reinterpret_cast<__half2*>(p) = __float22half2_rn(v); }
__device__ __forceinline__ void store2(float* p, float2 v) { p[0] = v.x, p[1] = v.y; }

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }

// A table entry as read, and the CPU reference's rule for it: out of range -> sink slot 0. Split so
// that a kernel can ask for entries early and check them only where it uses them: the check is the
// load's first consumer, so checking at load time makes the thread wait there for the L2 trip.
__device__ __forceinline__ int32_t kv_entry(const int32_t* row, int64_t pos) { return row == nullptr ? 0 : row[pos]; }
__device__ __forceinline__ int64_t kv_checked(int32_t entry, int64_t num_slots) {
  return (entry < 0 || entry >= num_slots) ? 0 : entry;
}
// A thread's N rows of one K/V tile: table entries as read and a bit a row for "before the end"
// (rows past it are zero-filled). Entries are checked (kv_checked) only where a copy uses them, so a
// read issued a tile ahead does not stall the thread at the read (H100, bench/results/
// h100_2026-11-26_session28: with the check at the read, 38% of the bs-64 decode kernel's stall
// samples sat on it).
template <int N>
struct TileEntries {
  static_assert(N <= 32, "live holds a bit a row");
  int32_t entry[N];
  uint32_t live;
  // Positions first, first + step, ... of `row` (null: the sink), those below `end`.
  __device__ __forceinline__ void read(const int32_t* row, int first, int step, int end) {
    uint32_t bits = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int pos = first + i * step;
      const bool in = pos < end;
      entry[i] = in ? kv_entry(row, pos) : 0;
      bits |= in ? 1u << i : 0u;
    }
    live = bits;
  }
  __device__ __forceinline__ bool ok(int i) const { return ((live >> i) & 1u) != 0; }
  __device__ __forceinline__ int64_t slot(int i, int64_t num_slots) const { return kv_checked(entry[i], num_slots); }
};
// KV slot of (request slot, position) with the CPU reference's rule: out-of-range → sink slot 0.
__device__ __forceinline__ int64_t kv_slot(const int32_t* row, int64_t pos, int64_t num_slots) {
  return kv_checked(kv_entry(row, pos), num_slots);
}

constexpr float kLog2e = 1.4426950408889634f;

}  // namespace grt::cuda::attn
