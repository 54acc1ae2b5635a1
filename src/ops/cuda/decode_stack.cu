// decode_stack.h: every dense decoder layer of one token in one persistent kernel.
//
// Why: at bs 1 a small model's layer is six kernels whose weight bytes take ~10 us and whose
// dependent trips take ~20 more (qwen3-0.6b on an H100, session 14's timeline: qkv 4.86, prepare
// 1.92, attention 7.17, o_proj 4.74, gate_up 6.14, down 5.63 us a layer for 31.5 MB). PDL lets a
// kernel read its weights before its wait only where its blocks can land beside the running
// kernel's, which register files often forbid. Here the blocks never leave: one block an SM for
// the whole step, and the next stage's weights stream into shared memory while the current stage
// computes, so the step's DRAM stream runs nearly without gaps; the stages meet at grid barriers.
//
// Stages of a layer (s = 5 * layer + stage, one grid barrier after each but the last):
//   A qkv:       rms_norm(h, input_norm) · qkv rows of this block (+ bias)      -> qkv_out
//   B attention: items (kv head, split): q / k per-head norm + rope, the new token's K/V into the
//                cache (the last split of each kv head), softmax over the split's cached tokens
//                (+ the new one) -> partial (m, l, O); the last split of a kv head to finish merges
//                its heads' partials in split order                             -> attn_out
//   C o_proj:    h[r] = round(round(attn_out · o_proj[r]) + h[r]) for this block's rows
//   D gate_up:   act[i] = silu_and_mul of round(rms_norm(h, post_norm) · gate / up rows [i])
//   E down:      h[r] = round(round(act · down[r]) + h[r])
// Each block's weight slice of a stage (its rows: contiguous, one TMA bulk copy) and stage B's
// cached K/V rows (16-byte cp.async) arrive in one of two shared buffers: stage s uses buffer
// s % 2, and its copies are issued once stage s - 2 has been computed, between the block's
// arrival at the grid barrier that ends it and its wait there (GRAPHRT_DECODE_STACK_ISSUE=arrived;
// issued before the arrival, the barrier's atomic and polls queued behind the 4-12 MB of copies
// every block had just issued: ~3 us from the last arrival instead of ~1.3). A split longer than
// a buffer holds runs in several tiles, the later ones copied after the earlier are used (long
// contexts pay that).
// The rounding steps are the op chain's (ops/fused_linear.h, prepare_qkv.h, attention.h): every
// intermediate the chain stores in bf16 is rounded here too; sums run in other orders, so results
// agree with the chain to float32 rounding of the sums, not bit for bit.
// Data written by other blocks (h, qkv_out, attn_out, act, partials) is read with ld.global.cg:
// the same addresses are rewritten every layer, and L1 is not coherent.
//
// Measured (H100, qwen3-0.6b bs 1 ctx 1024, bench/results/h100_2026-11-25_session16 and _session17):
// correct (DecodeStackCuda tests, --verify-cuda-graph) but SLOWER than the op chain: graph step
// 1.26-1.28 ms in session 16, 1.12-1.13 after session 17 (copies issued between arrival and wait,
// the kv head's split count by one acq_rel add, the first tile's KV slots read once a launch, the
// merge with float4 loads), against 1.02-1.03 for the chain; so the model uses it only with
// GRAPHRT_DECODE_STACK=1. Session 16's analysis follows; session 17's globaltimer profile split
// each barrier into spread (0.1-0.3 us but for attention) and latency (2.8-3.9 us before the
// issue change, 0.9-1.4 after). What is left is attention: the kv head's last split merges while
// the others wait (spread ~5-6 us), its L2 trips slowed by the copies the others issued on arrival
// (issuing those after the barrier instead moved the cost to o_proj: +0.03 ms, call H).
// Session 16: the stage profile
// (GRAPHRT_DECODE_STACK_PROFILE=1, eager launches) says why: the data waits are short (0.7-1.7 us a
// stage: the stream is ahead), but every grid barrier costs 2.9-4.1 us on average from a block's
// end of compute to its exit, because it waits for the slowest block of the stage (compute
// 1.5-2.2 us mean, up to 2.6-4.3 us max), and attention (5.1 us mean, 11.1 max with the merge)
// is followed by 7.8 us of barrier. A layer is ~40 us against ~31 in the chain. Next: balance the
// stages (attention over all blocks, the merge without a serial last block), fewer barriers (qkv
// and attention's q / k prologue in one stage), and a cheaper barrier (per-SM flags).
#include "ops/cuda/decode_stack.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <map>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/env_switch.h"
#include "core/error.h"
#include "device/cuda/cuda_check.h"
#include "ops/cuda/attention_mma.cuh"
#include "ops/cuda/bulk_copy.cuh"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/prepare_qkv_math.cuh"

namespace grt::cuda {
namespace {

using bf16 = __nv_bfloat16;
using dense::round_to;
using prep::unpack_chunk_bits;
using tma::bulk_copy_g2s;
using tma::mbar_arrive;
using tma::mbar_arrive_expect_tx;
using tma::mbar_init;
using tma::mbar_wait;

constexpr int kHd = kDecodeStackHeadDim;
constexpr int kThreads = 512, kWarps = kThreads / 32;
constexpr int kStagesPerLayer = 5;
constexpr int kMaxGroup = 16;      // query heads a kv head
constexpr int kMaxSplits = 32;     // attention splits a kv head
constexpr int kMaxKvHeads = 64;
constexpr int kKvRowBytes = kHd * 2;  // one token's K (or V) of one kv head
constexpr float kLog2e = 1.4426950408889634f;

// Grid barrier and split counters, zero at module load and again after every complete launch:
// [0] counts arrivals at the grid barriers (barrier i completes at (i + 1) x blocks), [32] the
// blocks past the last one (the last of them zeroes both), [64 + h] the splits of kv head h
// merged so far (the merging block zeroes its own). Separate 128-byte lines: the barrier's polls
// do not slow the counters' atomics.
constexpr int kArrive = 0, kExit = 32, kHeadDone = 64;
__device__ unsigned int g_stack_sync[kHeadDone + kMaxKvHeads];

struct Geometry {
  int blocks = 0;      // one an SM
  int splits = 0;      // attention splits a kv head
  uint32_t buf = 0;    // bytes of each of the two stage buffers
  int tile = 0;        // cached tokens a KV tile holds (one more row is kept for the new token)
  bool wide_merge = false;  // a stage buffer holds the wide merge's scratch
  int x_floats = 0;    // the stage input vector in shared memory
  size_t smem = 0;
};

// When a block issues stage s + 2's copies (into the buffer stage s just used): before its
// arrival at the barrier after stage s, between its arrival and its wait, or after the wait.
constexpr int kIssueBefore = 0, kIssueArrived = 1, kIssueAfter = 2;

struct Params {
  DecodeStackArgs a;
  Geometry g;
  bf16* qkv_out;   // [(nq + 2 nkv) * 128]
  bf16* attn_out;  // [nq * 128]
  bf16* act;       // [inter]
  float* part_o;   // [nq][splits][128]
  float* part_ml;  // [nq][splits][2]
  // GRAPHRT_DECODE_STACK_PROFILE=1 (eager launches only): clock64 of thread 0 of every block at
  // each stage's start, data in, computed and past the barrier, then the same four instants by
  // %globaltimer: [blocks][stages][8]; else null.
  long long* prof;
  long long* prof_attn;  // with prof: [blocks][layers][kAttnMarks] (mark_attn)
  int issue;          // when stage s + 2's copies are issued (kIssue*; GRAPHRT_DECODE_STACK_ISSUE)
  bool merge_wide;    // the last split's merge: float4 loads, the splits in chunks over the threads (MERGE=wide)
};

__device__ __forceinline__ int64_t part_begin(int64_t n, int b, int parts) { return n * b / parts; }

__device__ __forceinline__ float bf_bits_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf_bits_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

// Four floats rounded to bf16, as the 8 bytes they are stored as (a, b, c, d in memory order).
__device__ __forceinline__ uint2 bf16x4_bits(float a, float b, float c, float d) {
  return {attn::pack2<bf16>(a, b), attn::pack2<bf16>(c, d)};
}

__device__ __forceinline__ uint4 ldcg16(const void* p) { return __ldcg(reinterpret_cast<const uint4*>(p)); }

using dense::warp_sum;

// Sum over the block; every thread gets it. `red` holds kWarps floats; ends with a barrier so it
// can be called again at once.
__device__ __forceinline__ float block_sum(float v, float* red) {
  v = warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = lane < kWarps ? red[lane] : 0.0f;
  t = warp_sum(t);
  __syncthreads();
  return t;
}

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned atom_acq_rel_add(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}
__device__ __forceinline__ void red_release_add(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Grid barrier number `index` (0, 1, ...) in two halves: every block arrives before any leaves
// the wait; the block's writes before grid_arrive are visible to every block after grid_wait
// (release arrival after the block's barrier, acquire after the polls). Between the halves a
// block may issue copies that do not depend on the barrier (kIssueArrived).
__device__ __forceinline__ void grid_arrive() {
  __syncthreads();
  if (threadIdx.x == 0) red_release_add(&g_stack_sync[kArrive], 1u);
}
__device__ __forceinline__ void grid_wait(unsigned index) {
  if (threadIdx.x == 0) {
    const unsigned target = (index + 1) * gridDim.x;
    while (ld_acquire(&g_stack_sync[kArrive]) < target) {
    }
  }
  __syncthreads();
}

// After the last barrier: the last block out zeroes the arrival count for the next launch (every
// block has then passed every barrier, so none still polls it).
__device__ __forceinline__ void grid_exit() {
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&g_stack_sync[kExit], 1u) == gridDim.x - 1) {
      g_stack_sync[kArrive] = 0;
      g_stack_sync[kExit] = 0;
      __threadfence();
    }
  }
}

// x (float, n elements) = rms_norm(v, w) with the chain's rounding: round(w * round(v * inv)).
// v is another block's output (read .cg); n a multiple of 8.
__device__ void norm_into(const bf16* v, const bf16* w, int n, float eps, float* x, float* red) {
  float ss = 0.0f;
  for (int c = threadIdx.x; c < n / 8; c += kThreads) {
    float e[8];
    unpack_chunk_bits<bf16>(ldcg16(v + c * 8), e);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      x[c * 8 + j] = e[j];
      ss = __fmaf_rn(e[j], e[j], ss);
    }
  }
  const float inv = rsqrtf(block_sum(ss, red) / static_cast<float>(n) + eps);
  for (int c = threadIdx.x; c < n / 8; c += kThreads) {
    float wf[8];
    unpack_chunk_bits<bf16>(*reinterpret_cast<const uint4*>(w + c * 8), wf);
#pragma unroll
    for (int j = 0; j < 8; ++j) x[c * 8 + j] = round_to<bf16>(wf[j] * round_to<bf16>(x[c * 8 + j] * inv));
  }
  __syncthreads();
}

// x (float, n elements) = v (bf16 written by other blocks).
__device__ void load_into(const bf16* v, int n, float* x) {
  for (int c = threadIdx.x; c < n / 8; c += kThreads) {
    float e[8];
    unpack_chunk_bits<bf16>(ldcg16(v + c * 8), e);
#pragma unroll
    for (int j = 0; j < 8; ++j) x[c * 8 + j] = e[j];
  }
  __syncthreads();
}

// The dot product of shared row `w` (k bf16) with x (float), summed over the warp (all lanes get it).
__device__ __forceinline__ float row_dot(const bf16* w, const float* x, int k) {
  float acc = 0.0f;
  const int lane = threadIdx.x % 32;
  for (int c = lane; c < k / 8; c += 32) {
    float e[8];
    unpack_chunk_bits<bf16>(*reinterpret_cast<const uint4*>(w + c * 8), e);
    const float4 x0 = *reinterpret_cast<const float4*>(x + c * 8);
    const float4 x1 = *reinterpret_cast<const float4*>(x + c * 8 + 4);
    acc = __fmaf_rn(e[0], x0.x, acc);
    acc = __fmaf_rn(e[1], x0.y, acc);
    acc = __fmaf_rn(e[2], x0.z, acc);
    acc = __fmaf_rn(e[3], x0.w, acc);
    acc = __fmaf_rn(e[4], x1.x, acc);
    acc = __fmaf_rn(e[5], x1.y, acc);
    acc = __fmaf_rn(e[6], x1.z, acc);
    acc = __fmaf_rn(e[7], x1.w, acc);
  }
  return warp_sum(acc);
}

// Two rows at once (shared x loads, two independent sums): the dot products of shared rows w0
// and w1 (k bf16) with x, summed over the warp.
__device__ __forceinline__ float2 row_dot2(const bf16* w0, const bf16* w1, const float* x, int k) {
  float a0 = 0.0f, a1 = 0.0f;
  const int lane = threadIdx.x % 32;
  for (int c = lane; c < k / 8; c += 32) {
    float e[8], f[8];
    unpack_chunk_bits<bf16>(*reinterpret_cast<const uint4*>(w0 + c * 8), e);
    unpack_chunk_bits<bf16>(*reinterpret_cast<const uint4*>(w1 + c * 8), f);
    const float4 x0 = *reinterpret_cast<const float4*>(x + c * 8);
    const float4 x1 = *reinterpret_cast<const float4*>(x + c * 8 + 4);
    const float xs[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      a0 = __fmaf_rn(e[j], xs[j], a0);
      a1 = __fmaf_rn(f[j], xs[j], a1);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    a0 += __shfl_xor_sync(0xffffffffu, a0, o);
    a1 += __shfl_xor_sync(0xffffffffu, a1, o);
  }
  return make_float2(a0, a1);
}

// The block's rows [0, rows) of shared w (k bf16 each) dotted with x; out(r, value) by lane 0 of
// one warp per row. Rows >= warps: a warp takes two rows at a time; fewer: a row's k is split over
// kWarps / rows warps (a power of two), whose sums are added in order through `red`.
template <typename Out>
__device__ __forceinline__ void block_rows(const bf16* w, int rows, int k, const float* x, float* red, Out out) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (rows >= kWarps) {
    int r = warp;
    for (; r + kWarps < rows; r += 2 * kWarps) {
      const float2 v = row_dot2(w + static_cast<int64_t>(r) * k, w + static_cast<int64_t>(r + kWarps) * k, x, k);
      if (lane == 0) out(r, v.x), out(r + kWarps, v.y);
    }
    if (r < rows) {
      const float v = row_dot(w + static_cast<int64_t>(r) * k, x, k);
      if (lane == 0) out(r, v);
    }
    return;
  }
  int wpr = 1;
  while (rows > 0 && wpr * 2 * rows <= kWarps) wpr *= 2;
  const int r = warp / wpr, part = warp % wpr;
  const int chunks = k / 8, c0 = chunks * part / wpr, c1 = chunks * (part + 1) / wpr;
  float v = 0.0f;
  if (r < rows) v = row_dot(w + static_cast<int64_t>(r) * k + c0 * 8, x + c0 * 8, (c1 - c0) * 8);
  if (lane == 0) red[warp] = v;
  __syncthreads();
  if (r < rows && part == 0 && lane == 0) {
    float t = 0.0f;
    for (int i = 0; i < wpr; ++i) t += red[warp + i];
    out(r, t);
  }
}

// The block's attention item: kv head and split (items = kv heads x splits; blocks past them
// have none at stage B).
struct Item {
  int kh = -1, split = 0;
  int begin = 0, end = 0;  // cached positions [begin, end) of the split
  bool new_token = false;  // this split also takes the step's token (the last split of the kv head)
  // The KV slots of the split's first tile (shared memory), read from the table once a launch:
  // every layer copies the same positions, so the copies need no table trip (null: no item).
  const int32_t* slots = nullptr;
};

__device__ Item item_of(const Params& p, int n_old) {
  Item it;
  const int items = p.a.kv_heads * p.g.splits;
  if (static_cast<int>(blockIdx.x) >= items) return it;
  it.kh = blockIdx.x / p.g.splits;
  it.split = blockIdx.x % p.g.splits;
  const int per = (n_old + p.g.splits - 1) / p.g.splits;
  it.begin = min(n_old, it.split * per);
  it.end = min(n_old, it.begin + per);
  it.new_token = it.split == p.g.splits - 1;
  return it;
}

// The K/V slot of cached position `pos` of the request (invalid entries: the sink slot 0).
__device__ __forceinline__ int64_t slot_of(const Params& p, int req, int pos) {
  const int32_t s = p.a.req_to_token[static_cast<int64_t>(req) * p.a.table_width + pos];
  return s >= 0 && s < p.a.kv_slots ? s : 0;
}

// sm_90 instructions (bulk copies and mbarriers make the kernel sm_90+; decode_stack_supported):
// on older targets these trap, as tma:: does.
// Orders this thread's (and, after a block barrier, the block's) generic shared-memory accesses
// before the async proxy's (bulk copies) that follow.
__device__ __forceinline__ void proxy_fence_async() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#else
  __trap();
#endif
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(tma::smem_addr(dst)), "l"(src) : "memory");
#else
  __trap();
#endif
}
// Arrives on `bar` once this thread's earlier cp.async copies have landed; the pending count is
// raised first (no .noinc), so the barrier's expected count need not include these arrivals.
__device__ __forceinline__ void cp_async_arrive_inc(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.mbarrier.arrive.shared::cta.b64 [%0];" ::"r"(tma::smem_addr(bar)) : "memory");
#else
  __trap();
#endif
}

// Copies K/V tokens [t0, t0 + n) of the item into `buf` (K rows, then V rows after tile + 1
// rows) by 16-byte cp.async, completing on `bar`: each thread's copies arrive on it when they
// land (the arrive form that raises the pending count first), thread 0 arrives after the block
// barrier so the phase cannot complete before every thread has issued. Every thread calls it.
// (Bulk copies of 256 bytes, two a token, took ~1 us more to issue: session 17, the barrier after
// down, whose arrival issues the next layer's.)
__device__ void issue_kv(const Params& p, int layer, const Item& it, int req, int t0, int n, char* buf, uint64_t* bar) {
  const DecodeStackLayer& L = p.a.layers[layer];
  const int64_t row = static_cast<int64_t>(p.a.kv_heads) * kHd;
  constexpr int kChunks = kKvRowBytes / 16;  // 16-byte pieces of a row
  for (int c = threadIdx.x; c < n * 2 * kChunks; c += kThreads) {
    const int t = c / (2 * kChunks), m = c / kChunks % 2, piece = c % kChunks;
    const int64_t slot = t0 == it.begin && it.slots ? it.slots[t] : slot_of(p, req, t0 + t);
    const bf16* src = static_cast<const bf16*>(m == 0 ? L.k_cache : L.v_cache) + slot * row + static_cast<int64_t>(it.kh) * kHd + piece * 8;
    char* dst = buf + static_cast<size_t>(m * (p.g.tile + 1) + t) * kKvRowBytes + piece * 16;
    cp_async16(dst, src);
  }
  cp_async_arrive_inc(bar);
  __syncthreads();
  if (threadIdx.x == 0) mbar_arrive(bar);
}

// Issues stage s's copies into `buf` (weights: thread 0; KV: every thread).
__device__ void issue_stage(const Params& p, int s, const Item& it, int req, char* buf, uint64_t* bar) {
  const int layer = s / kStagesPerLayer, stage = s % kStagesPerLayer;
  if (layer >= p.a.num_layers) return;
  const DecodeStackLayer& L = p.a.layers[layer];
  const int G = gridDim.x, b = blockIdx.x;
  const int64_t H = p.a.hidden, I = p.a.inter, nq = p.a.q_heads, nkv = p.a.kv_heads;
  if (stage == 1) {
    issue_kv(p, layer, it, req, it.begin, min(it.end - it.begin, p.g.tile), buf, bar);
    return;
  }
  if (threadIdx.x != 0) return;
  // One or two runs of rows, each `k` elements long.
  int64_t k = 0, n = 0, r0 = 0, r1 = 0;
  const bf16* w = nullptr;
  const bf16* w2 = nullptr;
  if (stage == 0) {
    k = H, n = (nq + 2 * nkv) * kHd, w = static_cast<const bf16*>(L.qkv);
  } else if (stage == 2) {
    k = nq * kHd, n = H, w = static_cast<const bf16*>(L.o_proj);
  } else if (stage == 3) {
    k = H, n = I, w = static_cast<const bf16*>(L.gate_up), w2 = w + I * H;
  } else {
    k = I, n = H, w = static_cast<const bf16*>(L.down);
  }
  r0 = part_begin(n, b, G), r1 = part_begin(n, b + 1, G);
  const uint32_t bytes = static_cast<uint32_t>((r1 - r0) * k * 2);
  if (bytes == 0) {
    mbar_arrive(bar);
    return;
  }
  // The buffer's earlier generic accesses (K/V rows by cp.async, the merge's scratch, the reads)
  // ordered before the async proxy's writes (the block barrier before this made them this thread's).
  proxy_fence_async();
  mbar_arrive_expect_tx(bar, w2 ? 2 * bytes : bytes);
  bulk_copy_g2s(buf, w + r0 * k, bytes, bar);
  if (w2) bulk_copy_g2s(buf + bytes, w2 + r0 * k, bytes, bar);
}

// The per-head RMSNorm (optional) and rope of a head's raw values by one warp (lane: elements
// 4 lane .. 4 lane + 3), each step rounded to bf16 as prepare_qkv_ stores them; out in y.
__device__ __forceinline__ void norm_rope_head(const bf16* raw, const bf16* norm_w, float eps, const float* cs,
                                               float (&y)[4]) {
  const int lane = threadIdx.x % 32;
  const uint2 r = __ldcg(reinterpret_cast<const uint2*>(raw + lane * 4));
  float x[4] = {bf_bits_lo(r.x), bf_bits_hi(r.x), bf_bits_lo(r.y), bf_bits_hi(r.y)};
  if (norm_w) {
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < 4; ++j) ss = __fmaf_rn(x[j], x[j], ss);
    ss = warp_sum(ss);
    const float inv = rsqrtf(ss / static_cast<float>(kHd) + eps);
    const uint2 wr = *reinterpret_cast<const uint2*>(norm_w + lane * 4);
    const float wf[4] = {bf_bits_lo(wr.x), bf_bits_hi(wr.x), bf_bits_lo(wr.y), bf_bits_hi(wr.y)};
#pragma unroll
    for (int j = 0; j < 4; ++j) x[j] = round_to<bf16>(wf[j] * round_to<bf16>(x[j] * inv));
  }
  float partner[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) partner[j] = __shfl_xor_sync(0xffffffffu, x[j], 16);  // element d ^ 64
  if (cs) {
    const bool lo = lane < 16;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int f = (lane * 4 + j) % (kHd / 2);
      const float c = cs[f], s = cs[kHd / 2 + f];
      // neox: lo = a c - b s (a = x), hi = b c + a s (b = x): rope_rotate's products and sum.
      y[j] = lo ? __fsub_rn(__fmul_rn(x[j], c), __fmul_rn(partner[j], s))
                : __fadd_rn(__fmul_rn(x[j], c), __fmul_rn(partner[j], s));
      y[j] = round_to<bf16>(y[j]);
    }
  } else {
#pragma unroll
    for (int j = 0; j < 4; ++j) y[j] = x[j];
  }
}

// Shared-memory scratch of stage B (floats), after the x vector.
struct AttnSmem {
  float* q;      // [G][128]
  float* p;      // [G][tile + 1]: scores, then probabilities
  float* m;      // [G] running max (log2 domain)
  float* l;      // [G] running sum
  float* o;      // [G][128] running output
  float* red;    // [max(G * 128 * parts, ...)] partial sums of the P·V split over threads
  float* stat;   // [G][2]: this tile's max and sum
};

// Stage B for the block's item.
__device__ __forceinline__ void mark(const Params& p, int s, int k);
__device__ __forceinline__ void mark_attn(const Params& p, int layer, int k);
constexpr int kAttnMarks = 12;

__device__ void attention_stage(const Params& p, int layer, const Item& it, int req, char* buf, uint64_t* bar,
                                uint32_t& phase, const AttnSmem& sm) {
  const DecodeStackLayer& L = p.a.layers[layer];
  const int G = p.a.q_heads / p.a.kv_heads, nkv = p.a.kv_heads;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int pos = p.a.positions[0];
  const float* cs = pos >= 0 && pos < p.a.cos_sin_rows ? p.a.cos_sin + static_cast<int64_t>(pos) * kHd : nullptr;
  const bf16* qkv = p.qkv_out;
  // q of the group's heads (warp g), prepared as prepare_qkv_ does.
  for (int g = warp; g < G; g += kWarps) {
    float y[4];
    norm_rope_head(qkv + static_cast<int64_t>(it.kh * G + g) * kHd, static_cast<const bf16*>(L.q_norm), p.a.eps, cs, y);
#pragma unroll
    for (int j = 0; j < 4; ++j) sm.q[g * kHd + lane * 4 + j] = y[j];
  }
  // The step's token (the last split of the kv head): k prepared (norm, rope) and v as is, read
  // now beside q (their L2 trips overlap) and stored into the cache now (the copies of this
  // layer's cached rows read only older positions); row n of the last tile gets them later.
  const int kw = G % kWarps, vw = (G + 1) % kWarps;  // warps past q's where there are
  uint2 new_kv = {0u, 0u};
  if (it.new_token && (warp == kw || warp == vw)) {
    const int64_t kvrow = static_cast<int64_t>(nkv) * kHd;
    const bf16* kraw = qkv + static_cast<int64_t>(p.a.q_heads) * kHd + static_cast<int64_t>(it.kh) * kHd;
    const int64_t slot = p.a.out_cache_loc[0];
    const bool store = slot >= 0 && slot < p.a.kv_slots;
    if (warp == kw) {
      float y[4];
      norm_rope_head(kraw, static_cast<const bf16*>(L.k_norm), p.a.eps, cs, y);
      new_kv = bf16x4_bits(y[0], y[1], y[2], y[3]);
      if (store) *reinterpret_cast<uint2*>(static_cast<bf16*>(L.k_cache) + slot * kvrow + it.kh * kHd + lane * 4) = new_kv;
    } else {
      new_kv = __ldcg(reinterpret_cast<const uint2*>(kraw + kvrow + lane * 4));
      if (store) *reinterpret_cast<uint2*>(static_cast<bf16*>(L.v_cache) + slot * kvrow + it.kh * kHd + lane * 4) = new_kv;
    }
  }
  for (int g = threadIdx.x; g < G; g += kThreads) {
    sm.m[g] = -INFINITY;
    sm.l[g] = 0.0f;
  }
  for (int i = threadIdx.x; i < G * kHd; i += kThreads) sm.o[i] = 0.0f;
  const int outs = G * kHd, parts = max(1, kThreads / outs);
  const float qscale = p.a.scale * kLog2e;
  bool first = true;
  for (int t0 = it.begin;; t0 += p.g.tile) {
    const int n_old = min(it.end - t0, p.g.tile);
    const bool last_tile = t0 + p.g.tile >= it.end;
    if (!first) {  // later tiles: copied now, into the buffer the previous tile used
      __syncthreads();
      issue_kv(p, layer, it, req, t0, max(n_old, 0), buf, bar);
    }
    mbar_wait(bar, phase);
    phase ^= 1u;
    if (first) mark(p, layer * kStagesPerLayer + 1, 1);
    first = false;
    bf16* ks = reinterpret_cast<bf16*>(buf);
    bf16* vs = ks + static_cast<size_t>(p.g.tile + 1) * kHd;
    int n = max(n_old, 0);
    if (last_tile && it.new_token) {
      if (warp == kw) *reinterpret_cast<uint2*>(ks + static_cast<size_t>(n) * kHd + lane * 4) = new_kv;
      else if (warp == vw) *reinterpret_cast<uint2*>(vs + static_cast<size_t>(n) * kHd + lane * 4) = new_kv;
      ++n;
    }
    __syncthreads();
    const bool first_tile = t0 == it.begin;
    if (first_tile) mark_attn(p, layer, 4);
    if (n > 0) {
      // Scores (log2 domain): warp w takes tokens w, w + 16, ...
      for (int t = warp; t < n; t += kWarps) {
        const uint2 kr = *reinterpret_cast<const uint2*>(ks + static_cast<size_t>(t) * kHd + lane * 4);
        const float k4[4] = {bf_bits_lo(kr.x), bf_bits_hi(kr.x), bf_bits_lo(kr.y), bf_bits_hi(kr.y)};
        for (int g = 0; g < G; ++g) {
          const float4 q = *reinterpret_cast<const float4*>(sm.q + g * kHd + lane * 4);
          float d = q.x * k4[0];
          d = __fmaf_rn(q.y, k4[1], d);
          d = __fmaf_rn(q.z, k4[2], d);
          d = __fmaf_rn(q.w, k4[3], d);
          d = warp_sum(d);
          if (lane == 0) sm.p[g * (p.g.tile + 1) + t] = d * qscale;
        }
      }
      __syncthreads();
      if (first_tile) mark_attn(p, layer, 5);
      // The tile's max and sum a head (warp g), probabilities in place.
      for (int g = warp; g < G; g += kWarps) {
        float* pr = sm.p + g * (p.g.tile + 1);
        float mx = -INFINITY;
        for (int t = lane; t < n; t += 32) mx = fmaxf(mx, pr[t]);
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        float sum = 0.0f;
        for (int t = lane; t < n; t += 32) {
          const float e = exp2f(pr[t] - mx);
          pr[t] = e;
          sum += e;
        }
        sum = warp_sum(sum);
        if (lane == 0) sm.stat[2 * g] = mx, sm.stat[2 * g + 1] = sum;
      }
      __syncthreads();
      if (first_tile) mark_attn(p, layer, 6);
      // P·V: output element oi of head oi / 128, tokens split over `parts` threads.
      for (int i = threadIdx.x; i < outs * parts; i += kThreads) {
        const int part = i / outs, oi = i % outs, g = oi / kHd, d = oi % kHd;
        const float* pr = sm.p + g * (p.g.tile + 1);
        float acc = 0.0f;
        for (int t = part; t < n; t += parts) acc = __fmaf_rn(pr[t], __bfloat162float(vs[static_cast<size_t>(t) * kHd + d]), acc);
        sm.red[part * outs + oi] = acc;
      }
      __syncthreads();
      if (first_tile) mark_attn(p, layer, 7);
      for (int oi = threadIdx.x; oi < outs; oi += kThreads) {
        const int g = oi / kHd;
        float acc = 0.0f;
        for (int part = 0; part < parts; ++part) acc += sm.red[part * outs + oi];
        const float mt = sm.stat[2 * g], mr = sm.m[g];
        const float mn = fmaxf(mr, mt);
        const float ar = mr == -INFINITY ? 0.0f : exp2f(mr - mn), at = exp2f(mt - mn);
        sm.o[oi] = sm.o[oi] * ar + acc * at;
      }
      __syncthreads();
      if (first_tile) mark_attn(p, layer, 8);
      for (int g = threadIdx.x; g < G; g += kThreads) {
        const float mt = sm.stat[2 * g], mr = sm.m[g];
        const float mn = fmaxf(mr, mt);
        const float ar = mr == -INFINITY ? 0.0f : exp2f(mr - mn), at = exp2f(mt - mn);
        sm.l[g] = sm.l[g] * ar + sm.stat[2 * g + 1] * at;
        sm.m[g] = mn;
      }
    }
    if (last_tile) break;
  }
  __syncthreads();
  // The split's partial of each head, then the merge by the kv head's last split to finish.
  const int S = p.g.splits;
  for (int oi = threadIdx.x; oi < outs; oi += kThreads) {
    const int g = oi / kHd, d = oi % kHd, qh = it.kh * G + g;
    p.part_o[(static_cast<int64_t>(qh) * S + it.split) * kHd + d] = sm.o[oi];
    if (d == 0) {
      p.part_ml[(static_cast<int64_t>(qh) * S + it.split) * 2] = sm.m[g];
      p.part_ml[(static_cast<int64_t>(qh) * S + it.split) * 2 + 1] = sm.l[g];
    }
  }
  __syncthreads();
  mark_attn(p, layer, 0);
  __shared__ int is_last;
  // The block's partial stores are ordered before thread 0's acq_rel add by the block barrier
  // (cumulativity); the last split's reads after it by its acquire and the next block barrier
  // (measured: -0.01 ms against a fence by every thread, session 17 call C).
  if (threadIdx.x == 0) {
    const unsigned done = atom_acq_rel_add(&g_stack_sync[kHeadDone + it.kh], 1u);
    is_last = done == static_cast<unsigned>(S - 1);
    if (is_last) g_stack_sync[kHeadDone + it.kh] = 0;  // the next layer's splits arrive after grid barriers
  }
  __syncthreads();
  mark_attn(p, layer, 1);
  if (!is_last) return;
  if (p.merge_wide && p.g.wide_merge) {
    // The merge's loads are what cost (4-byte loads: ~12k requests for qwen3-0.6b's 2 heads x 16
    // splits, 4.7 us; session 17 call C). Here: the splits' weights w = exp2(m - max) / sum
    // (one (head, split) a thread), then tasks (chunk of 4 splits, 4 outputs) with float4 loads,
    // whose sums are added in chunk order. The stage buffer is free scratch now (its K/V are used).
    float* ml = reinterpret_cast<float*>(buf);             // [G][S][2]
    float* wts = ml + 2 * kMaxGroup * kMaxSplits;           // [G][S]
    float4* part = reinterpret_cast<float4*>(wts + kMaxGroup * kMaxSplits);  // [chunks][outs / 4]
    const int quads = outs / 4, chunks = (S + 3) / 4;
    for (int i = threadIdx.x; i < G * S; i += kThreads) {
      const int g = i / S, sp = i % S;
      const float2 v = __ldcg(reinterpret_cast<const float2*>(p.part_ml + (static_cast<int64_t>(it.kh * G + g) * S + sp) * 2));
      ml[2 * i] = v.x, ml[2 * i + 1] = v.y;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < G * S; i += kThreads) {
      const int g = i / S;
      const float* mg = ml + 2 * g * S;
      float mx = -INFINITY;
      for (int sp = 0; sp < S; ++sp) mx = fmaxf(mx, mg[2 * sp]);
      float sum = 0.0f;
      if (mx != -INFINITY)
        for (int sp = 0; sp < S; ++sp)
          if (mg[2 * sp] != -INFINITY) sum = __fmaf_rn(mg[2 * sp + 1], exp2f(mg[2 * sp] - mx), sum);
      const float m = ml[2 * i];
      wts[i] = sum > 0.0f && m != -INFINITY ? exp2f(m - mx) / sum : 0.0f;
    }
    __syncthreads();
    for (int task = threadIdx.x; task < quads * chunks; task += kThreads) {
      const int c = task / quads, q = task % quads, g = q * 4 / kHd, d = q * 4 % kHd;
      const float* po = p.part_o + static_cast<int64_t>(it.kh * G + g) * S * kHd + d;
      float4 v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        v[j] = 4 * c + j < S ? __ldcg(reinterpret_cast<const float4*>(po + static_cast<int64_t>(4 * c + j) * kHd))
                             : make_float4(0.f, 0.f, 0.f, 0.f);
      float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float w = 4 * c + j < S ? wts[g * S + 4 * c + j] : 0.0f;
        acc.x = __fmaf_rn(v[j].x, w, acc.x);
        acc.y = __fmaf_rn(v[j].y, w, acc.y);
        acc.z = __fmaf_rn(v[j].z, w, acc.z);
        acc.w = __fmaf_rn(v[j].w, w, acc.w);
      }
      part[c * quads + q] = acc;
    }
    __syncthreads();
    for (int q = threadIdx.x; q < quads; q += kThreads) {
      float4 acc = part[q];
      for (int c = 1; c < chunks; ++c) {
        const float4 v = part[c * quads + q];
        acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
      }
      const int g = q * 4 / kHd, d = q * 4 % kHd;
      *reinterpret_cast<uint2*>(p.attn_out + static_cast<int64_t>(it.kh * G + g) * kHd + d) =
          bf16x4_bits(acc.x, acc.y, acc.z, acc.w);
    }
    __syncthreads();
    mark_attn(p, layer, 2);
    return;
  }
  // Every split's loads issued before any is used (the splits unrolled to kMaxSplits): one L2
  // trip, not S dependent ones (measured: the merging blocks took up to 12.8 us with the loop).
  for (int oi = threadIdx.x; oi < outs; oi += kThreads) {
    const int g = oi / kHd, d = oi % kHd, qh = it.kh * G + g;
    const float* ml = p.part_ml + static_cast<int64_t>(qh) * S * 2;
    const float* po = p.part_o + static_cast<int64_t>(qh) * S * kHd + d;
    float ms[kMaxSplits], ls[kMaxSplits], os[kMaxSplits];
#pragma unroll
    for (int s = 0; s < kMaxSplits; ++s) {
      ms[s] = s < S ? __ldcg(ml + 2 * s) : -INFINITY;
      ls[s] = s < S ? __ldcg(ml + 2 * s + 1) : 0.0f;
      os[s] = s < S ? __ldcg(po + static_cast<int64_t>(s) * kHd) : 0.0f;
    }
    float mx = -INFINITY;
#pragma unroll
    for (int s = 0; s < kMaxSplits; ++s) mx = fmaxf(mx, ms[s]);
    float sum = 0.0f, acc = 0.0f;
    if (mx != -INFINITY) {
#pragma unroll
      for (int s = 0; s < kMaxSplits; ++s) {
        if (ms[s] == -INFINITY) continue;
        const float w = exp2f(ms[s] - mx);
        sum = __fmaf_rn(ls[s], w, sum);
        acc = __fmaf_rn(os[s], w, acc);
      }
    }
    p.attn_out[static_cast<int64_t>(qh) * kHd + d] = __float2bfloat16_rn(sum > 0.0f ? acc / sum : 0.0f);
  }
  __syncthreads();
  mark_attn(p, layer, 2);
}

// The attention stage's inner instants (clock64): partial stored (0), the split count's reply (1),
// merged (2; merging blocks only; [3] = 1 then), and in the first tile: the rows in (4), scores
// (5), softmax (6), P·V (7), the running output updated (8); at prof_attn[blocks][layers][kAttnMarks].
__device__ __forceinline__ void mark_attn(const Params& p, int layer, int k) {
  if (!p.prof || threadIdx.x != 0) return;
  long long* at = p.prof_attn + (static_cast<int64_t>(blockIdx.x) * p.a.num_layers + layer) * kAttnMarks;
  at[k] = clock64();
  if (k == 2) at[3] = 1;
}

__device__ __forceinline__ void mark(const Params& p, int s, int k) {
  if (p.prof && threadIdx.x == 0) {
    // clock64 for durations within a block; globaltimer (ns, one clock for every SM) to line the
    // blocks up at a barrier (the last arrival).
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    long long* at = p.prof + (static_cast<int64_t>(blockIdx.x) * p.a.num_layers * kStagesPerLayer + s) * 8;
    at[k] = clock64();
    at[4 + k] = static_cast<long long>(ns);
  }
}

// The compute of stages A, C / E and D once their weights are in shared memory (w) and their
// input vector in x.
__device__ __forceinline__ void qkv_rows(const Params& p, const DecodeStackLayer& L, const bf16* w, const float* x,
                                         float* red) {
  const int64_t n = static_cast<int64_t>(p.a.q_heads + 2 * p.a.kv_heads) * kHd;
  const int64_t r0 = part_begin(n, blockIdx.x, gridDim.x), r1 = part_begin(n, blockIdx.x + 1, gridDim.x);
  const bf16* bias = static_cast<const bf16*>(L.qkv_bias);
  block_rows(w, static_cast<int>(r1 - r0), p.a.hidden, x, red, [&](int r, float v) {
    if (bias) v += __bfloat162float(bias[r0 + r]);
    p.qkv_out[r0 + r] = __float2bfloat16_rn(v);
  });
}

__device__ __forceinline__ void residual_rows(const Params& p, int k, const bf16* w, const float* x, float* red) {
  bf16* h = static_cast<bf16*>(p.a.residual);
  const int64_t r0 = part_begin(p.a.hidden, blockIdx.x, gridDim.x), r1 = part_begin(p.a.hidden, blockIdx.x + 1, gridDim.x);
  block_rows(w, static_cast<int>(r1 - r0), k, x, red, [&](int r, float v) {
    h[r0 + r] = __float2bfloat16_rn(round_to<bf16>(v) + __bfloat162float(__ldcg(h + r0 + r)));
  });
}

__device__ __forceinline__ void gate_up_rows(const Params& p, const bf16* w, const float* x) {
  const int H = p.a.hidden, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t i0 = part_begin(p.a.inter, blockIdx.x, gridDim.x), i1 = part_begin(p.a.inter, blockIdx.x + 1, gridDim.x);
  const bf16* up = w + (i1 - i0) * H;
  for (int64_t i = i0 + warp; i < i1; i += kWarps) {
    const float2 gu = row_dot2(w + (i - i0) * H, up + (i - i0) * H, x, H);
    const float gte = round_to<bf16>(gu.x), u = round_to<bf16>(gu.y);
    if (lane == 0) p.act[i] = __float2bfloat16_rn(round_to<bf16>(gte / (1.0f + expf(-gte))) * u);
  }
}

__global__ void __launch_bounds__(kThreads, 1) decode_stack_kernel(const __grid_constant__ Params p) {
  extern __shared__ __align__(128) char smem[];
  __shared__ __align__(8) uint64_t bars[2];
  __shared__ float red[kWarps];
  char* bufs[2] = {smem, smem + p.g.buf};
  float* x = reinterpret_cast<float*>(smem + 2 * static_cast<size_t>(p.g.buf));
  const int G = p.a.q_heads / p.a.kv_heads;
  AttnSmem sm;
  sm.q = x + p.g.x_floats;
  sm.p = sm.q + G * kHd;
  sm.m = sm.p + G * (p.g.tile + 1);
  sm.l = sm.m + kMaxGroup;
  sm.stat = sm.l + kMaxGroup;
  sm.o = sm.stat + 2 * kMaxGroup;
  sm.red = sm.o + G * kHd;

  if (threadIdx.x == 0) {
    mbar_init(&bars[0], 1);
    mbar_init(&bars[1], 1);
  }
  __syncthreads();
  // The request's length and slot: the host's inputs, fixed for the step.
  const int req = p.a.req_pool_indices[0];
  int len = p.a.seq_lens[0];
  len = min(len, static_cast<int>(p.a.table_width));
  const int n_old = max(0, len - 1);
  Item it = item_of(p, n_old);
  int32_t* slots = reinterpret_cast<int32_t*>(sm.red + G * kHd * max(1, kThreads / (G * kHd)));
  if (it.kh >= 0) {
    const int n_first = min(it.end - it.begin, p.g.tile);
    for (int t = threadIdx.x; t < n_first; t += kThreads) slots[t] = static_cast<int32_t>(slot_of(p, req, it.begin + t));
    it.slots = slots;
  }
  __syncthreads();
  const int total = p.a.num_layers * kStagesPerLayer;
  uint32_t phase[2] = {0u, 0u};
  issue_stage(p, 0, it, req, bufs[0], &bars[0]);
  issue_stage(p, 1, it, req, bufs[1], &bars[1]);
  const int H = p.a.hidden, I = p.a.inter, nq = p.a.q_heads;
  const bf16* h = static_cast<const bf16*>(p.a.residual);
  for (int s = 0; s < total; ++s) {
    const int layer = s / kStagesPerLayer, stage = s % kStagesPerLayer;
    const DecodeStackLayer& L = p.a.layers[layer];
    const int cur = s & 1;
    char* buf = bufs[cur];
    const bf16* w = reinterpret_cast<const bf16*>(buf);
    mark(p, s, 0);
    if (stage == 1) {
      if (it.kh >= 0) {
        attention_stage(p, layer, it, req, buf, &bars[cur], phase[cur], sm);
      } else {
        mbar_wait(&bars[cur], phase[cur]);  // the empty phase issue_kv completed
        phase[cur] ^= 1u;
        mark(p, s, 1);
      }
    } else {
      const bool norm = stage == 0 || stage == 3;
      const bf16* in = norm ? h : stage == 2 ? p.attn_out : p.act;
      const int n = norm ? H : stage == 2 ? nq * kHd : I;
      const bf16* nw = static_cast<const bf16*>(stage == 0 ? L.input_norm : L.post_norm);
      if (norm) norm_into(in, nw, n, p.a.eps, x, red);
      else load_into(in, n, x);
      mbar_wait(&bars[cur], phase[cur]);
      phase[cur] ^= 1u;
      mark(p, s, 1);
      if (stage == 0) qkv_rows(p, L, w, x, red);
      else if (stage == 3) gate_up_rows(p, w, x);
      else residual_rows(p, n, w, x, red);
    }
    __syncthreads();  // buffer `cur` is free for stage s + 2's copies
    mark(p, s, 2);
    const bool more = s + 1 < total;
    const int issue = p.issue;
    if (issue == kIssueBefore || !more) issue_stage(p, s + 2, it, req, buf, &bars[cur]);
    if (more) {
      grid_arrive();
      if (issue == kIssueArrived) issue_stage(p, s + 2, it, req, buf, &bars[cur]);
      grid_wait(static_cast<unsigned>(s));
      if (issue == kIssueAfter) issue_stage(p, s + 2, it, req, buf, &bars[cur]);
    }
    mark(p, s, 3);
  }
  grid_exit();
}

struct DeviceInfo {
  int sms = 0, optin = 0, major = 0, static_smem = 0;
};

DeviceInfo device_info(int index) {
  static std::mutex mu;
  static std::map<int, DeviceInfo> infos;
  std::lock_guard<std::mutex> lock(mu);
  DeviceInfo& info = infos[index];
  if (info.sms == 0) {
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&info.sms, cudaDevAttrMultiProcessorCount, index),
                   "reading the SM count of cuda:{} (decode stack)", index);
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&info.optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, index),
                   "reading the shared memory limit of cuda:{} (decode stack)", index);
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&info.major, cudaDevAttrComputeCapabilityMajor, index),
                   "reading the compute capability of cuda:{} (decode stack)", index);
    cudaFuncAttributes fa{};
    GRT_CUDA_CHECK(cudaFuncGetAttributes(&fa, decode_stack_kernel), "reading the attributes of the decode stack kernel");
    info.static_smem = static_cast<int>(fa.sharedSizeBytes);
    // Every geometry keeps its dynamic shared memory within this (geometry()).
    GRT_CUDA_CHECK(cudaFuncSetAttribute(decode_stack_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        info.optin - info.static_smem),
                   "allowing {} bytes of shared memory to the decode stack kernel on cuda:{}",
                   info.optin - info.static_smem, index);
  }
  return info;
}

// The launch geometry for these sizes; blocks == 0 when they do not fit.
Geometry geometry(const DeviceInfo& info, int64_t H, int64_t I, int64_t nq, int64_t nkv) {
  Geometry g;
  const int64_t B = info.sms;
  if (B < 1 || nkv < 1 || nkv > kMaxKvHeads || nkv > B) return g;
  const auto rows = [&](int64_t n) { return (n + B - 1) / B; };
  int64_t buf = 0;
  buf = std::max(buf, rows((nq + 2 * nkv) * kHd) * H * 2);  // qkv
  buf = std::max(buf, rows(H) * nq * kHd * 2);              // o_proj
  buf = std::max(buf, 2 * rows(I) * H * 2);                 // gate and up
  buf = std::max(buf, rows(H) * I * 2);                     // down
  buf = std::max<int64_t>(buf, 32 * 2 * kKvRowBytes);       // a KV tile of at least 31 tokens
  buf = (buf + 127) / 128 * 128;
  if (buf >= (1 << 20) / 2) return g;  // an mbarrier phase counts < 2^20 bytes
  const int64_t G = nq / nkv;
  g.splits = static_cast<int>(std::min<int64_t>(B / nkv, kMaxSplits));
  g.tile = static_cast<int>(buf / (2 * kKvRowBytes)) - 1;
  g.wide_merge = 4 * 3 * kMaxGroup * kMaxSplits + (g.splits + 3) / 4 * (G * kHd / 4) * 16 <= buf;
  g.x_floats = static_cast<int>((std::max({H, I, nq * kHd}) + 31) / 32 * 32);
  const int64_t outs = G * kHd, parts = std::max<int64_t>(1, kThreads / outs);
  const int64_t attn_floats = G * kHd + G * (g.tile + 1) + 4 * kMaxGroup + G * kHd + outs * parts;
  const int64_t smem = 2 * buf + 4 * (g.x_floats + attn_floats) + 4 * (g.tile + 1);  // + the first tile's slots
  if (smem + info.static_smem > info.optin) return g;
  g.buf = static_cast<uint32_t>(buf);
  g.smem = static_cast<size_t>(smem);
  g.blocks = static_cast<int>(B);
  return g;
}

bool sizes_ok(int64_t H, int64_t I, int64_t nq, int64_t nkv, int64_t layers) {
  return H >= 8 && H % 8 == 0 && I >= 8 && I % 8 == 0 && nkv >= 1 && nq >= nkv && nq % nkv == 0 &&
         nq / nkv <= kMaxGroup && layers >= 1 && layers <= kDecodeStackMaxLayers && H <= (1 << 20) &&
         I <= (1 << 20);
}

size_t align16(size_t n) { return (n + 15) / 16 * 16; }

struct Workspace {
  size_t qkv, attn, act, part_o, part_ml, total;
};

Workspace workspace_layout(const Geometry& g, int64_t I, int64_t nq, int64_t nkv) {
  Workspace w{};
  w.qkv = 0;
  w.attn = align16(w.qkv + static_cast<size_t>((nq + 2 * nkv) * kHd * 2));
  w.act = align16(w.attn + static_cast<size_t>(nq * kHd * 2));
  w.part_o = align16(w.act + static_cast<size_t>(I * 2));
  w.part_ml = align16(w.part_o + static_cast<size_t>(nq * g.splits * kHd * 4));
  w.total = align16(w.part_ml + static_cast<size_t>(nq * g.splits * 2 * 4));
  return w;
}

// The stage profile (GRAPHRT_DECODE_STACK_PROFILE=1): per stage kind, the mean over blocks and
// layers of the wait for its data, its compute, and the grid barrier after it (clock64, us); and,
// lined up by %globaltimer, how a barrier splits: `spread` (a block's arrival to the last block's
// arrival) and `latency` (the last arrival to a block's exit), with the blocks most often last.
void print_profile(Device d, cudaStream_t s, long long* dprof, int blocks, int total, int layers) {
  std::vector<long long> h(static_cast<size_t>(blocks) * (total * 8 + layers * kAttnMarks));
  GRT_CUDA_CHECK(cudaMemcpyAsync(h.data(), dprof, h.size() * sizeof(long long), cudaMemcpyDeviceToHost, s),
                 "decode stack: reading the stage profile");
  GRT_CUDA_CHECK(cudaStreamSynchronize(s), "decode stack: waiting for the profiled launch");
  GRT_CUDA_CHECK(cudaFreeAsync(dprof, s), "decode stack: freeing the stage profile");
  int khz = 0;
  GRT_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, d.index), "reading the SM clock of {}", d.str());
  const double us = 1e3 / khz;
  const char* names[kStagesPerLayer] = {"qkv", "attention", "o_proj", "gate_up", "down"};
  const auto at = [&](int b, int st, int k) { return h[(static_cast<size_t>(b) * total + st) * 8 + k]; };
  double sum[kStagesPerLayer][3] = {}, worst[kStagesPerLayer][3] = {};
  double spread[kStagesPerLayer] = {}, latency[kStagesPerLayer] = {}, lat_max[kStagesPerLayer] = {};
  std::vector<int> last_count(static_cast<size_t>(blocks), 0);
  long long span = 0, step_ns = 0;
  for (int b = 0; b < blocks; ++b) {
    span = std::max(span, at(b, total - 1, 2) - at(b, 0, 0));
    step_ns = std::max(step_ns, at(b, total - 1, 6) - at(b, 0, 4));
    for (int st = 0; st < total; ++st)
      for (int k = 0; k < 3; ++k) {
        if (k == 2 && st == total - 1) continue;
        const double v = static_cast<double>(at(b, st, k + 1) - at(b, st, k)) * us;
        sum[st % kStagesPerLayer][k] += v;
        worst[st % kStagesPerLayer][k] = std::max(worst[st % kStagesPerLayer][k], v);
      }
  }
  for (int st = 0; st + 1 < total; ++st) {
    long long last = at(0, st, 6);
    int who = 0;
    for (int b = 1; b < blocks; ++b)
      if (at(b, st, 6) > last) last = at(b, st, 6), who = b;
    ++last_count[static_cast<size_t>(who)];
    for (int b = 0; b < blocks; ++b) {
      spread[st % kStagesPerLayer] += static_cast<double>(last - at(b, st, 6)) * 1e-3;
      const double l = static_cast<double>(at(b, st, 7) - last) * 1e-3;
      latency[st % kStagesPerLayer] += l;
      lat_max[st % kStagesPerLayer] = std::max(lat_max[st % kStagesPerLayer], l);
    }
  }
  const double n = static_cast<double>(blocks) * total / kStagesPerLayer;
  std::string text = fmt::format(
      "decode stack profile ({} blocks, {} stages, block 0..n span {:.1f} us, globaltimer {:.1f} us): us a stage, mean (max) of "
      "wait / compute / barrier; barrier = spread + latency (globaltimer, mean; latency max)\n",
      blocks, total, static_cast<double>(span) * us, static_cast<double>(step_ns) * 1e-3);
  for (int k = 0; k < kStagesPerLayer; ++k)
    text += fmt::format("  {:<9} {:6.2f} ({:6.2f})  {:6.2f} ({:6.2f})  {:6.2f} ({:6.2f})  = {:6.2f} + {:6.2f} ({:6.2f})\n",
                        names[k], sum[k][0] / n, worst[k][0], sum[k][1] / n, worst[k][1], sum[k][2] / n, worst[k][2],
                        spread[k] / n, latency[k] / n, lat_max[k]);
  std::vector<int> order(static_cast<size_t>(blocks));
  for (int b = 0; b < blocks; ++b) order[static_cast<size_t>(b)] = b;
  std::sort(order.begin(), order.end(), [&](int x, int y) { return last_count[x] > last_count[y]; });
  text += "  last to arrive (block: barriers):";
  for (int i = 0; i < std::min(blocks, 8); ++i)
    text += fmt::format(" {}: {}", order[static_cast<size_t>(i)], last_count[static_cast<size_t>(order[static_cast<size_t>(i)])]);
  text += "\n";
  // Inside the attention stage (clock64): the split's own work (data in -> partial stored), the
  // split count's round trip, and the merge, for the merging blocks and the others.
  const long long* ha = h.data() + static_cast<size_t>(blocks) * total * 8;
  double own[2] = {}, trip[2] = {}, merge = 0, own_max[2] = {}, phase[5] = {};
  int cnt[2] = {}, phase_n = 0;
  for (int b = 0; b < blocks; ++b)
    for (int l = 0; l < layers; ++l) {
      const long long* m = ha + (static_cast<size_t>(b) * layers + l) * kAttnMarks;
      if (m[0] != 0 && m[8] != 0) {
        const long long in = at(b, l * kStagesPerLayer + 1, 1);
        const long long pts[6] = {in, m[4], m[5], m[6], m[7], m[8]};
        for (int k = 0; k < 5; ++k) phase[k] += static_cast<double>(pts[k + 1] - pts[k]) * us;
        ++phase_n;
      }
      if (m[0] == 0) continue;  // no item
      const int merged = m[3] != 0 ? 1 : 0;
      const double o = static_cast<double>(m[0] - at(b, l * kStagesPerLayer + 1, 1)) * us;
      own[merged] += o, own_max[merged] = std::max(own_max[merged], o);
      if (m[1] != 0) trip[merged] += static_cast<double>(m[1] - m[0]) * us;
      if (merged) merge += static_cast<double>(m[2] - m[1]) * us;
      ++cnt[merged];
    }
  for (int k = 0; k < 2; ++k) cnt[k] = std::max(cnt[k], 1);
  text += fmt::format("  attention inside, us (mean, max own): merging blocks own {:.2f} ({:.2f}) count trip {:.2f} merge {:.2f}; "
                      "others own {:.2f} ({:.2f}) count trip {:.2f}\n",
                      own[1] / cnt[1], own_max[1], trip[1] / cnt[1], merge / cnt[1], own[0] / cnt[0], own_max[0], trip[0] / cnt[0]);
  const double items = std::max(1, phase_n);
  text += fmt::format("  attention's first tile, us (mean): rows in {:.2f}, scores {:.2f}, softmax {:.2f}, P.V {:.2f}, "
                      "output update {:.2f}\n", phase[0] / items, phase[1] / items, phase[2] / items, phase[3] / items, phase[4] / items);
  std::fputs(text.c_str(), stderr);
}

}  // namespace

bool decode_stack_supported(Device d, int64_t hidden, int64_t inter, int64_t q_heads, int64_t kv_heads, int64_t layers) {
  if (!sizes_ok(hidden, inter, q_heads, kv_heads, layers)) return false;
  const DeviceInfo info = device_info(d.index);
  if (!tma::bulk_copy_supported(info.major)) return false;
  return geometry(info, hidden, inter, q_heads, kv_heads).blocks > 0;
}

size_t decode_stack_workspace_bytes(Device d, int64_t hidden, int64_t inter, int64_t q_heads, int64_t kv_heads) {
  const Geometry g = geometry(device_info(d.index), hidden, inter, q_heads, kv_heads);
  GRT_CHECK(g.blocks > 0, "decode stack: hidden {} inter {} with {} / {} heads do not fit (check decode_stack_supported)",
            hidden, inter, q_heads, kv_heads);
  return workspace_layout(g, inter, q_heads, kv_heads).total;
}

void decode_stack_one_token(Device d, const DecodeStackArgs& a, void* workspace) {
  const DeviceInfo info = device_info(d.index);
  const Geometry g = geometry(info, a.hidden, a.inter, a.q_heads, a.kv_heads);
  GRT_CHECK(sizes_ok(a.hidden, a.inter, a.q_heads, a.kv_heads, a.num_layers) &&
                tma::bulk_copy_supported(info.major) && g.blocks > 0,
            "decode stack: {} layers of hidden {} inter {} with {} / {} heads are not supported on {}", a.num_layers,
            a.hidden, a.inter, a.q_heads, a.kv_heads, d.str());
  const Workspace ws = workspace_layout(g, a.inter, a.q_heads, a.kv_heads);
  Params p;
  p.a = a;
  p.g = g;
  char* base = static_cast<char*>(workspace);
  p.qkv_out = reinterpret_cast<bf16*>(base + ws.qkv);
  p.attn_out = reinterpret_cast<bf16*>(base + ws.attn);
  p.act = reinterpret_cast<bf16*>(base + ws.act);
  p.part_o = reinterpret_cast<float*>(base + ws.part_o);
  p.part_ml = reinterpret_cast<float*>(base + ws.part_ml);
  p.prof = nullptr;
  p.prof_attn = nullptr;
  static const int issue = env_choice("GRAPHRT_DECODE_STACK_ISSUE", {"before", "arrived", "after"}, kIssueArrived);
  // Measured (H100, qwen3-0.6b bs 1, session 17 calls B and E): arrived 1.145-1.165 ms against
  // before 1.28 and after 1.21 (the barrier's atomics and polls queued behind the copies every
  // block had just issued); wide 1.124-1.134 against serial 1.154-1.164.
  static const int merge = env_choice("GRAPHRT_DECODE_STACK_MERGE", {"serial", "wide"}, 1);
  p.merge_wide = merge == 1;
  p.issue = issue;
  cudaStream_t s = dense::launch_stream(d);
  static const bool profile = env_choice("GRAPHRT_DECODE_STACK_PROFILE", {"0", "1"}, 0) == 1;
  const int total = a.num_layers * kStagesPerLayer;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (profile)
    GRT_CUDA_CHECK(cudaStreamIsCapturing(s, &capturing), "decode stack: reading the stream's capture status");
  const bool prof = profile && capturing == cudaStreamCaptureStatusNone;
  if (prof) {
    const size_t n = static_cast<size_t>(g.blocks) * (total * 8 + a.num_layers * kAttnMarks);
    GRT_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&p.prof), sizeof(long long) * n, s),
                   "decode stack: allocating the stage profile");
    GRT_CUDA_CHECK(cudaMemsetAsync(p.prof, 0, sizeof(long long) * n, s), "decode stack: clearing the stage profile");
    p.prof_attn = p.prof + static_cast<size_t>(g.blocks) * total * 8;
  }
  // Every block must be resident at once (grid barriers): a cooperative launch guarantees it or
  // fails (the launch check below then names the blocks and shared memory).
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(g.blocks));
  cfg.blockDim = dim3(kThreads);
  cfg.dynamicSmemBytes = g.smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeCooperative;
  attr[0].val.cooperative = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  (void)cudaLaunchKernelEx(&cfg, decode_stack_kernel, p);
  GRT_CUDA_CHECK_LAUNCH(
      "decode stack: {} layers, hidden {} inter {} heads {} / {}, {} blocks of {} threads, {} bytes of shared memory, "
      "{} splits, KV tiles of {} tokens",
      a.num_layers, a.hidden, a.inter, a.q_heads, a.kv_heads, g.blocks, kThreads, g.smem, g.splits, g.tile);
  if (prof) print_profile(d, s, p.prof, g.blocks, total, a.num_layers);
}

}  // namespace grt::cuda
