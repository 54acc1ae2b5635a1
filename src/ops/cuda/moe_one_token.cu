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
// TB/s with 216 KB of shared memory on the SM). Both looked bounded by the loads in flight, so
// (session 5, s5-stream) both can stream by TMA bulk copies instead: down1 by default
// (GRAPHRT_MOE_DOWN1_COPY=cp-async for the A/B), gate_up1 as gate_up1_bulk_kernel where
// GRAPHRT_MOE_GATE_UP1_COPY=bulk. Measured (bench/results/h100_2026-11-23_s5_stream): no gain
// worth the name (down1 19.45 -> 19.07 us isolated, the step -0.01 ms; gate_up1 bulk 23.0 -> 23.8
// us, slower): `graphrt bench stream` shows LDG, cp.async and bulk copies all stream at ~3.1 TB/s
// once an SM has >= 32 KB in flight, whatever the carveout, so the ~9 us (down1) and ~4.5 us
// (gate_up1) these kernels take above that floor come from elsewhere (see that README).
// Session 6 (bench/results/h100_2026-11-24_s6_moe): gate_up1 loads by ld.global.nc.L1::no_allocate
// instead of __ldcs: 3.877-3.889 against 3.941 ms a step (ncu 22.9 against 23.2 us); down1 may add
// its output into the residual (GRAPHRT_MOE_RESIDUAL_ADD=1, measured slower through the qkv norm
// prologue it brings) and loads its act chunks four at a time.
#include <algorithm>
#include <atomic>
#include <map>
#include <utility>
#include <mutex>

#include "core/env_switch.h"
#include "ops/cuda/bulk_copy.cuh"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/moe_common.cuh"
#include "ops/cuda/moe_one_token.h"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda {
namespace {

using bf16 = __nv_bfloat16;
using moe::dot8;
using moe::warp_sum;
using tma::bulk_copy_g2s;
using tma::bulk_copy_supported;
using tma::mbar_arrive_expect_tx;
using tma::mbar_init;
using tma::mbar_wait;

constexpr int kGuWarps = 8, kGuThreads = kGuWarps * 32;
constexpr int kGuBlocksPerSm = 3;  // gate_up blocks an SM (<= 64 registers a thread): down1 fits beside them
constexpr int kGuUnroll = 4;       // 16-byte chunks per lane and matrix in flight
constexpr int kDnWarps = 8, kDnThreads = kDnWarps * 32;
constexpr int kDnJ = 8;  // experts whose dot products a warp runs together
constexpr int kDnActLoads = 4;  // act chunks a thread loads before converting them (down1)

__device__ __forceinline__ bool valid_expert(int e, int experts) { return e >= 0 && e < experts; }

// 16 bytes of an expert weight row, read once: not allocated in L1 (the load `graphrt bench stream`
// measured at ~3.1 TB/s with either carveout), the L2 asked for the surrounding 256 bytes, which
// this lane's neighbours read next. volatile: never speculated past its bounds check.
__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// 16 bytes as load_stream, marked evict_first in the L2 by a cache policy: gate_up's stream then
// leaves the lines the router prefetched for down (GRAPHRT_MOE_ROUTER_PREFETCH=down-l2) in place.
__device__ __forceinline__ uint4 load_stream_evict_first(const uint4* p, uint64_t policy) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p), "l"(policy));
  return v;
}

// How gate_up1 loads its weights (GRAPHRT_MOE_GATE_UP1_LOAD): kLoadCs, __ldcs (session 5:
// ld.global.cs, which allocates its lines in L1 evict-first); kLoadNoAllocate, load_stream (the
// default since session 6); kLoadEvictFirst, load_stream_evict_first.
constexpr int kLoadCs = 0, kLoadNoAllocate = 1, kLoadEvictFirst = 2;
template <int kLoad>
__device__ __forceinline__ uint4 load_weight_row(const uint4* p, uint64_t policy) {
  if constexpr (kLoad == kLoadNoAllocate) return load_stream(p);
  else if constexpr (kLoad == kLoadEvictFirst) return load_stream_evict_first(p, policy);
  else return __ldcs(p);
}

// The start of both gate_up1 kernels: the PDL wait (x and ids come from the kernels before) and
// trigger (down1's blocks start copying their weights now), down1's block count reset (add +
// norm), and the expert of this lane's choice (-1: none, or past top_k).
__device__ __forceinline__ int gate_up1_enter(const int32_t* ids, int top_k, int experts, int32_t* done) {
  pdl_wait();
  pdl_trigger();
  if (done && blockIdx.x == 0 && threadIdx.x == 0) *done = 0;
  const int lane = threadIdx.x % 32;
  const int id = lane < top_k ? ids[lane] : -1;
  return valid_expert(id, experts) ? id : -1;
}

template <int kLoad>
__global__ void __launch_bounds__(kGuThreads, 4)
    gate_up1_kernel(const bf16* __restrict__ x, const int32_t* __restrict__ ids, const bf16* __restrict__ w,
                    bf16* __restrict__ act, int top_k, int experts, int I, int K, int units_per_warp,
                    int32_t* __restrict__ done) {
  const int id = gate_up1_enter(ids, top_k, experts, done);
  const int lane = threadIdx.x % 32;
  const int gw = blockIdx.x * kGuWarps + threadIdx.x / 32;
  const int chunks = K / 8, units = top_k * I;
  const auto* x4 = reinterpret_cast<const uint4*>(x);
  const int u_end = min((gw + 1) * units_per_warp, units);
  uint64_t policy = 0;
  if constexpr (kLoad == kLoadEvictFirst) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
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
        vg[i] = c < chunks ? load_weight_row<kLoad>(wg + c, policy) : make_uint4(0, 0, 0, 0);
        vu[i] = c < chunks ? load_weight_row<kLoad>(wu + c, policy) : make_uint4(0, 0, 0, 0);
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

// gate_up1 with its loads pipelined across rounds (GateUp1Copy::kPipe): the same units, warps and
// per-lane chunk order (so the same bits), but a warp issues round r + 1's loads (kGuPipeUnroll
// chunks a lane and matrix, across unit boundaries) before it multiplies round r. gate_up1_kernel
// issues a round, waits for all of it, multiplies, and only then issues the next: with every warp
// of the grid starting together, its rounds go out in waves with the DRAM queue draining between
// them (qwen3-30b-a3b: 4 rounds a warp, 50 MB in 22.8 us, 2.2 TB/s). Same registers (two rounds
// of 2 chunks where gate_up1_kernel holds one of 4: 62 registers), so down1 still fits beside it.
// Measured (H100, qwen3-30b-a3b bs 1, bench/results/h100_2026-11-25_session21 calls G-H): its
// advance in the graph 23.55 -> 20.42-20.61 us a layer as predicted, but down1's grew 10.5 ->
// 13.5: down1 copies its 25 MB while gate_up1 streams, and the pair's 75 MB take ~34 us either
// way (2.2 TB/s together). Step 3.618 against 3.620 ms (three interleaved runs each): not the
// default; the pair's shared stream is what to shorten next.
constexpr int kGuPipeUnroll = 2;
template <int kLoad>
__global__ void __launch_bounds__(kGuThreads, 4)
    gate_up1_pipe_kernel(const bf16* __restrict__ x, const int32_t* __restrict__ ids, const bf16* __restrict__ w,
                         bf16* __restrict__ act, int top_k, int experts, int I, int K, int units_per_warp,
                         int32_t* __restrict__ done) {
  constexpr int P = kGuPipeUnroll;
  const int id = gate_up1_enter(ids, top_k, experts, done);
  const int lane = threadIdx.x % 32;
  const int gw = blockIdx.x * kGuWarps + threadIdx.x / 32;
  const int chunks = K / 8, units = top_k * I;
  const int rounds = (chunks + 32 * P - 1) / (32 * P);  // a unit's rounds (warp-uniform)
  const auto* x4 = reinterpret_cast<const uint4*>(x);
  const int u_end = min((gw + 1) * units_per_warp, units);
  uint64_t policy = 0;
  if constexpr (kLoad == kLoadEvictFirst) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  // The warp's next unit from `u` on whose choice routes to an expert (warp-uniform), or u_end.
  const auto next_unit = [&](int u, int& e) {
    for (; u < u_end; ++u) {
      e = __shfl_sync(0xffffffffu, id, u / I);
      if (e >= 0) break;  // a choice that routes nowhere has no act row
    }
    return u;
  };
  const auto rows = [&](int u, int e, const uint4*& wg, const uint4*& wu) {
    const int n = u - (u / I) * I;
    wg = reinterpret_cast<const uint4*>(w + (static_cast<int64_t>(e) * 2 * I + n) * K);
    wu = wg + static_cast<int64_t>(I) * chunks;
  };
  const auto load = [&](const uint4* wg, const uint4* wu, int r, uint4 (&vg)[P], uint4 (&vu)[P]) {
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const int c = lane + 32 * (r * P + i);
      vg[i] = c < chunks ? load_weight_row<kLoad>(wg + c, policy) : make_uint4(0, 0, 0, 0);
      vu[i] = c < chunks ? load_weight_row<kLoad>(wu + c, policy) : make_uint4(0, 0, 0, 0);
    }
  };
  int e = -1;
  int u = next_unit(gw * units_per_warp, e);
  if (u >= u_end) return;
  const uint4 *wg, *wu;
  rows(u, e, wg, wu);
  uint4 cg[P], cu[P], ng[P], nu[P];
  load(wg, wu, 0, cg, cu);
  float g = 0.0f, up = 0.0f;
  for (int r = 0;;) {
    // Round r + 1 (or the next unit's round 0) goes out before round r is multiplied.
    const bool unit_end = r + 1 >= rounds;
    int nu_u = u, nr = r + 1, ne = e;
    const uint4 *nwg = wg, *nwu = wu;
    if (unit_end) {
      nu_u = next_unit(u + 1, ne);
      nr = 0;
      if (nu_u < u_end) rows(nu_u, ne, nwg, nwu);
    }
    const bool more = nu_u < u_end;
    if (more) load(nwg, nwu, nr, ng, nu);
#pragma unroll
    for (int i = 0; i < P; ++i) {
      const int c = lane + 32 * (r * P + i);
      if (c >= chunks) continue;
      const uint4 xv = x4[c];
      g = dot8(cg[i], xv, g);
      up = dot8(cu[i], xv, up);
    }
    if (unit_end) {
      g = warp_sum(g);
      up = warp_sum(up);
      if (lane == 0) {  // gate_up1_kernel's epilogue
        const int j = u / I, n = u - j * I;
        const float gr = dense::round_to<bf16>(g), ur = dense::round_to<bf16>(up);
        const float v = dense::round_to<bf16>(gr / (1.0f + expf(-gr))) * ur;
        act[static_cast<int64_t>(j) * I + n] = __float2bfloat16_rn(v);
      }
      g = 0.0f;
      up = 0.0f;
    }
    if (!more) break;
    u = nu_u;
    r = nr;
    e = ne;
    wg = nwg;
    wu = nwu;
#pragma unroll
    for (int i = 0; i < P; ++i) {
      cg[i] = ng[i];
      cu[i] = nu[i];
    }
  }
}

// gate_up1 by TMA bulk copies: one persistent block an SM owns the contiguous units [u0, u1) (runs
// differ by at most one unit) and streams them in tiles of `tile` units (<= kGuWarps), each tile
// the gate rows and the up rows of its units (two contiguous runs per expert it touches) into one
// of `depth` shared stages, completed on that stage's mbarrier; thread 0 keeps every stage in
// flight. Warp w computes unit w of a full tile from shared memory, with x staged once in
// shared memory: the same per-lane order, fmaf chain and warp sum as gate_up1_kernel. Measured
// slower than gate_up1_kernel on an H100 (23.8 against 23.0 us isolated): kept for the A/B only.
// Shared memory (dynamic): x [chunks] (uint4), then stages [depth][2][tile][chunks] (uint4).
constexpr int kGuMaxDepth = 8;
__global__ void __launch_bounds__(kGuThreads, 1)
    gate_up1_bulk_kernel(const bf16* __restrict__ x, const int32_t* __restrict__ ids, const bf16* __restrict__ w,
                         bf16* __restrict__ act, int top_k, int experts, int I, int K, int units_per_block, int tile,
                         int depth, int32_t* __restrict__ done) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ int sid[32];
  __shared__ __align__(8) uint64_t full[kGuMaxDepth];
  pdl_wait();     // x and ids come from the kernels before
  pdl_trigger();  // down1's blocks may be scheduled as these leave their SMs
  if (done && blockIdx.x == 0 && threadIdx.x == 0) *done = 0;  // down1's block count (add + norm)
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int chunks = K / 8, units = top_k * I;
  auto* xs = reinterpret_cast<uint4*>(smem);
  auto* st = xs + chunks;
  const int64_t stage_chunks = int64_t{2} * tile * chunks;
  const int u0 = min(static_cast<int>(blockIdx.x) * units_per_block, units), u1 = min(u0 + units_per_block, units);
  const int tiles = (u1 - u0 + tile - 1) / tile;
  if (warp == 0) {
    int e = lane < top_k ? ids[lane] : -1;
    sid[lane] = valid_expert(e, experts) ? e : -1;
    if (lane < depth) mbar_init(&full[lane], 1);
  }
  const auto* x4 = reinterpret_cast<const uint4*>(x);
  for (int c = threadIdx.x; c < chunks; c += kGuThreads) xs[c] = x4[c];
  __syncthreads();
  const auto* w4 = reinterpret_cast<const uint4*>(w);
  // Thread 0: tile i into stage i % depth, split where the units change expert.
  auto issue = [&](int i) {
    const int s = i % depth, ta = u0 + i * tile, tb = min(ta + tile, u1);
    uint32_t bytes = 0;
    for (int ua = ta; ua < tb;) {
      const int j = ua / I, ub = min(tb, (j + 1) * I);
      if (sid[j] >= 0) bytes += static_cast<uint32_t>(2 * (ub - ua) * chunks * 16);
      ua = ub;
    }
    mbar_arrive_expect_tx(&full[s], bytes);  // 0 bytes (no expert) completes the phase at once
    uint4* dst = st + s * stage_chunks;
    for (int ua = ta; ua < tb;) {
      const int j = ua / I, ub = min(tb, (j + 1) * I), e = sid[j];
      if (e >= 0) {
        const uint32_t run = static_cast<uint32_t>((ub - ua) * chunks * 16);
        const uint4* g = w4 + (static_cast<int64_t>(e) * 2 * I + (ua - j * I)) * chunks;
        bulk_copy_g2s(dst + static_cast<int64_t>(ua - ta) * chunks, g, run, &full[s]);
        bulk_copy_g2s(dst + static_cast<int64_t>(tile + ua - ta) * chunks, g + static_cast<int64_t>(I) * chunks, run,
                      &full[s]);
      }
      ua = ub;
    }
  };
  if (threadIdx.x == 0)
    for (int i = 0; i < min(depth, tiles); ++i) issue(i);
  for (int i = 0; i < tiles; ++i) {
    const int s = i % depth, u = u0 + i * tile + warp;
    mbar_wait(&full[s], static_cast<uint32_t>((i / depth) & 1));
    if (warp < tile && u < u1) {
      const int j = u / I, n = u - j * I;
      if (sid[j] >= 0) {  // warp-uniform: a choice that routes nowhere has no act row
        const uint4* wg = st + s * stage_chunks + static_cast<int64_t>(warp) * chunks;
        const uint4* wu = wg + static_cast<int64_t>(tile) * chunks;
        float g = 0.0f, up = 0.0f;
        for (int c = lane; c < chunks; c += 32) {
          const uint4 xv = xs[c];
          g = dot8(wg[c], xv, g);
          up = dot8(wu[c], xv, up);
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
    __syncthreads();  // stage s read by every warp: it may be refilled
    if (threadIdx.x == 0 && i + depth < tiles) issue(i + depth);
  }
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}

__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// The RMSNorm of fused_add_rms_norm_kernel (norm.cu) over the summed residual row `res` (H
// wide, H / 8 <= kDnNormMaxChunks), computed by this block's kDnThreads threads as that kernel's
// T = dense::row_threads(H / 8) threads would, bit for bit: virtual thread vt = (warp + kDnWarps
// * i) * 32 + lane holds chunk vt (T >= H / 8 chunks: at most one chunk each), sums its squares
// in the same order, and the sums meet by the same xor-tree warp sums into partial[virtual warp]
// and the same xor tree over the T / 32 partials as dense::block_sum. The residual was written
// by other blocks: read at L2.
constexpr int kDnNormMaxChunks = static_cast<int>(ops::kMoeDown1NormMaxChunks);
constexpr int kDnNormPerThread = kDnNormMaxChunks / kDnThreads;
__device__ __forceinline__ void down1_norm_row(const bf16* res, const bf16* nw, bf16* out, int H, float eps) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int chunks = H / 8;
  const int vwarps = min(max((chunks + 31) / 32, 1), 32);  // dense::row_threads(chunks) / 32
  const auto* r4 = reinterpret_cast<const uint4*>(res);
  uint4 v[kDnNormPerThread];
#pragma unroll
  for (int i = 0; i < kDnNormPerThread; ++i) {
    const int vt = (warp + kDnWarps * i) * 32 + lane;
    v[i] = vt < chunks ? __ldcg(r4 + vt) : make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (int i = 0; i < kDnNormPerThread; ++i) {
    const int vw = warp + kDnWarps * i;
    if (vw >= vwarps) continue;  // warp-uniform
    const bf16* e = reinterpret_cast<const bf16*>(&v[i]);
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float b = __bfloat162float(e[j]);
      ss += b * b;  // fused_add_rms_norm_kernel's expression (contracted the same way)
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if (lane == 0) partial[vw] = ss;
  }
  __syncthreads();
  float t = lane < vwarps ? partial[lane] : 0.0f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
  const float inv = rsqrtf(t / static_cast<float>(H) + eps);
  const auto* w4 = reinterpret_cast<const uint4*>(nw);
  auto* o4 = reinterpret_cast<uint4*>(out);
#pragma unroll
  for (int i = 0; i < kDnNormPerThread; ++i) {
    const int vt = (warp + kDnWarps * i) * 32 + lane;
    if (vt >= chunks) continue;
    const uint4 wr = __ldg(w4 + vt);
    const bf16* we = reinterpret_cast<const bf16*>(&wr);
    const bf16* e = reinterpret_cast<const bf16*>(&v[i]);
    uint4 o;
    bf16* oe = reinterpret_cast<bf16*>(&o);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      oe[j] = __float2bfloat16_rn(__bfloat162float(we[j]) * dense::round_to<bf16>(__bfloat162float(e[j]) * inv));
    o4[vt] = o;
  }
}

// Shared memory (dynamic): the weights [top_k][R][chunks] (uint4), then act as float32 in two
// halves per chunk, [top_k][2][chunks] (float4): consecutive lanes read consecutive 16 bytes.
// kBulk: the k runs of weight rows come by TMA bulk copies (one per expert, issued by thread 0,
// completed on one mbarrier) instead of 16-byte cp.async by every thread: no L1 lines or
// instructions per 16 bytes, so the SM's whole 192 KB of them can be in flight at once.
// norm_out set (with residual and done): after adding its rows into the residual, each block
// counts itself in *done (zeroed by gate_up1 after its wait); the last to arrive normalizes the
// whole summed row into norm_out (down1_norm_row): fused_add_rms_norm_'s work without its kernel.
// One block computes the row in a fixed order, so the bits do not depend on which block is last.
// trigger_late: the PDL trigger after the block's rows instead of right after the wait. Measured
// with the early trigger (H100, qwen3-30b-a3b bs 1, bench/results/h100_2026-11-24_s11_moe): +0.17
// ms a step, down1 +5.9 us and qkv +1.3 us a layer, lm_head +56 us: the next GEMV's blocks launched
// while down1 still streamed its weights and held 128 SMs (the fused add+norm kernel it replaced
// had kept them back until down1 ended). Late: they launch as the last block starts the norm.
template <bool kBulk>
__global__ void __launch_bounds__(kDnThreads, 4)
    down1_kernel(const bf16* __restrict__ act, const int32_t* __restrict__ ids, const float* __restrict__ weights,
                 const bf16* __restrict__ w, bf16* __restrict__ out, bf16* __restrict__ residual, int top_k,
                 int experts, int N, int K, int R, const bf16* __restrict__ norm_w, bf16* __restrict__ norm_out,
                 float eps, int32_t* __restrict__ done, bool trigger_late) {
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ int sid[32];
  __shared__ float swt[32];
  __shared__ __align__(8) uint64_t full;  // kBulk: the weight rows have all arrived
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
    if (kBulk && lane == 0) mbar_init(&full, 1);
  }
  __syncthreads();
  const auto* w4 = reinterpret_cast<const uint4*>(w);
  // The norm weight is a weight: its lines into the L2 now, for whichever block comes last.
  if (norm_out && blockIdx.x == 0 && threadIdx.x * 64 < N) dense::prefetch_l2(norm_w + threadIdx.x * 64);
  if constexpr (kBulk) {
    if (threadIdx.x == 0) {
      uint32_t total = 0;
      for (int j = 0; j < top_k; ++j) total += sid[j] < 0 ? 0u : static_cast<uint32_t>(rows * chunks * 16);
      mbar_arrive_expect_tx(&full, total);  // 0 bytes (no expert) completes the phase at once
      for (int j = 0; j < top_k; ++j) {
        const int e = sid[j];
        if (e < 0) continue;
        bulk_copy_g2s(sw + static_cast<int64_t>(j) * R * chunks, w4 + (static_cast<int64_t>(e) * N + n0) * chunks,
                      static_cast<uint32_t>(rows * chunks * 16), &full);
      }
    }
  } else {
    for (int j = 0; j < top_k; ++j) {
      const int e = sid[j];
      if (e < 0) continue;
      const uint4* src = w4 + (static_cast<int64_t>(e) * N + n0) * chunks;  // rows n0.. of expert e: contiguous
      uint4* dst = sw + static_cast<int64_t>(j) * R * chunks;
      for (int q = threadIdx.x; q < rows * chunks; q += kDnThreads) cp_async16(dst + q, src + q);
    }
  }
  pdl_wait();  // gate_up's act rows are written
  if (!trigger_late) pdl_trigger();
  const auto* a4 = reinterpret_cast<const uint4*>(act);
  // kDnActLoads loads of act in flight per thread before the first is converted: after the wait
  // this is on the critical path (qwen3-30b-a3b: 768 chunks, 3 a thread, one round trip).
  for (int q0 = threadIdx.x; q0 < top_k * chunks; q0 += kDnThreads * kDnActLoads) {
    uint4 v[kDnActLoads];
#pragma unroll
    for (int u = 0; u < kDnActLoads; ++u) {
      const int q = q0 + u * kDnThreads;
      // act row j, chunk c (written by gate_up1: read at L2); rows of no expert are not read
      v[u] = q < top_k * chunks && sid[q / chunks] >= 0 ? __ldcg(a4 + q) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kDnActLoads; ++u) {
      const int q = q0 + u * kDnThreads;
      if (q >= top_k * chunks) break;
      const int j = q / chunks, c = q - j * chunks;
      if (sid[j] < 0) continue;
      const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&v[u]);
      const float2 p0 = __bfloat1622float2(h[0]), p1 = __bfloat1622float2(h[1]), p2 = __bfloat1622float2(h[2]),
                   p3 = __bfloat1622float2(h[3]);
      sa[(2 * j) * chunks + c] = make_float4(p0.x, p0.y, p1.x, p1.y);
      sa[(2 * j + 1) * chunks + c] = make_float4(p2.x, p2.y, p3.x, p3.y);
    }
  }
  if constexpr (kBulk) {
    mbar_wait(&full, 0);
  } else {
    cp_async_wait_all();
  }
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
    if (lane == 0) {
      if (residual) {  // fused_add_rms_norm_'s add: the block's output rounded, then the sum rounded
        const float y = dense::round_to<bf16>(acc);
        residual[n0 + r] = __float2bfloat16_rn(y + __bfloat162float(residual[n0 + r]));
      } else {
        out[n0 + r] = __float2bfloat16_rn(acc);
      }
    }
  }
  if (trigger_late) pdl_trigger();  // only the last block's norm remains: the next kernel's blocks get the SMs
  if (norm_out == nullptr) return;
  __shared__ int last;
  __threadfence();  // this block's residual rows are visible device-wide before it is counted
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(done, 1) == static_cast<int>(gridDim.x) - 1;
  __syncthreads();
  if (!last) return;  // block-uniform
  __threadfence();
  down1_norm_row(residual, norm_w, norm_out, N, eps);
}

struct OneTokenInfo {
  int sms = 0;
  bool bulk = false;      // the device runs TMA bulk copies (sm_90+)
  int64_t down_smem = 0;  // the most dynamic shared memory down1 may take (either variant)
  int64_t gu_smem = 0;    // the same for gate_up1_bulk_kernel
};

// Raises `kernel`'s dynamic shared memory limit to `dyn` and asks for the largest carveout.
template <typename Kernel>
void allow_down1_smem(Kernel kernel, int dyn, int index) {
  GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn),
                 "allowing {} bytes of shared memory to the MoE down1 kernel on cuda:{}", dyn, index);
  GRT_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared),
      "setting the carveout of the MoE down1 kernel on cuda:{}", index);
}

// Per device, once: the SM count, and down1's shared memory limit raised to the opt-in maximum.
// down1 prefers the largest shared-memory carveout (it needs it). gate_up1 asks for it only when
// `shared_carveout` (GRAPHRT_MOE_ONE_TOKEN=shared-carveout): then down1's blocks fit beside
// gate_up1's and copy while it streams, which on the H100 measured slower (4.36-4.44 against
// 4.23 ms a step, one sample each). Not because of gate_up1's smaller L1: `graphrt bench stream`
// streams as fast with either carveout (bench/results/h100_2026-11-23_s5_stream); most likely
// the two kernels then split each SM's bandwidth instead of running in turn. Without it, down1's
// blocks start as gate_up1's leave their SMs.
OneTokenInfo one_token_info(int index, bool shared_carveout) {
  static std::mutex mu;
  static std::map<int, OneTokenInfo> infos;
  std::lock_guard<std::mutex> lock(mu);
  OneTokenInfo& info = infos[index];
  if (info.sms == 0) {
    int sms = 0, optin = 0, major = 0;
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, index),
                   "reading the SM count of cuda:{} (MoE one-token kernels)", index);
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, index),
                   "reading the shared memory limit of cuda:{} (MoE one-token kernels)", index);
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index),
                   "reading the compute capability of cuda:{} (MoE one-token kernels)", index);
    cudaFuncAttributes fa{}, fb{};
    GRT_CUDA_CHECK(cudaFuncGetAttributes(&fa, down1_kernel<false>), "reading the attributes of the MoE down1 kernel");
    GRT_CUDA_CHECK(cudaFuncGetAttributes(&fb, down1_kernel<true>), "reading the attributes of the MoE down1 kernel");
    const int dyn = optin - static_cast<int>(std::max(fa.sharedSizeBytes, fb.sharedSizeBytes));
    allow_down1_smem(down1_kernel<false>, dyn, index);
    allow_down1_smem(down1_kernel<true>, dyn, index);
    cudaFuncAttributes fg{};
    GRT_CUDA_CHECK(cudaFuncGetAttributes(&fg, gate_up1_bulk_kernel),
                   "reading the attributes of the MoE gate_up1 bulk kernel");
    info.gu_smem = optin - static_cast<int>(fg.sharedSizeBytes);
    allow_down1_smem(gate_up1_bulk_kernel, static_cast<int>(info.gu_smem), index);
    if (shared_carveout)
      for (auto kernel : {gate_up1_kernel<kLoadCs>, gate_up1_kernel<kLoadNoAllocate>, gate_up1_kernel<kLoadEvictFirst>,
                          gate_up1_pipe_kernel<kLoadCs>, gate_up1_pipe_kernel<kLoadNoAllocate>,
                          gate_up1_pipe_kernel<kLoadEvictFirst>})
        GRT_CUDA_CHECK(
            cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared),
            "setting the carveout of the MoE gate_up1 kernel on cuda:{}", index);
    info.down_smem = dyn;
    info.bulk = bulk_copy_supported(major);
    info.sms = sms;
  }
  return info;
}

std::atomic<int> g_down1_copy_override{static_cast<int>(Down1Copy::kEnv)};
std::atomic<int> g_gate_up1_copy_override{static_cast<int>(GateUp1Copy::kEnv)};

// GRAPHRT_MOE_GATE_UP1_COPY as an index of {"loads", "bulk", "pipe"}, read once.
GateUp1Copy gate_up1_copy_from_env() {
  static const int v = env_choice("GRAPHRT_MOE_GATE_UP1_COPY", {"loads", "bulk", "pipe"}, 0);
  return v == 0 ? GateUp1Copy::kLoads : v == 1 ? GateUp1Copy::kBulk : GateUp1Copy::kPipe;
}

// gate_up1_bulk_kernel's tile (units a stage) and depth (stages) for rows of K elements within
// `budget` bytes of dynamic shared memory (x first): tiles of kGuWarps units, as many stages as
// fit, halving the tile while fewer than 2 fit. {0, 0} when not even 2 stages of 1 unit fit.
std::pair<int, int> gate_up1_bulk_shape(int64_t K, int64_t budget) {
  const int64_t row = K * 2, room = budget - row;
  for (int tile = kGuWarps; tile >= 1; tile /= 2) {
    const int64_t depth = std::min<int64_t>(kGuMaxDepth, room / (2 * tile * row));
    if (depth >= 2) return {tile, static_cast<int>(depth)};
  }
  return {0, 0};
}

// GRAPHRT_MOE_GATE_UP1_LOAD ({"no-allocate", "cs", "evict-first"}, read once) as gate_up1's kernel,
// the pipelined one where `pipe`.
auto gate_up1_kernel_from_env(bool pipe) {
  static const int v = env_choice("GRAPHRT_MOE_GATE_UP1_LOAD", {"no-allocate", "cs", "evict-first"}, 0);
  if (pipe)
    return v == 0   ? gate_up1_pipe_kernel<kLoadNoAllocate>
           : v == 1 ? gate_up1_pipe_kernel<kLoadCs>
                    : gate_up1_pipe_kernel<kLoadEvictFirst>;
  return v == 0 ? gate_up1_kernel<kLoadNoAllocate> : v == 1 ? gate_up1_kernel<kLoadCs> : gate_up1_kernel<kLoadEvictFirst>;
}

// GRAPHRT_MOE_DOWN1_COPY as an index of {"bulk", "cp-async"}, read once.
Down1Copy down1_copy_from_env() {
  static const int v = env_choice("GRAPHRT_MOE_DOWN1_COPY", {"bulk", "cp-async"}, 0);
  return v == 0 ? Down1Copy::kBulk : Down1Copy::kCpAsync;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

void set_down1_copy_override(Down1Copy c) { g_down1_copy_override.store(static_cast<int>(c)); }
void set_gate_up1_copy_override(GateUp1Copy c) { g_gate_up1_copy_override.store(static_cast<int>(c)); }

bool moe_one_token_shape_supported(Device d, int64_t top_k, int64_t inter, int64_t hidden, int64_t experts,
                                   bool shared_carveout) {
  const int64_t k = top_k, I = inter, H = hidden;
  if (k < 1 || k > 32 || I % 8 != 0 || H % 8 != 0 || I < 8 || H < 8 || experts < 1 || experts > 0x7fffffff ||
      k * I > 0x7fffffff || H * I > 0x7fffffff)
    return false;
  const OneTokenInfo info = one_token_info(d.index, shared_carveout);
  return info.down_smem - k * I * 4 >= k * I * 2;  // one output row of k experts and the act rows fit
}

bool moe_experts_combine_one_token(Device d, const ops::MoeExpertsCombineArgs& a) {
  const ops::MoeExpertsArgs& e = a.experts;
  const int64_t k = e.top_k, I = e.inter, H = e.hidden;
  if (a.tokens != 1 || e.dtype != DType::BF16 || e.max_rows < k ||
      !moe_one_token_shape_supported(d, k, I, H, a.num_experts, a.one_token_shared_carveout))
    return false;
  if (!aligned16(e.x) || !aligned16(e.gate_up) || !aligned16(e.down) || !aligned16(e.act)) return false;
  const bool norm = a.norm_out != nullptr;
  GRT_CHECK(!norm || (a.residual && a.norm_weight && a.done_blocks && H / 8 <= kDnNormMaxChunks &&
                      aligned16(a.residual) && aligned16(a.norm_weight) && aligned16(a.norm_out)),
            "moe_experts_combine (one token) with the norm: needs the residual, the norm weight and the block "
            "counter, hidden <= {} and 16-byte aligned rows (hidden {})",
            8 * kDnNormMaxChunks, H);
  const OneTokenInfo info = one_token_info(d.index, a.one_token_shared_carveout);
  const int64_t act_bytes = k * I * 4, row_bytes = k * I * 2;
  const int64_t budget = info.down_smem - act_bytes;
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
  const auto og = static_cast<GateUp1Copy>(g_gate_up1_copy_override.load());
  const GateUp1Copy gu_copy = og == GateUp1Copy::kEnv ? gate_up1_copy_from_env() : og;
  const auto [tile, depth] = gate_up1_bulk_shape(H, info.gu_smem);
  if (info.bulk && tile > 0 && gu_copy == GateUp1Copy::kBulk) {
    const int64_t upb = (units + info.sms - 1) / info.sms, blocks = (units + upb - 1) / upb;
    const size_t gsmem = static_cast<size_t>(H * 2 + int64_t{depth} * 2 * tile * H * 2);
    (void)launch_pdl(d.index, gate_up1_bulk_kernel, dim3(static_cast<unsigned>(blocks)), dim3(kGuThreads), gsmem, s,
                     1, static_cast<const bf16*>(e.x), a.topk_ids, static_cast<const bf16*>(e.gate_up),
                     static_cast<bf16*>(e.act), static_cast<int>(k), static_cast<int>(a.num_experts),
                     static_cast<int>(I), static_cast<int>(H), static_cast<int>(upb), tile, depth, a.done_blocks);
    GRT_CUDA_CHECK_LAUNCH(
        "moe_experts_combine (one token) gate_up (bulk) blocks={} units/block={} tile={} depth={} smem={} hidden={}",
        blocks, upb, tile, depth, gsmem, H);
  } else {
  (void)launch_pdl(d.index, gate_up1_kernel_from_env(gu_copy == GateUp1Copy::kPipe), dim3(static_cast<unsigned>(gu_blocks)), dim3(kGuThreads), 0, s, 1,
                   static_cast<const bf16*>(e.x), a.topk_ids, static_cast<const bf16*>(e.gate_up),
                   static_cast<bf16*>(e.act), static_cast<int>(k), static_cast<int>(a.num_experts),
                   static_cast<int>(I), static_cast<int>(H), static_cast<int>(per_warp), a.done_blocks);
  GRT_CUDA_CHECK_LAUNCH("moe_experts_combine (one token) gate_up blocks={} hidden={} inter={} top_k={} pipe={}",
                        gu_blocks, H, I, k, gu_copy == GateUp1Copy::kPipe);
  }
  const auto o = static_cast<Down1Copy>(g_down1_copy_override.load());
  const bool bulk = info.bulk && (o == Down1Copy::kEnv ? down1_copy_from_env() : o) == Down1Copy::kBulk;
  (void)launch_pdl(d.index, bulk ? down1_kernel<true> : down1_kernel<false>, dim3(static_cast<unsigned>(down_blocks)), dim3(kDnThreads), smem, s, 1,
                   static_cast<const bf16*>(e.act), a.topk_ids, a.topk_weights, static_cast<const bf16*>(e.down),
                   static_cast<bf16*>(a.out), static_cast<bf16*>(a.residual), static_cast<int>(k),
                   static_cast<int>(a.num_experts), static_cast<int>(H), static_cast<int>(I), static_cast<int>(R),
                   static_cast<const bf16*>(a.norm_weight), static_cast<bf16*>(a.norm_out), a.norm_eps, a.done_blocks,
                   a.norm_out != nullptr && a.norm_trigger_late);
  GRT_CUDA_CHECK_LAUNCH("moe_experts_combine (one token) down blocks={} rows={} smem={} hidden={} inter={} bulk={} norm={}",
                        down_blocks, R, smem, H, I, bulk, a.norm_out != nullptr);
  return true;
}

}  // namespace grt::cuda
