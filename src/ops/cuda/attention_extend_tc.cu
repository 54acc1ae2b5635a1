// Paged extend attention on tensor cores (WMMA 16x16x16, bf16/f16 in, f32 accumulate) for
// head_dim 64 and 128. One block per (q tile of 64 new tokens, q head, request); 4 warps own 16
// query rows each. Per key tile of 64 positions (gathered through req_to_token with 16-byte
// loads): S = Q·Kᵀ on tensor cores into shared memory, an online softmax by lane pairs (one row
// per pair), then O += P·V on tensor cores with O kept in shared memory (WMMA accumulators have
// no row mapping, so the per-row rescale happens there). Tiles past a warp's causal limit are
// skipped by that warp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>

#include "device/cuda/cuda_check.h"
#include "ops/cuda/attention_common.cuh"
#include "ops/cuda/attention_extend_params.h"

namespace grt::cuda {
namespace {

using namespace attn;
using namespace nvcuda;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kBQ = 16 * kWarps;  // query rows per block
constexpr int kBK = 64;           // keys per tile

template <int HD>
struct TcLayout {
  static constexpr int ld_qkv = HD + 8;  // bf16 elements; +16 bytes staggers banks
  static constexpr int ld_s = kBK + 4;   // floats
  static constexpr int ld_p = kBK + 8;   // bf16 elements
  static constexpr int ld_o = HD + 4;    // floats
  static constexpr size_t q_bytes = size_t{kBQ} * ld_qkv * 2;
  static constexpr size_t kv_bytes = size_t{kBK} * ld_qkv * 2;
  static constexpr size_t s_bytes = size_t{kWarps} * 16 * ld_s * 4;
  static constexpr size_t p_bytes = size_t{kWarps} * 16 * ld_p * 2;
  static constexpr size_t o_bytes = size_t{kWarps} * 16 * ld_o * 4;
  static constexpr size_t total = q_bytes + 2 * kv_bytes + s_bytes + p_bytes + o_bytes;
};

template <typename T, int HD>
__global__ void __launch_bounds__(kThreads) extend_tc_kernel(ExtendParams p) {
  using L = TcLayout<HD>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* qs = reinterpret_cast<T*>(smem);
  T* ks = reinterpret_cast<T*>(smem + L::q_bytes);
  T* vs = reinterpret_cast<T*>(smem + L::q_bytes + L::kv_bytes);
  float* ss = reinterpret_cast<float*>(smem + L::q_bytes + 2 * L::kv_bytes);
  T* ps = reinterpret_cast<T*>(smem + L::q_bytes + 2 * L::kv_bytes + L::s_bytes);
  float* os = reinterpret_cast<float*>(smem + L::q_bytes + 2 * L::kv_bytes + L::s_bytes + L::p_bytes);
  __shared__ int64_t slots[kBK];

  const int b = blockIdx.z, h = blockIdx.y, kvh = h / p.group;
  const int ext = min(max(p.extend_lens[b], 0), p.max_extend_len);
  const int q0 = blockIdx.x * kBQ;
  if (q0 >= ext) return;
  const int64_t prefix = max(p.prefix_lens[b], 0);
  const int64_t start = p.extend_start_loc[b];
  const int32_t req = p.req_pool_indices[b];
  const int32_t* table = (req >= 0 && req < p.max_reqs) ? p.req_to_token + req * p.max_context : nullptr;
  const int rows = min(kBQ, ext - q0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  constexpr int kChunks = HD / 8;  // 16-byte chunks per row

  // Q tile; rows past the request (or the output) are zeros.
  const T* q = static_cast<const T*>(p.q);
  for (int i = threadIdx.x; i < kBQ * kChunks; i += kThreads) {
    const int r = i / kChunks, c = (i % kChunks) * 8;
    const int64_t row = start + q0 + r;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (r < rows && row >= 0 && row < p.num_rows)
      v = *reinterpret_cast<const uint4*>(q + row * p.q_stride + static_cast<int64_t>(h) * HD + c);
    *reinterpret_cast<uint4*>(qs + r * L::ld_qkv + c) = v;
  }
  float* o_w = os + warp * 16 * L::ld_o;
  for (int i = lane; i < 16 * HD; i += 32) o_w[(i / HD) * L::ld_o + i % HD] = 0.0f;

  // Lane pair (2r, 2r+1) owns row r of the warp's 16: columns [half * 32, +32) of S and
  // [half * HD/2, +HD/2) of O.
  const int r = lane >> 1, half = lane & 1;
  const int64_t qpos = prefix + q0 + warp * 16 + r;  // causal limit of this lane's row
  const int64_t warp_last = prefix + q0 + warp * 16 + 15;
  float m = -INFINITY, l = 0.0f;

  const int64_t kv_end = min(prefix + q0 + rows, p.max_context);
  const int64_t width = static_cast<int64_t>(p.nkv) * HD;
  const T* kc = static_cast<const T*>(p.k_cache) + static_cast<int64_t>(kvh) * HD;
  const T* vc = static_cast<const T*>(p.v_cache) + static_cast<int64_t>(kvh) * HD;
  float* s_w = ss + warp * 16 * L::ld_s;
  T* p_w = ps + warp * 16 * L::ld_p;

  for (int64_t k0 = 0; k0 < kv_end; k0 += kBK) {
    __syncthreads();  // previous tile consumed; Q and O init visible the first time
    if (threadIdx.x < kBK) {
      const int64_t pos = k0 + threadIdx.x;
      slots[threadIdx.x] = pos < kv_end ? kv_slot(table, pos, p.num_slots) : -1;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < kBK * kChunks; i += kThreads) {
      const int kr = i / kChunks, c = (i % kChunks) * 8;
      const int64_t s = slots[kr];
      uint4 kv = make_uint4(0, 0, 0, 0), vv = kv;
      if (s >= 0) {
        kv = *reinterpret_cast<const uint4*>(kc + s * width + c);
        vv = *reinterpret_cast<const uint4*>(vc + s * width + c);
      }
      *reinterpret_cast<uint4*>(ks + kr * L::ld_qkv + c) = kv;
      *reinterpret_cast<uint4*>(vs + kr * L::ld_qkv + c) = vv;
    }
    __syncthreads();
    if (k0 > warp_last) continue;  // every key of this tile is in the future of all our rows

    // S = Q_w · Kᵀ (16 x 64).
#pragma unroll
    for (int n = 0; n < kBK / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> fb;
        wmma::load_matrix_sync(fa, qs + warp * 16 * L::ld_qkv + kk * 16, L::ld_qkv);
        wmma::load_matrix_sync(fb, ks + n * 16 * L::ld_qkv + kk * 16, L::ld_qkv);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(s_w + n * 16, acc, L::ld_s, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax for row r over this tile; P to shared memory, O rescaled in place.
    float sv[32];
    float mt = -INFINITY;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const int64_t key = k0 + half * 32 + j;
      sv[j] = (key <= qpos && key < kv_end) ? s_w[r * L::ld_s + half * 32 + j] * p.scale_log2 : -INFINITY;
      mt = fmaxf(mt, sv[j]);
    }
    mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, 1));
    const float mn = fmaxf(m, mt);
    const float mu = mn == -INFINITY ? 0.0f : mn;
    const float alpha = exp2f(m - mu);
    float rs = 0.0f;
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      const float pr = exp2f(sv[j] - mu);
      rs += pr;
      p_w[r * L::ld_p + half * 32 + j] = from_float<T>(pr);
    }
    rs += __shfl_xor_sync(0xffffffffu, rs, 1);
    l = l * alpha + rs;
    m = mn;
#pragma unroll 8
    for (int c = half * (HD / 2); c < (half + 1) * (HD / 2); ++c) o_w[r * L::ld_o + c] *= alpha;
    __syncwarp();

    // O += P · V (16 x HD).
#pragma unroll
    for (int n = 0; n < HD / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, o_w + n * 16, L::ld_o, wmma::mem_row_major);
#pragma unroll
      for (int kk = 0; kk < kBK / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, p_w + kk * 16, L::ld_p);
        wmma::load_matrix_sync(fb, vs + kk * 16 * L::ld_qkv + n * 16, L::ld_qkv);
        wmma::mma_sync(acc, fa, fb, acc);
      }
      wmma::store_matrix_sync(o_w + n * 16, acc, L::ld_o, wmma::mem_row_major);
    }
    __syncwarp();
  }

  // Normalise and write this lane's half row.
  __syncwarp();
  const int qr = warp * 16 + r;
  const int64_t row = start + q0 + qr;
  if (qr < rows && row >= 0 && row < p.num_rows) {
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    T* out = static_cast<T*>(p.out) + row * p.nq * HD + static_cast<int64_t>(h) * HD;
    for (int c = half * (HD / 2); c < (half + 1) * (HD / 2); c += 2)
      store2(out + c, make_float2(o_w[r * L::ld_o + c] * inv, o_w[r * L::ld_o + c + 1] * inv));
  }
}

template <typename T, int HD>
void launch_tc(cudaStream_t st, const ExtendParams& p) {
  const size_t smem = TcLayout<HD>::total;
  auto kernel = extend_tc_kernel<T, HD>;
  GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
                 "allowing {} bytes of shared memory for attention_extend (head_dim {})", smem, HD);
  dim3 grid(static_cast<unsigned>((p.max_extend_len + kBQ - 1) / kBQ), static_cast<unsigned>(p.nq),
            static_cast<unsigned>(p.num_reqs));
  kernel<<<grid, kThreads, smem, st>>>(p);
}

}  // namespace

bool launch_extend_tensor_core(cudaStream_t stream, const ExtendParams& p, DType dtype) {
  if (dtype != DType::BF16 && dtype != DType::F16) return false;
  if (p.hd != 64 && p.hd != 128) return false;
  // 16-byte loads of q rows and cache rows.
  const auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  if (!aligned(p.q) || !aligned(p.k_cache) || !aligned(p.v_cache) || (p.q_stride * 2) % 16 != 0 ||
      (static_cast<int64_t>(p.nkv) * p.hd * 2) % 16 != 0)
    return false;
  if (dtype == DType::BF16) {
    if (p.hd == 64) launch_tc<__nv_bfloat16, 64>(stream, p);
    else launch_tc<__nv_bfloat16, 128>(stream, p);
  } else {
    if (p.hd == 64) launch_tc<__half, 64>(stream, p);
    else launch_tc<__half, 128>(stream, p);
  }
  return true;
}

}  // namespace grt::cuda
