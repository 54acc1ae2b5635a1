// prepare_qkv_ on CUDA: a grid of (token, head block). Each block copies its share of the token's
// V row into the cache slot, and each of its warps takes one head (q heads, then k heads): it
// stages the head as floats in shared memory, applies the RMSNorm when a weight is given, then
// rotates the (j, j + head_dim/2) pairs and writes q in place or k into its cache row. (One block
// per token ran a decode step's 24-40 heads in two rounds of 16 warps on one SM: 6.1 us at batch
// 1 on the H100; heads spread over blocks run in one round on many SMs.) The heads are
// independent, so the split changes no result bit.
//
// Bit-for-bit agreement with rms_norm_ + apply_rope_ + store_kv on CUDA:
//  - the norm's sum of squares repeats rms_norm_kernel (norm.cu) launched on one head row: that
//    kernel runs row_threads(chunks) threads, each summing (FMA) the one 16-byte chunk it loads,
//    then block_sum (a butterfly per warp, then a butterfly over the warp sums). Here lane l of
//    the warp plays those threads l, l + 32, ... in turn with the same chunks, butterflies and
//    final sum, so the float32 total, inv and y = w * round(x * inv) are the same bits;
//  - the normed head is rounded to the dtype (where rms_norm_ stores it), then rotated with
//    dense::rope_rotate, the very function apply_rope_'s kernel uses;
//  - K and V reach the caches as the dtype's bits (store_kv copies bytes).
// On the decode path: PDL contract of ops/cuda/pdl.cuh (wait, then let attention launch).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/env_switch.h"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/dense_cuda.h"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda {
namespace {

using namespace dense;

constexpr int kMaxWarps = 4;           // warps (heads) per block
constexpr int kMaxWarpsPerToken = 16;  // GRAPHRT_PREPARE_QKV=token: the old one block per token

// GRAPHRT_PREPARE_QKV=token launches one block per token (the kernel before session 4) for A/B;
// heads (default) spreads each token's heads over blocks. Same result bits either way.
bool one_block_per_token() {
  static const bool token = [] {
    return env_choice("GRAPHRT_PREPARE_QKV", {"heads", "token"}, 0) == 1;
  }();
  return token;
}
constexpr int64_t kMaxHeadDim = 1024;
constexpr int64_t kSmemBytes = 48 * 1024;  // the default dynamic shared memory limit

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One head of hd elements, read from src, written to dst (may be src). buf: hd floats of this
// warp's shared memory. w: the norm weight or null. cs: the cos/sin row or null (no rope).
// Called by all 32 lanes of a warp.
template <typename T>
__device__ void prepare_head(const T* src, T* dst, const T* w, int64_t hd, float eps, bool vec, const float* cs,
                             float* buf, int lane) {
  constexpr int V = kChunk<T>;
  const int64_t chunks = (hd + V - 1) / V;
  const int vwarps = static_cast<int>((chunks + 31) / 32);  // rms_norm_kernel's warps for this row
  float mine = 0.0f;                     // lane l keeps the sum of virtual warp l
  for (int vw = 0; vw < vwarps; ++vw) {  // warp-uniform trip count
    const int64_t c = (static_cast<int64_t>(vw) * 32 + lane) * V;
    float ss = 0.0f;
    if (c < hd) {
      float v[V];
      load_chunk(src, c, hd, vec, v);
#pragma unroll
      for (int j = 0; j < V; ++j) ss = __fmaf_rn(v[j], v[j], ss);  // as rms_norm_kernel (zeros past the end add 0)
      if (vec) {  // a whole chunk, hd % 4 == 0: 16-byte shared stores (fewer bank conflicts)
#pragma unroll
        for (int j = 0; j < V; j += 4)
          *reinterpret_cast<float4*>(buf + c + j) = make_float4(v[j], v[j + 1], v[j + 2], v[j + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j)
          if (c + j < hd) buf[c + j] = v[j];
      }
    }
    if (w) {
      ss = warp_sum(ss);
      if (lane == vw) mine = ss;
    }
  }
  __syncwarp();
  if (w) {
    const float inv = rsqrtf(warp_sum(lane < vwarps ? mine : 0.0f) / static_cast<float>(hd) + eps);
    for (int64_t i = lane; i < hd; i += 32) buf[i] = round_to<T>(to_float(w[i]) * round_to<T>(buf[i] * inv));
    __syncwarp();
  }
  if (cs) {
    const int64_t half = hd / 2;
    for (int64_t j = lane; j < half; j += 32) {
      float lo, hi;
      rope_rotate(buf[j], buf[j + half], cs[j], cs[half + j], lo, hi);
      dst[j] = from_float<T>(lo);
      dst[j + half] = from_float<T>(hi);
    }
  } else if (w || dst != src) {
    for (int64_t i = lane; i < hd; i += 32) dst[i] = from_float<T>(buf[i]);
  }
  __syncwarp();  // buf is reused for the warp's next head
}

template <typename T>
__global__ void prepare_qkv_kernel(ops::PrepareQkvArgs a, bool vec_q, bool vec_k, bool vec_v) {
  extern __shared__ __align__(16) float smem[];
  pdl_wait();
  pdl_trigger();
  const int64_t t = blockIdx.x, hd = a.head_dim, width = a.kv_heads * hd;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int warps = static_cast<int>(blockDim.x / 32);
  const int64_t pos = a.positions[t];
  const float* cs = pos >= 0 && pos < a.max_positions ? a.cos_sin + pos * hd : nullptr;  // null: no rope
  const int64_t slot = a.out_cache_loc[t];
  const bool store = slot >= 0 && slot < a.num_slots;  // store_kv skips other slots too
  T* q = static_cast<T*>(a.q) + t * a.q_stride;
  const T* k = static_cast<const T*>(a.k) + t * a.k_stride;
  T* kc = static_cast<T*>(a.k_cache) + (store ? slot : 0) * width;
  if (store) {  // block y of Y copies the y-th of Y equal shares of the row
    const T* v = static_cast<const T*>(a.v) + t * a.v_stride;
    T* vc = static_cast<T*>(a.v_cache) + slot * width;
    const int64_t units = vec_v ? width * static_cast<int64_t>(sizeof(T)) / 16 : width;
    const int64_t lo = units * blockIdx.y / gridDim.y, hi = units * (blockIdx.y + 1) / gridDim.y;
    if (vec_v) {
      for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x)
        reinterpret_cast<uint4*>(vc)[i] = reinterpret_cast<const uint4*>(v)[i];
    } else {
      for (int64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) vc[i] = v[i];
    }
  }
  const bool q_work = a.q_norm != nullptr || cs != nullptr;  // else q stays as it is
  // Heads [first, heads) are this token's work; warp w of block y takes first + y * warps + w.
  const int64_t first = q_work ? 0 : a.q_heads;
  const int64_t heads = a.q_heads + (store ? a.kv_heads : 0);
  float* buf = smem + static_cast<int64_t>(warp) * hd;
  const int64_t stride = static_cast<int64_t>(gridDim.y) * warps;
  for (int64_t h = first + static_cast<int64_t>(blockIdx.y) * warps + warp; h < heads; h += stride) {
    if (h < a.q_heads)
      prepare_head<T>(q + h * hd, q + h * hd, static_cast<const T*>(a.q_norm), hd, a.eps, vec_q, cs, buf, lane);
    else
      prepare_head<T>(k + (h - a.q_heads) * hd, kc + (h - a.q_heads) * hd, static_cast<const T*>(a.k_norm), hd,
                      a.eps, vec_k, cs, buf, lane);
  }
}

template <typename T>
void launch(int dev, cudaStream_t s, const ops::PrepareQkvArgs& a) {
  constexpr int V = kChunk<T>;
  const int64_t hd = a.head_dim, es = static_cast<int64_t>(sizeof(T));
  // 16-byte chunk loads of every head: the row base, row stride and head size all 16-byte multiples.
  const bool vec_q = hd % V == 0 && aligned16(a.q, a.q_stride, sizeof(T));
  const bool vec_k = hd % V == 0 && aligned16(a.k, a.k_stride, sizeof(T));
  const bool vec_v = (a.kv_heads * hd * es) % 16 == 0 && aligned16(a.v, a.v_stride, sizeof(T)) &&
                     aligned16(a.v_cache, 0, sizeof(T));
  const int64_t by_smem = kSmemBytes / (hd * static_cast<int64_t>(sizeof(float)));
  const int64_t all_heads = a.q_heads + a.kv_heads;
  const bool per_token = one_block_per_token();
  const int64_t max_warps = per_token ? kMaxWarpsPerToken : kMaxWarps;
  const int warps = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>({all_heads, max_warps, by_smem})));
  const size_t smem = static_cast<size_t>(warps) * static_cast<size_t>(hd) * sizeof(float);
  // Enough blocks for one head per warp (the kernel's loop also covers a smaller grid).
  const int64_t head_blocks = per_token ? 1 : std::clamp<int64_t>((all_heads + warps - 1) / warps, 1, 65535);
  (void)launch_pdl(dev, prepare_qkv_kernel<T>, dim3(static_cast<unsigned>(a.tokens), static_cast<unsigned>(head_blocks)),
                   dim3(warps * 32), smem, s, 1, a, vec_q, vec_k, vec_v);
}

}  // namespace

void prepare_qkv(Device d, const ops::PrepareQkvArgs& a) {
  GRT_CHECK(a.tokens <= 0x7fffffff, "prepare_qkv_: {} tokens exceed one grid", a.tokens);
  GRT_CHECK(a.head_dim <= kMaxHeadDim, "prepare_qkv_ on CUDA supports head_dim up to {}, got {}", kMaxHeadDim,
            a.head_dim);
  cudaStream_t s = dense::launch_stream(d);
  if (a.dtype == DType::BF16) launch<__nv_bfloat16>(d.index, s, a);
  else if (a.dtype == DType::F32) launch<float>(d.index, s, a);
  else GRT_FAIL("prepare_qkv_ on CUDA supports bf16 and f32, got {}", dtype_name(a.dtype));
  GRT_CUDA_CHECK_LAUNCH("prepare_qkv_ tokens={} q_heads={} kv_heads={} head_dim={} dtype={}", a.tokens, a.q_heads,
                        a.kv_heads, a.head_dim, dtype_name(a.dtype));
}

}  // namespace grt::cuda
