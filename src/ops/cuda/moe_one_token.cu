// The expert MLPs of one token (moe_one_token.h): decode bs 1 of a MoE model, where the active
// experts' weights (qwen3-30b-a3b: 8 x 9 MB a layer) are the whole cost and cannot be read
// before the router has chosen them. Session 4's kernels ran them at ~1.95 TB/s (gate_up) and
// ~1.1 TB/s (down + combine) on an H100 (ncu, isolated): gate_up's 768 blocks took about two
// waves, each block starting with two dependent table reads, and down ran each warp's k experts
// in dependent rounds after the wait. Here:
//
// gate_up1: units (choice j, row n), a warp owns a contiguous run of them (the grid sized so all
//   warps are resident at once, kGuBlocksPerSm blocks an SM, and runs differ by at most one unit);
//   a warp reads the token's ids once (one load per lane) and then only streams weights, gate and
//   up chunks of kGuUnroll rounds in flight per lane. silu(gate) * up into act row j.
// down1: a block owns rows [n0, n0 + R) of the output. Before the PDL wait (while gate_up runs,
//   on SMs where it fits beside gate_up's blocks) it copies those rows of all k chosen experts (k runs of R * inter contiguous bf16) into
//   shared memory with cp.async (the ids are complete: gate_up waited for the router before it
//   triggered); after the wait it reads the k act rows once (as float32 into shared memory) and
//   each warp computes its rows: per expert the dot product, rounded to bf16 as the separate down
//   GEMV stores it, summed with the routing weight in choice order as moe_combine does.
// Per lane both kernels take chunks lane, lane + 32, ... in ascending order with one fmaf per
// element and the same xor-tree warp sum as moe_gemv.cu: bit for bit the separate GEMV ops.
//
// Measured (H100, qwen3-30b-a3b, bench/results/h100_2026-11-23_s5_moe): bs-1 step 4.45 -> 4.23
// ms with the one-token router; ncu isolated gate_up1 22.8 us (old 25.7; 50 MB at ~2.2 TB/s, not
// the ~2.8 predicted), down1 19.4 us (old 24.8; its cp.async copy of 25 MB runs at ~1.3-1.5
// TB/s with 216 KB of shared memory on the SM). Both look bounded by the loads in flight an SM
// can hold, not by the grid: the next step is copies that do not stage through L1 (TMA bulk
// copies into shared memory) rather than more warps.
#include <algorithm>
#include <map>
#include <mutex>

#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/moe_common.cuh"
#include "ops/cuda/moe_one_token.h"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda {
namespace {

using bf16 = __nv_bfloat16;
using moe::dot8;
using moe::warp_sum;

constexpr int kGuWarps = 8, kGuThreads = kGuWarps * 32;
constexpr int kGuBlocksPerSm = 3;  // gate_up blocks an SM (<= 64 registers a thread): down1 fits beside them
constexpr int kGuUnroll = 4;       // 16-byte chunks per lane and matrix in flight
constexpr int kDnWarps = 8, kDnThreads = kDnWarps * 32;
constexpr int kDnJ = 8;  // experts whose dot products a warp runs together

__device__ __forceinline__ bool valid_expert(int e, int experts) { return e >= 0 && e < experts; }

__global__ void __launch_bounds__(kGuThreads, 4)
    gate_up1_kernel(const bf16* __restrict__ x, const int32_t* __restrict__ ids, const bf16* __restrict__ w,
                    bf16* __restrict__ act, int top_k, int experts, int I, int K, int units_per_warp) {
  pdl_wait();     // x and ids come from the kernels before
  pdl_trigger();  // down1's blocks start copying their weights now
  const int lane = threadIdx.x % 32;
  const int gw = blockIdx.x * kGuWarps + threadIdx.x / 32;
  int id = lane < top_k ? ids[lane] : -1;
  if (!valid_expert(id, experts)) id = -1;
  const int chunks = K / 8, units = top_k * I;
  const auto* x4 = reinterpret_cast<const uint4*>(x);
  const int u_end = min((gw + 1) * units_per_warp, units);
  for (int u = gw * units_per_warp; u < u_end; ++u) {
    const int j = u / I, n = u - j * I;
    const int e = __shfl_sync(0xffffffffu, id, j);
    if (e < 0) continue;  // warp-uniform: a choice that routes nowhere has no act row
    const auto* wg = reinterpret_cast<const uint4*>(w + (static_cast<int64_t>(e) * 2 * I + n) * K);
    const uint4* wu = wg + static_cast<int64_t>(I) * chunks;
    float g = 0.0f, up = 0.0f;
    for (int c0 = lane; c0 < chunks; c0 += 32 * kGuUnroll) {
      uint4 vg[kGuUnroll], vu[kGuUnroll];
#pragma unroll
      for (int i = 0; i < kGuUnroll; ++i) {  // every weight load issued before the first use
        const int c = c0 + 32 * i;
        vg[i] = c < chunks ? __ldcs(wg + c) : make_uint4(0, 0, 0, 0);
        vu[i] = c < chunks ? __ldcs(wu + c) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
      for (int i = 0; i < kGuUnroll; ++i) {
        const int c = c0 + 32 * i;
        if (c >= chunks) continue;
        const uint4 xv = x4[c];
        g = dot8(vg[i], xv, g);
        up = dot8(vu[i], xv, up);
      }
    }
    g = warp_sum(g);
    up = warp_sum(up);
    if (lane == 0) {  // moe_gemv.cu's epilogue
      const float gr = dense::round_to<bf16>(g), ur = dense::round_to<bf16>(up);
      const float v = dense::round_to<bf16>(gr / (1.0f + expf(-gr))) * ur;
      act[static_cast<int64_t>(j) * I + n] = __float2bfloat16_rn(v);
    }
  }
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}

__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// Shared memory (dynamic): the weights [top_k][R][chunks] (uint4), then act as float32 in two
// halves per chunk, [top_k][2][chunks] (float4): consecutive lanes read consecutive 16 bytes.
__global__ void __launch_bounds__(kDnThreads, 4)
    down1_kernel(const bf16* __restrict__ act, const int32_t* __restrict__ ids, const float* __restrict__ weights,
                 const bf16* __restrict__ w, bf16* __restrict__ out, int top_k, int experts, int N, int K, int R) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ int sid[32];
  __shared__ float swt[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int chunks = K / 8;
  const int n0 = blockIdx.x * R, rows = min(R, N - n0);
  auto* sw = reinterpret_cast<uint4*>(smem);
  auto* sa = reinterpret_cast<float4*>(sw + static_cast<int64_t>(top_k) * R * chunks);
  // The routing is complete before this grid runs (see the file comment): weights only follow.
  if (warp == 0) {
    int e = lane < top_k ? ids[lane] : -1;
    sid[lane] = valid_expert(e, experts) ? e : -1;
    swt[lane] = lane < top_k ? weights[lane] : 0.0f;
  }
  __syncthreads();
  const auto* w4 = reinterpret_cast<const uint4*>(w);
  for (int j = 0; j < top_k; ++j) {
    const int e = sid[j];
    if (e < 0) continue;
    const uint4* src = w4 + (static_cast<int64_t>(e) * N + n0) * chunks;  // rows n0.. of expert e: contiguous
    uint4* dst = sw + static_cast<int64_t>(j) * R * chunks;
    for (int q = threadIdx.x; q < rows * chunks; q += kDnThreads) cp_async16(dst + q, src + q);
  }
  pdl_wait();  // gate_up's act rows are written
  pdl_trigger();
  const auto* a4 = reinterpret_cast<const uint4*>(act);
  for (int q = threadIdx.x; q < top_k * chunks; q += kDnThreads) {
    const int j = q / chunks, c = q - j * chunks;
    if (sid[j] < 0) continue;
    const uint4 v = __ldcg(a4 + q);  // act row j, chunk c (written by gate_up1: read at L2)
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v);
    const float2 p0 = __bfloat1622float2(h[0]), p1 = __bfloat1622float2(h[1]), p2 = __bfloat1622float2(h[2]),
                 p3 = __bfloat1622float2(h[3]);
    sa[(2 * j) * chunks + c] = make_float4(p0.x, p0.y, p1.x, p1.y);
    sa[(2 * j + 1) * chunks + c] = make_float4(p2.x, p2.y, p3.x, p3.y);
  }
  cp_async_wait_all();
  __syncthreads();
  for (int r = warp; r < rows; r += kDnWarps) {
    float acc = 0.0f;
    for (int j0 = 0; j0 < top_k; j0 += kDnJ) {
      float g[kDnJ];
#pragma unroll
      for (int jj = 0; jj < kDnJ; ++jj) g[jj] = 0.0f;
      for (int c = lane; c < chunks; c += 32) {
#pragma unroll
        for (int jj = 0; jj < kDnJ; ++jj) {
          const int j = j0 + jj;
          if (j >= top_k || sid[j] < 0) continue;  // warp-uniform
          g[jj] = dot8(sw[(static_cast<int64_t>(j) * R + r) * chunks + c], sa[(2 * j) * chunks + c],
                       sa[(2 * j + 1) * chunks + c], g[jj]);
        }
      }
#pragma unroll
      for (int jj = 0; jj < kDnJ; ++jj) {
        const int j = j0 + jj;
        if (j >= top_k || sid[j] < 0) continue;
        const float y = dense::round_to<bf16>(warp_sum(g[jj]));  // the expert row as stored in bf16
        acc += swt[j] * y;                                       // moe_combine's sum, in choice order
      }
    }
    if (lane == 0) out[n0 + r] = __float2bfloat16_rn(acc);
  }
}

struct OneTokenInfo {
  int sms = 0;
  int64_t down_smem = 0;  // the most dynamic shared memory down1 may take
};

// Per device, once: the SM count, and down1's shared memory limit raised to the opt-in maximum.
// down1 prefers the largest shared-memory carveout (it needs it). gate_up1 asks for it only when
// `shared_carveout` (GRAPHRT_MOE_ONE_TOKEN=shared-carveout): then down1's blocks fit beside
// gate_up1's and copy while it streams, but gate_up1 keeps 28 KB of L1, which on the H100
// measured slower (4.36-4.44 against 4.23 ms a step): its loads in flight seem bounded by the L1
// left to them. Without it, down1's blocks start as gate_up1's leave their SMs.
OneTokenInfo one_token_info(int index, bool shared_carveout) {
  static std::mutex mu;
  static std::map<int, OneTokenInfo> infos;
  std::lock_guard<std::mutex> lock(mu);
  OneTokenInfo& info = infos[index];
  if (info.sms == 0) {
    int sms = 0, optin = 0;
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, index),
                   "reading the SM count of cuda:{} (MoE one-token kernels)", index);
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, index),
                   "reading the shared memory limit of cuda:{} (MoE one-token kernels)", index);
    cudaFuncAttributes fa{};
    GRT_CUDA_CHECK(cudaFuncGetAttributes(&fa, down1_kernel), "reading the attributes of the MoE down1 kernel");
    const int dyn = optin - static_cast<int>(fa.sharedSizeBytes);
    GRT_CUDA_CHECK(cudaFuncSetAttribute(down1_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn),
                   "allowing {} bytes of shared memory to the MoE down1 kernel on cuda:{}", dyn, index);
    GRT_CUDA_CHECK(cudaFuncSetAttribute(down1_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        cudaSharedmemCarveoutMaxShared),
                   "setting the carveout of the MoE down1 kernel on cuda:{}", index);
    if (shared_carveout)
      GRT_CUDA_CHECK(cudaFuncSetAttribute(gate_up1_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                          cudaSharedmemCarveoutMaxShared),
                     "setting the carveout of the MoE gate_up1 kernel on cuda:{}", index);
    info.down_smem = dyn;
    info.sms = sms;
  }
  return info;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool moe_experts_combine_one_token(Device d, const ops::MoeExpertsCombineArgs& a) {
  const ops::MoeExpertsArgs& e = a.experts;
  const int64_t k = e.top_k, I = e.inter, H = e.hidden;
  if (a.tokens != 1 || k < 1 || k > 32 || e.dtype != DType::BF16 || I % 8 != 0 || H % 8 != 0 || I < 8 || H < 8 ||
      a.num_experts < 1 || a.num_experts > 0x7fffffff || k * I > 0x7fffffff || H * I > 0x7fffffff ||
      e.max_rows < k)
    return false;
  if (!aligned16(e.x) || !aligned16(e.gate_up) || !aligned16(e.down) || !aligned16(e.act)) return false;
  const OneTokenInfo info = one_token_info(d.index, a.one_token_shared_carveout);
  const int64_t act_bytes = k * I * 4, row_bytes = k * I * 2;
  const int64_t budget = info.down_smem - act_bytes;
  if (budget < row_bytes) return false;  // one output row of k experts does not fit
  const int64_t R = std::min((H + info.sms - 1) / info.sms, budget / row_bytes);
  const int64_t down_blocks = (H + R - 1) / R;
  const size_t smem = static_cast<size_t>(R * row_bytes + act_bytes);
  // gate_up: the fewest units per warp that fit kGuBlocksPerSm blocks an SM, then as few warps
  // as carry them (runs differ by at most one unit).
  const int64_t units = k * I, capacity = int64_t{info.sms} * kGuBlocksPerSm * kGuWarps;
  const int64_t per_warp = (units + capacity - 1) / capacity;
  const int64_t warps = (units + per_warp - 1) / per_warp;
  const int64_t gu_blocks = (warps + kGuWarps - 1) / kGuWarps;
  cudaStream_t s = dense::launch_stream(d);
  (void)launch_pdl(d.index, gate_up1_kernel, dim3(static_cast<unsigned>(gu_blocks)), dim3(kGuThreads), 0, s, 1,
                   static_cast<const bf16*>(e.x), a.topk_ids, static_cast<const bf16*>(e.gate_up),
                   static_cast<bf16*>(e.act), static_cast<int>(k), static_cast<int>(a.num_experts),
                   static_cast<int>(I), static_cast<int>(H), static_cast<int>(per_warp));
  GRT_CUDA_CHECK_LAUNCH("moe_experts_combine (one token) gate_up blocks={} hidden={} inter={} top_k={}", gu_blocks, H,
                        I, k);
  (void)launch_pdl(d.index, down1_kernel, dim3(static_cast<unsigned>(down_blocks)), dim3(kDnThreads), smem, s, 1,
                   static_cast<const bf16*>(e.act), a.topk_ids, a.topk_weights, static_cast<const bf16*>(e.down),
                   static_cast<bf16*>(a.out), static_cast<int>(k), static_cast<int>(a.num_experts),
                   static_cast<int>(H), static_cast<int>(I), static_cast<int>(R));
  GRT_CUDA_CHECK_LAUNCH("moe_experts_combine (one token) down blocks={} rows={} smem={} hidden={} inter={}",
                        down_blocks, R, smem, H, I);
  return true;
}

}  // namespace grt::cuda
