// What the small-M GEMV kernels share (gemv.cu: M <= 16, gemv_row1.cu: 1-2 rows, gemv_rows.cu: 3-16,
// gemv_wide.cu: 17..64 rows): the
// launch parameters, the 16-byte weight loads, the mma, the RMSNorm prologue's rounding and the
// epilogue stores. Internal to ops/cuda (the public entry points are gemv.h / gemv_fused.h).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace grt::cuda::gemv_detail {

// Element kinds of the epilogue (bias and output), chosen at run time: one kernel per input dtype
// and column-tile count, not per output dtype.
enum Kind : int { kNone = -1, kF32 = 0, kBF16 = 1, kF16 = 2 };

struct Params {
  const void* x;
  const void* w;
  const void* bias;
  void* out;
  int64_t x_stride;
  int M, N, K;
  int groups;   // K groups (gemv.cu: of 64; gemv_wide.cu: stages of 64)
  int cluster;  // blocks per column tile (a cluster when > 1)
  int prefetch;  // groups per warp, after its first, asked into L2 before pdl_wait
  int bias_kind, out_kind;
  // Decode fusions (ops/fused_linear.h). norm_w (NORM kernels only): x is RMSNorm'ed with this
  // weight as it is loaded. residual (non-null): the epilogue adds the rounded output into
  // residual[m * res_stride + n] (out's dtype) instead of storing it to out.
  const void* norm_w;
  float eps;
  void* residual;
  int64_t res_stride;
  // silu_inter > 0: w is a fused [gate; up] of 2 * silu_inter rows, and the kernel writes
  // silu_and_mul of the product, out [M, silu_inter]: a tile takes gate rows and the same up
  // rows, so both halves of an output meet in one block.
  int silu_inter;
  int early_trigger;  // 1: let the next kernel launch right after pdl_wait, else after the main loop
  int wn;             // gemv_wide.cu: rows of w a tile / 16 (8 or 4)
  int norm_one_pass;  // gemv.cu NORM kernels: 1 = the one-pass prologue (gemv.cu), 0 = row by row
  // gemv.cu, clusters without silu: 1 = "Cluster push" (each block pushes the sums of the outputs
  // other blocks store into their shared memory and leaves), 0 = the pull between two cluster
  // barriers. Chooses the kernel (its PUSH parameter).
  int cluster_push;
  // gemv.cu, the STAGE kernels: groups of w a warp copies into shared memory before pdl_wait (all
  // of its groups; 0 elsewhere). See "Staged weights" in gemv.cu.
  int stage_groups;
  // gemv_row1.cu: 1 = the residual element is read right after the PDL wait, beside x.
  int res_early;
};

// The GPU facts the work split depends on (never M).
struct DeviceInfo {
  int sms = 0;
  int l2_bytes = 0;
  bool clusters = false;
};
DeviceInfo device_info(int index);  // gemv.cu; cached per device

// 16 bytes of w: read once, so not kept in L1; the L2 fetches the surrounding 256 bytes, which
// the neighbouring warps read next. volatile: never speculated past its bounds check.
__device__ __forceinline__ uint4 load_weight(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// 16 bytes global -> shared (dst: a shared-state-space address), zero-filled when !valid (src-size
// 0 reads nothing; src must still be an address in the tensor); the L2 fetches the surrounding 256
// bytes, which the neighbouring lanes read next. With cp_async_commit and cp_async_wait<N>.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Asks the L2 for the line holding p (weights the block reads after pdl_wait).
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

// c += A·B for one m16n8k16 tile, f32 accumulators.
template <typename T>
__device__ __forceinline__ void mma(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                    uint32_t b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
}

__device__ __forceinline__ float load_kind(const void* p, int kind, int64_t i) {
  if (kind == kF32) return static_cast<const float*>(p)[i];
  if (kind == kBF16) return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
  return __half2float(static_cast<const __half*>(p)[i]);
}

// Output (m, n) from its sum: bias, then the store or the residual add.
__device__ __forceinline__ void store_out(const Params& p, int m, int64_t n, float s) {
  if (m >= p.M || n >= p.N) return;
  if (p.bias_kind != kNone) s += load_kind(p.bias, p.bias_kind, n);
  if (p.residual) {
    // HF's bf16 residual add: the layer output is rounded to the dtype, then the sum is.
    const int64_t r = m * p.res_stride + n;
    if (p.out_kind == kBF16) {
      auto* res = static_cast<__nv_bfloat16*>(p.residual);
      res[r] = __float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn(s)) + __bfloat162float(res[r]));
    } else {
      auto* res = static_cast<__half*>(p.residual);
      res[r] = __float2half_rn(__half2float(__float2half_rn(s)) + __half2float(res[r]));
    }
    return;
  }
  const int64_t o = m * static_cast<int64_t>(p.N) + n;
  if (p.out_kind == kF32) static_cast<float*>(p.out)[o] = s;
  else if (p.out_kind == kBF16) static_cast<__nv_bfloat16*>(p.out)[o] = __float2bfloat16_rn(s);
  else static_cast<__half*>(p.out)[o] = __float2half_rn(s);
}

__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
template <typename T>
__device__ __forceinline__ T from_f(float v) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return __float2half_rn(v);
}

// rms_norm (ops/rms_norm.h) of two packed elements: w * round(x * inv), rounded to T.
template <typename T>
__device__ __forceinline__ uint32_t norm_pair(uint32_t x, uint32_t w, float inv) {
  union P {
    uint32_t u;
    T h[2];
  } xp{x}, wp{w}, o{0u};
#pragma unroll
  for (int j = 0; j < 2; ++j) o.h[j] = from_f<T>(to_f(wp.h[j]) * to_f(from_f<T>(to_f(xp.h[j]) * inv)));
  return o.u;
}

// Two floats rounded to T each (cvt.rn.{bf16,f16}x2.f32: one conversion instruction for both,
// the rounding of from_f), packed low then high.
template <typename T>
__device__ __forceinline__ uint32_t pack_rn(float lo, float hi) {
  union {
    uint32_t u;
    __nv_bfloat162 b;
    __half2 h;
  } o;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) o.b = __floats2bfloat162_rn(lo, hi);
  else o.h = __floats2half2_rn(lo, hi);
  return o.u;
}

// norm_pair with both roundings of the pair in one packed conversion each: the same float
// products, the same round-to-nearest-even, so the same bits in half the conversions.
template <typename T>
__device__ __forceinline__ uint32_t norm_pair_packed(uint32_t x, uint32_t w, float inv) {
  union P {
    uint32_t u;
    T h[2];
  } xp{x}, wp{w};
  P xn{pack_rn<T>(to_f(xp.h[0]) * inv, to_f(xp.h[1]) * inv)};
  return pack_rn<T>(to_f(wp.h[0]) * to_f(xn.h[0]), to_f(wp.h[1]) * to_f(xn.h[1]));
}

template <typename T, bool PACKED = false>
__device__ __forceinline__ uint4 norm_chunk(uint4 x, uint4 w, float inv) {
  if constexpr (PACKED)
    return make_uint4(norm_pair_packed<T>(x.x, w.x, inv), norm_pair_packed<T>(x.y, w.y, inv),
                      norm_pair_packed<T>(x.z, w.z, inv), norm_pair_packed<T>(x.w, w.w, inv));
  return make_uint4(norm_pair<T>(x.x, w.x, inv), norm_pair<T>(x.y, w.y, inv), norm_pair<T>(x.z, w.z, inv),
                    norm_pair<T>(x.w, w.w, inv));
}

// ss + the squares of the 8 elements of v, in a fixed order.
template <typename T>
__device__ __forceinline__ float add_squares(float ss, uint4 v) {
  const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    union {
      uint32_t u;
      T h[2];
    } e{u[j]};
    ss = __fmaf_rn(to_f(e.h[0]), to_f(e.h[0]), ss);
    ss = __fmaf_rn(to_f(e.h[1]), to_f(e.h[1]), ss);
  }
  return ss;
}

// silu_and_mul (ops/activation.h) of output (m, col) from the gate and up sums: both rounded to
// T as the unfused GEMV stores them, then HF's silu(g) in the dtype, times up.
template <typename T>
__device__ __forceinline__ void store_silu(const Params& p, int m, int64_t col, float sg, float su) {
  if (m >= p.M || col >= p.silu_inter) return;
  const float g = to_f(from_f<T>(sg)), u = to_f(from_f<T>(su));
  static_cast<T*>(p.out)[m * static_cast<int64_t>(p.silu_inter) + col] =
      from_f<T>(to_f(from_f<T>(g / (1.0f + expf(-g)))) * u);
}

// Launches the wide kernel (gemv_wide.cu) for 17..64 rows; p is complete except groups,
// cluster, prefetch and wn, which it sets from N, K and the GPU.
void launch_wide(int index, cudaStream_t stream, Params p, bool bf16, const DeviceInfo& info);

// Launches the 1-2-row kernel (gemv_row1.cu) for p (M <= 2; p complete but groups, cluster, prefetch,
// stage_groups and cluster_push, which it does not use) and returns true, or returns false
// (nothing launched) where it does not take the shape: switched off, not bf16, K > 3072, more
// than 16 MiB of weights, two rows with the weights in registers, or a grid
// its registers cannot hold in one wave. The launch's error is left to the caller's check.
bool launch_row1(int index, cudaStream_t stream, const Params& p, bool bf16, const DeviceInfo& info);

// Launches the few-row kernel (gemv_rows.cu) for p (3 <= M <= 16, from 1 or 2 with
// GRAPHRT_GEMV_ROWS_MIN; p complete but groups, cluster, prefetch, stage_groups and cluster_push,
// which it does not use) and returns true, or returns false
// (nothing launched) where it does not take the shape: switched off, not bf16, K > 3072 (> 1024 with
// the norm prologue), more than 16 MiB of weights, or a grid that does not fit one wave. The
// launch's error is left to the caller's check.
bool launch_rows(int index, cudaStream_t stream, const Params& p, bool bf16, const DeviceInfo& info);

}  // namespace grt::cuda::gemv_detail
