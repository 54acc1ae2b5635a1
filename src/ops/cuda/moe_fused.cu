// The fused MoE path (ops/moe.h: moe_route_group, moe_experts_combine): three PDL launches per
// block instead of six (router linear, route, group, gate_up, down, combine). Predicted to save
// ~20 us a layer at decode bs 1 on an H100 (qwen3-30b-a3b); measured 1.75 us (4.969 -> 4.885 ms a
// step): graph launches of small kernels cost ~1 us each, not the 3-4 assumed, and the old router
// GEMV already read its weights before its PDL wait. At 4-8 tokens both kernels are slower than
// the separate ones (below), so the ops fuse one token by default (bench/results/
// h100_2026-11-23_s4_moe/README.md).
//
// router: one cluster of 8 blocks x 16 warps; warp w of block b computes router rows b * 16 + w
//         (+ 128, ...) for every token. Its first row's weights are loaded into registers
//         before the PDL wait (weights only, pdl.cuh rule 1), so they stream while the previous
//         kernel (the post-attention norm) runs. Block 0 gathers the logits through distributed
//         shared memory, routes each token (moe::route_row) and groups the slots
//         (moe::group_block): the same code as the separate kernels.
// experts: the gate_up grouped GEMV of moe_gemv.cu, launched with PDL; then one warp per output
//         column n of one token: for each of its k choices the down row n of that expert against
//         the token's act row, rounded to bf16 as the separate down GEMV stores it, summed with
//         the routing weight in choice order as moe_combine does. Before its PDL wait a warp
//         prefetches its weight rows into L2: the token's routing was written by the router
//         kernel, which has finished once this grid runs (gate_up waits before it triggers).
#include <cooperative_groups.h>

#include <array>
#include <atomic>

#include "core/env_switch.h"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/moe_common.cuh"
#include "ops/cuda/moe_cuda.h"
#include "ops/cuda/moe_gemv.h"
#include "ops/cuda/moe_one_token.h"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda {
namespace {

namespace cg = cooperative_groups;
using bf16 = __nv_bfloat16;

constexpr int kRouterCluster = 8, kRouterWarps = 16, kRouterThreads = kRouterWarps * 32;
constexpr int kRouterRowWarps = kRouterCluster * kRouterWarps;  // rows computed at once by the cluster
constexpr int kRouterPre = 8;  // 16-byte chunks per lane held from before the wait (hidden <= 2048 fully)

using moe::dot8;
using moe::warp_sum;

// Loads the first kRouterPre chunks of this lane of weight row `row` (zeros past the row).
__device__ __forceinline__ void load_router_row(const bf16* w, int row, int rows, int chunks, int lane,
                                                uint4 (&pre)[kRouterPre]) {
#pragma unroll
  for (int i = 0; i < kRouterPre; ++i) {
    const int c = lane + 32 * i;
    pre[i] = row < rows && c < chunks ? __ldg(reinterpret_cast<const uint4*>(w) + static_cast<int64_t>(row) * chunks + c)
                                      : make_uint4(0, 0, 0, 0);
  }
}

__global__ void __launch_bounds__(kRouterThreads) router_kernel(ops::MoeRouterArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // clusters: launched on sm_90+ only (moe_route_group_supported)
  extern __shared__ float slog[];  // [tokens][experts]: this block's rows; block 0 gathers all
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int gw = rank * kRouterWarps + warp;
  const int E = static_cast<int>(a.route.experts), T = static_cast<int>(a.route.tokens);
  const int chunks = static_cast<int>(a.hidden / 8);
  const auto* w = static_cast<const bf16*>(a.weight);
  const auto* x4 = static_cast<const uint4*>(a.x);
  uint4 pre[kRouterPre];
  load_router_row(w, gw, E, chunks, lane, pre);  // weights only: before the wait
  pdl_wait();
  pdl_trigger();
  // Tokens run one after another (a dependent x load and warp reduction each): slower than the
  // router GEMV + route + group from 4 tokens on (measured); interleaving them is the next step.
  for (int e = gw; e < E; e += kRouterRowWarps) {
    if (e != gw) load_router_row(w, e, E, chunks, lane, pre);
    const uint4* we = reinterpret_cast<const uint4*>(w) + static_cast<int64_t>(e) * chunks;
    for (int t = 0; t < T; ++t) {
      const uint4* xt = x4 + static_cast<int64_t>(t) * chunks;
      float acc = 0.0f;
#pragma unroll
      for (int i = 0; i < kRouterPre; ++i) {
        const int c = lane + 32 * i;
        if (c < chunks) acc = dot8(pre[i], xt[c], acc);
      }
      for (int c = lane + 32 * kRouterPre; c < chunks; c += 32) acc = dot8(__ldg(we + c), xt[c], acc);
      acc = warp_sum(acc);
      if (lane == 0) slog[t * E + e] = dense::round_to<bf16>(acc);  // the Linear's bf16 output
    }
  }
  cluster.sync();
  if (rank == 0) {
    auto* logits = static_cast<bf16*>(const_cast<void*>(a.route.logits));  // the output here
    for (int i = threadIdx.x; i < T * E; i += blockDim.x) {
      const int owner = (i % E) % kRouterRowWarps / kRouterWarps;
      const float v = owner == 0 ? slog[i] : cluster.map_shared_rank(slog, owner)[i];
      slog[i] = v;
      logits[i] = __float2bfloat16_rn(v);
    }
  }
  cluster.sync();  // the other blocks' shared memory must outlive block 0's reads
  if (rank != 0) return;
  const int k = static_cast<int>(a.route.top_k);
  int real = T;
  if (a.route.num_real) real = min(max(*a.route.num_real, 0), T);
  for (int t = warp; t < T; t += kRouterWarps)
    moe::route_row(slog + t * E, t < real, a.route.topk_ids + t * k, a.route.topk_weights + t * k, E, k,
                   a.route.renormalize);
  __syncthreads();  // the block's global writes of the routing are visible to the grouping
  moe::group_block(a.group);
#else
  __trap();
#endif
}

// The routing and grouping of router1_kernel's token by ranks (RouterTopk::kRank): warps 0..W-1
// of block 0 (W = ceil(E / 32), the warps that hold the logits) each compute route_row's softmax
// numerators (the same code: the same bits), lane l of warp w takes expert e = l + 32 w and counts
// the experts before it in route_row's order (larger numerator, or equal with a lower index): that
// count is its choice j when below top_k. Two barriers of the W warps instead of route_row's
// top_k dependent rounds of warp argmax: the chosen lanes then sum the chosen probabilities in
// choice order (route_row's `picked`, the same additions) and find their group block as the rank
// of their id among the chosen (the rounds version's r). Equal to route_row bit for bit, except
// that a NaN numerator ranks after every number (route_row never picks one: it then writes an
// out-of-range id). Returns this lane's expert when chosen, else -1.
template <int kPerLane>
__device__ __forceinline__ int route_group_ranked(const float* slog, const ops::MoeRouterArgs& a, int W) {
  __shared__ __align__(16) float key[32 * kPerLane];
  __shared__ float chosen_p[32];
  __shared__ unsigned chosen_mask[kPerLane];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int E = static_cast<int>(a.route.experts), k = static_cast<int>(a.route.top_k);
  float v[kPerLane];
  const float sum = moe::softmax_numerators<float, kPerLane>(slog, E, v);
  float x = -1.0f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i)
    if (i == warp) x = v[i];
  const int e = lane + 32 * warp;
  const float kx = x != x ? -0.5f : x;  // NaN: after every number, before the -1 of no expert
  key[e] = kx;
  asm volatile("bar.sync 1, %0;" ::"r"(W * 32) : "memory");
  int before = 0;
  for (int i = 0; i < W * 32; i += 4) {
    const float4 q = *reinterpret_cast<const float4*>(key + i);
    before += (q.x > kx) | ((q.x == kx) & (i < e));
    before += (q.y > kx) | ((q.y == kx) & (i + 1 < e));
    before += (q.z > kx) | ((q.z == kx) & (i + 2 < e));
    before += (q.w > kx) | ((q.w == kx) & (i + 3 < e));
  }
  const bool chosen = e < E && before < k;
  const float p = x / sum;  // route_row's `best / sum`
  if (chosen) chosen_p[before] = p;
  const unsigned mask = __ballot_sync(0xffffffffu, chosen);
  if (lane == 0) chosen_mask[warp] = mask;
  asm volatile("bar.sync 1, %0;" ::"r"(W * 32) : "memory");
  if (!chosen) return -1;
  float picked = 0;
  for (int j = 0; j < k; ++j) picked += chosen_p[j];
  int r = __popc(mask & ((1u << lane) - 1u));  // chosen experts of lower id
  for (int w = 0; w < warp; ++w) r += __popc(chosen_mask[w]);
  const ops::MoeGroupArgs& g = a.group;
  const int j = before, row = r * static_cast<int>(g.block_rows);
  a.route.topk_ids[j] = e;
  a.route.topk_weights[j] = a.route.renormalize ? p / picked : p;
  g.slot_rows[j] = row;
  g.sorted_slots[row] = j;
  g.block_expert[r] = e;
  g.expert_counts[e] = 1;
  return e;
}

// One token (moe_one_token_kernels_enabled, top_k <= 32): the same router rows and logits, but
// each warp stores its logit straight into block 0's shared memory (one cluster barrier instead
// of two and no gather), block 0 fills the group tables' padding while the logits come, and one
// warp routes the token and groups it from the ranks of its ids: a token's choices are distinct
// experts, so expert of rank r (ascending id) owns group block r and its slot sits at row r * B,
// which is what moe::group_block computes for it. kPerLane: logits per lane (4 for <= 128 experts).
//
// kNorm (a.norm_weight set; moe_norm_route_group): the RMSNorm before the router runs here
// instead of in a kernel of its own: every block normalizes the residual row into its shared
// memory (thread t takes chunk t, as the rms_norm kernel's thread t does with its 256 threads
// for hidden 2048: the same fmaf chain, and dense::block_sum, whose partial sums of warps past
// the row's are exact zeros: the same bits), block 0 also writes it out for the expert kernels,
// and the router rows read it from shared memory. One kernel and one PDL edge fewer a layer.
template <int kPerLane, bool kNorm>
__global__ void __launch_bounds__(kRouterThreads) router1_kernel(ops::MoeRouterArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // clusters: launched on sm_90+ only
  __shared__ float slog[32 * kPerLane];  // block 0's: every logit (as the bf16 Linear rounds it)
  __shared__ uint4 xs[kNorm ? ops::kMoeRouterNormMaxChunks : 1];  // kNorm: the normalized row
  cg::cluster_group cluster = cg::this_cluster();
  // The logits below are stored into block 0's shared memory, which is only allowed once every
  // block of the cluster has started (CUDA's rule for distributed shared memory; racecheck: "a
  // block that might not have entered yet"): arrive now, wait just before the first such store,
  // so the barrier's latency hides under the weight loads and the dot products.
  cluster.barrier_arrive();
  const int rank = static_cast<int>(cluster.block_rank());
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int gw = rank * kRouterWarps + warp;
  const int E = static_cast<int>(a.route.experts);
  const int chunks = static_cast<int>(a.hidden / 8);
  const auto* w = static_cast<const bf16*>(a.weight);
  const uint4* x4 = static_cast<const uint4*>(a.x);
  uint4 pre[kRouterPre];
  load_router_row(w, gw, E, chunks, lane, pre);  // weights only: before the wait
  uint4 nw = make_uint4(0, 0, 0, 0);
  if (kNorm && static_cast<int>(threadIdx.x) < chunks)
    nw = __ldg(static_cast<const uint4*>(a.norm_weight) + threadIdx.x);  // a weight too
  pdl_wait();
  pdl_trigger();
  if constexpr (kNorm) {  // rms_norm_kernel's arithmetic, one chunk a thread
    const int t = static_cast<int>(threadIdx.x);
    float v[8];
    float ss = 0.0f;
    if (t < chunks) {
      const uint4 raw = static_cast<const uint4*>(a.norm_x)[t];
      const bf16* e = reinterpret_cast<const bf16*>(&raw);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        v[j] = __bfloat162float(e[j]);
        ss = __fmaf_rn(v[j], v[j], ss);
      }
    }
    const float inv = rsqrtf(dense::block_sum(ss) / static_cast<float>(a.hidden) + a.eps);
    if (t < chunks) {
      const bf16* wv = reinterpret_cast<const bf16*>(&nw);
      uint4 o;
      bf16* oe = reinterpret_cast<bf16*>(&o);
#pragma unroll
      for (int j = 0; j < 8; ++j) oe[j] = __float2bfloat16_rn(__bfloat162float(wv[j]) * dense::round_to<bf16>(v[j] * inv));
      xs[t] = o;
      if (rank == 0) static_cast<uint4*>(const_cast<void*>(a.x))[t] = o;  // the output here
    }
    __syncthreads();
    x4 = xs;
  }
  float* slog0 = cluster.map_shared_rank(slog, 0);
  auto* logits = static_cast<bf16*>(const_cast<void*>(a.route.logits));  // the output here
  bool entered = false;  // whether this thread has waited for the cluster's blocks (above)
  for (int e = gw; e < E; e += kRouterRowWarps) {  // router_kernel's sums for token 0, bit for bit
    if (e != gw) load_router_row(w, e, E, chunks, lane, pre);
    const uint4* we = reinterpret_cast<const uint4*>(w) + static_cast<int64_t>(e) * chunks;
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < kRouterPre; ++i) {
      const int c = lane + 32 * i;
      if (c < chunks) acc = dot8(pre[i], x4[c], acc);
    }
    for (int c = lane + 32 * kRouterPre; c < chunks; c += 32) acc = dot8(__ldg(we + c), x4[c], acc);
    acc = warp_sum(acc);
    if (!entered) {  // warp-uniform: every lane of the warp runs the same rows
      cluster.barrier_wait();
      entered = true;
    }
    if (lane == 0) {
      const float v = dense::round_to<bf16>(acc);
      slog0[e] = v;
      logits[e] = __float2bfloat16_rn(v);
    }
  }
  if (!entered) cluster.barrier_wait();  // warps with no router row still complete the barrier's phase
  const ops::MoeGroupArgs& g = a.group;
  bool real = true;
  if (rank == 0) {  // the tables' padding, before the barrier that orders it before the routing's rows
    for (int64_t r = threadIdx.x; r < g.max_rows; r += blockDim.x) g.sorted_slots[r] = -1;
    for (int64_t b = threadIdx.x; b < g.max_rows / g.block_rows; b += blockDim.x) g.block_expert[b] = -1;
    for (int e = threadIdx.x; e < E; e += blockDim.x) g.expert_counts[e] = 0;
    if (a.route.num_real) real = *a.route.num_real > 0;
  }
  cluster.sync();
  if (rank != 0) return;
  int id = -1;  // this lane's chosen expert, for the prefetch below
  if (a.rank_topk && real) {
    const int W = (E + 31) / 32;
    if (warp >= W) return;
    id = route_group_ranked<kPerLane>(slog, a, W);
  } else {
    if (warp != 0) return;
    const int k = static_cast<int>(a.route.top_k);
    id = moe::route_row<float, kPerLane>(slog, real, a.route.topk_ids, a.route.topk_weights, E, k,
                                         a.route.renormalize);
    const bool valid = id >= 0 && id < E;
    int r = 0;  // rank of this lane's expert among the token's valid choices
    for (int i = 0; i < k; ++i) {
      const int o = __shfl_sync(0xffffffffu, id, i);
      r += o >= 0 && o < E && o < id;
    }
    if (lane < k) {
      const int row = valid ? r * static_cast<int>(g.block_rows) : -1;
      g.slot_rows[lane] = row;
      if (valid) {
        g.sorted_slots[row] = lane;
        g.block_expert[r] = id;
        g.expert_counts[id] = 1;
      }
    }
  }
  const bool valid = id >= 0 && id < E;
  if (a.prefetch_mode == 1 && valid) {  // fire and forget: nothing waits for these
    const auto prefetch = [&](const void* base, int64_t bytes) {
      const char* p = static_cast<const char*>(base) + static_cast<int64_t>(id) * bytes;
      for (int64_t o = 0; o < bytes; o += ops::kMoeRouterPrefetchStride)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(p + o));
      asm volatile("prefetch.global.L2 [%0];" ::"l"(p + bytes - 1));
    };
    prefetch(a.prefetch_gate_up, a.gate_up_expert_bytes);
    prefetch(a.prefetch_down, a.down_expert_bytes);
  } else if (a.prefetch_mode == 2 && valid) {  // bytes: a multiple of 16 (host)
    uint64_t keep;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(keep));
    const char* p = static_cast<const char*>(a.prefetch_down) + static_cast<int64_t>(id) * a.down_expert_bytes;
    constexpr int64_t kPiece = int64_t{1} << 18;
    for (int64_t o = 0; o < a.down_expert_bytes; o += kPiece) {
      const unsigned n = static_cast<unsigned>(min(kPiece, a.down_expert_bytes - o));
      asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;" ::"l"(p + o), "r"(n), "l"(keep)
                   : "memory");
    }
  }
#else
  __trap();
#endif
}

constexpr int kDcWarps = 8, kDcThreads = kDcWarps * 32;
constexpr int kDcUnroll = 4;   // 16-byte chunks per lane per expert in flight (as the down GEMV)
constexpr int kDcExperts = 4;  // experts whose loads are in flight together

// out[t, n] = sum_j w[t, j] * bf16(down_{e_j}[n, :] . act[slot_rows[t * k + j], :]), float32 in
// choice order. The per-lane order of the dot products is the down GEMV's (moe_gemv.cu): bit for
// bit the separate ops (16 of 16 batches on the H100). A warp runs its k experts in rounds of
// kDcExperts and reads an expert shared by several tokens once per token, which is why 4-8
// tokens measured slower than the grouped down GEMV + combine.
__global__ void __launch_bounds__(kDcThreads)
    down_combine_kernel(const bf16* __restrict__ act, const int32_t* __restrict__ ids,
                        const int32_t* __restrict__ slot_rows, const float* __restrict__ weights,
                        const bf16* __restrict__ w, bf16* __restrict__ out, int top_k, int N, int K) {
  const int t = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int n = blockIdx.x * kDcWarps + warp;
  if (n < N) {  // the routing is complete before this grid runs (see the file comment)
    for (int j = 0; j < top_k; ++j) {
      const int e = ids[t * top_k + j];
      if (e < 0) continue;
      const bf16* wr = w + (static_cast<int64_t>(e) * N + n) * K;
      for (int k = lane * 8; k < K; k += 32 * 8) asm volatile("prefetch.global.L2 [%0];" ::"l"(wr + k));
    }
  }
  pdl_wait();
  if (n < N) {
    float acc = 0.0f;
    for (int j0 = 0; j0 < top_k; j0 += kDcExperts) {
      const bf16* wr[kDcExperts];
      const bf16* ar[kDcExperts];
      float wt[kDcExperts];
      bool use[kDcExperts];
#pragma unroll
      for (int jj = 0; jj < kDcExperts; ++jj) {
        const int j = j0 + jj;
        const int row = j < top_k ? slot_rows[t * top_k + j] : -1;
        use[jj] = row >= 0;
        const int e = use[jj] ? ids[t * top_k + j] : 0;
        wr[jj] = w + (static_cast<int64_t>(e) * N + n) * K;
        ar[jj] = act + static_cast<int64_t>(use[jj] ? row : 0) * K;
        wt[jj] = use[jj] ? weights[t * top_k + j] : 0.0f;
      }
      float g[kDcExperts] = {};
      for (int k0 = lane * 8; k0 < K; k0 += 32 * 8 * kDcUnroll) {
        uint4 v[kDcExperts][kDcUnroll];
#pragma unroll
        for (int jj = 0; jj < kDcExperts; ++jj)
#pragma unroll
          for (int i = 0; i < kDcUnroll; ++i) {
            const int k = k0 + i * 32 * 8;
            v[jj][i] = use[jj] && k < K ? __ldcs(reinterpret_cast<const uint4*>(wr[jj] + k)) : make_uint4(0, 0, 0, 0);
          }
#pragma unroll
        for (int jj = 0; jj < kDcExperts; ++jj) {
          if (!use[jj]) continue;  // warp-uniform
#pragma unroll
          for (int i = 0; i < kDcUnroll; ++i) {
            const int k = k0 + i * 32 * 8;
            if (k >= K) continue;
            g[jj] = dot8(v[jj][i], *reinterpret_cast<const uint4*>(ar[jj] + k), g[jj]);
          }
        }
      }
#pragma unroll
      for (int jj = 0; jj < kDcExperts; ++jj) {
        if (!use[jj]) continue;
        const float y = dense::round_to<bf16>(warp_sum(g[jj]));  // the expert row as stored in bf16
        acc += wt[jj] * y;                                       // moe_combine's sum, in choice order
      }
    }
    if (lane == 0) out[static_cast<int64_t>(t) * N + n] = __float2bfloat16_rn(acc);
  }
  pdl_trigger();
}

std::atomic<int> g_router_topk_override{static_cast<int>(RouterTopk::kEnv)};

// Whether the one-token router ranks its experts (RouterTopk, moe_one_token.h).
bool router_topk_rank() {
  auto t = static_cast<RouterTopk>(g_router_topk_override.load());
  if (t == RouterTopk::kEnv) {
    static const int v = env_choice("GRAPHRT_MOE_ROUTER_TOPK", {"rank", "rounds"}, 0);
    t = v == 0 ? RouterTopk::kRank : RouterTopk::kRounds;
  }
  return t == RouterTopk::kRank;
}

}  // namespace

void set_router_topk_override(RouterTopk t) { g_router_topk_override.store(static_cast<int>(t)); }

bool moe_route_group_supported(Device d) {
  static std::array<std::atomic<int>, 64> known{};  // per device: 0 unknown, 1 yes, 2 no
  if (!d.is_cuda() || d.index < 0 || d.index >= static_cast<int>(known.size())) return false;
  std::atomic<int>& k = known[static_cast<size_t>(d.index)];
  int v = k.load(std::memory_order_relaxed);
  if (v == 0) {
    int major = 0;
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d.index),
                   "reading the compute capability of cuda:{} (MoE fused router)", d.index);
    v = major >= 9 ? 1 : 2;
    k.store(v, std::memory_order_relaxed);
  }
  return v == 1;
}

void moe_route_group(Device d, const ops::MoeRouterArgs& a) {
  cudaStream_t s = dense::launch_stream(d);
  const int64_t T = a.route.tokens, E = a.route.experts;
  GRT_CHECK(a.route.logits_dtype == DType::BF16 && T >= 1 && T <= ops::kMoeFusedMaxTokens &&
                T * E <= ops::kMoeFusedMaxLogits && E >= 1 && E <= 32 * moe::kMaxPerLane && a.hidden % 8 == 0 &&
                a.hidden <= 0x7fffffff && a.group.topk_ids == a.route.topk_ids,
            "moe_route_group (fused) on CUDA: {} tokens x {} experts, hidden {}: needs bf16, tokens <= {}, tokens x "
            "experts <= {}, experts <= 512, hidden a multiple of 8",
            T, E, a.hidden, ops::kMoeFusedMaxTokens, ops::kMoeFusedMaxLogits);
  GRT_CHECK(a.group.max_rows <= 0x7fffffff, "moe_route_group: {} rows exceed int32 indices", a.group.max_rows);
  const bool norm = a.norm_weight != nullptr;
  GRT_CHECK(!norm || (a.one_token && T == 1 && a.route.top_k <= 32 && a.hidden / 8 <= ops::kMoeRouterNormMaxChunks &&
                      a.norm_x != nullptr),
            "moe_route_group with the norm on CUDA: one token on the one-token router, top_k <= 32, hidden <= {} "
            "(got {} tokens, top_k {}, hidden {})",
            8 * ops::kMoeRouterNormMaxChunks, T, a.route.top_k, a.hidden);
  if (a.one_token && T == 1 && a.route.top_k <= 32) {
    const auto kernel = E <= 128 ? (norm ? router1_kernel<4, true> : router1_kernel<4, false>)
                                 : (norm ? router1_kernel<moe::kMaxPerLane, true> : router1_kernel<moe::kMaxPerLane, false>);
    ops::MoeRouterArgs b = a;
    b.rank_topk = router_topk_rank();
    (void)launch_pdl(d.index, kernel, dim3(kRouterCluster), dim3(kRouterThreads), 0, s, kRouterCluster, b);
    GRT_CUDA_CHECK_LAUNCH("moe_route_group (one token) experts={} hidden={} top_k={} norm={} rank={}", E, a.hidden,
                          a.route.top_k, norm, b.rank_topk);
    return;
  }
  const size_t smem = static_cast<size_t>(T * E) * sizeof(float);
  (void)launch_pdl(d.index, router_kernel, dim3(kRouterCluster), dim3(kRouterThreads), smem, s, kRouterCluster, a);
  GRT_CUDA_CHECK_LAUNCH("moe_route_group tokens={} experts={} hidden={} top_k={}", T, E, a.hidden, a.route.top_k);
}

void moe_experts_combine(Device d, const ops::MoeExpertsCombineArgs& a) {
  cudaStream_t s = dense::launch_stream(d);
  const ops::MoeExpertsArgs& e = a.experts;
  GRT_CHECK(e.dtype == DType::BF16 && e.hidden % 8 == 0 && e.inter % 8 == 0 && e.hidden <= 0x7fffffff &&
                e.inter <= 0x7fffffff && a.tokens >= 1 && a.tokens <= 65535 && e.top_k >= 1,
            "moe_experts_combine on CUDA: bf16, hidden {} and inter {} multiples of 8, 1..65535 tokens (got {})",
            e.hidden, e.inter, a.tokens);
  if (a.one_token && a.tokens == 1 && moe_experts_combine_one_token(d, a)) return;
  GRT_CHECK(a.residual == nullptr,
            "moe_experts_combine_add_ on CUDA: the one-token kernels did not take this token (hidden {}, inter {}, "
            "top_k {}, {} tokens): check moe_experts_add_fusable first",
            e.hidden, e.inter, e.top_k, a.tokens);
  moe_experts_gemv_gate_up(s, e, d.index);
  const int64_t tiles = (e.hidden + kDcWarps - 1) / kDcWarps;
  (void)launch_pdl(d.index, down_combine_kernel, dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(a.tokens)),
                   dim3(kDcThreads), 0, s, 1, static_cast<const bf16*>(e.act), a.topk_ids, a.slot_rows, a.topk_weights,
                   static_cast<const bf16*>(e.down), static_cast<bf16*>(a.out), static_cast<int>(e.top_k),
                   static_cast<int>(e.hidden), static_cast<int>(e.inter));
  GRT_CUDA_CHECK_LAUNCH("moe_experts_combine down tokens={} hidden={} inter={}", a.tokens, e.hidden, e.inter);
}

}  // namespace grt::cuda
