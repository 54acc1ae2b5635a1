// Paged decode attention (flash-decoding). One block per (request, kv head, group chunk, split):
// it reads each K/V row of its split once and applies it to all (up to GMAX) query heads of the
// GQA group. Lanes form groups of `lpt` lanes; a group handles one token at a time with 16-byte
// loads (8 elements per lane), keeps an online softmax per head in registers, and the groups of
// a block merge through shared memory. The grid depends only on B, head counts, head_dim, the SM
// count and the table width; lengths are read on the device.
//
// Two paths, one kernel template, plus the tensor-core kernel of attention_decode_mma.cu for
// grouped-query models; GRAPHRT_DECODE_ATTENTION=auto|fused|legacy|mma picks (default auto: see
// use_mma and use_legacy below for the rule and the H100 measurements behind it):
//  - fused: the grid's x extent is the most splits a request may use; each request's split
//    count follows its live length on the device (one split per min_chunk tokens, at most
//    the grid's), blocks past it exit at once. One split writes the output directly (single
//    pass). With several, each block writes its normalised partial and log2-sum-exp to scratch
//    and counts itself done on a per-(request, head block) counter; the last one merges the
//    partials in split order (the same bits whichever block is last) and resets the counter to
//    0, so every launch, eager or replayed, finds it at 0. The counters are a zero-initialised
//    __device__ array of the module (per device, never freed): two decode attentions running at
//    the same time on one device (different streams) would share them; graphrt runs one forward
//    at a time per device today, and must keep it so (or give each stream its counters).
//  - legacy: the split count is the grid's for every request, and a combine kernel merges.
// Both keep the PDL contract of ops/cuda/pdl.cuh: the attention waits before reading anything
// and lets the next kernel launch after its main loop; the combine waits, then lets it launch.
#include <cooperative_groups.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "core/env_switch.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_stream.h"
#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "ops/cuda/attention_common.cuh"
#include "ops/cuda/attention_cuda.h"
#include "ops/cuda/attention_decode_mma.h"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/dense_cuda.h"
#include "ops/decode_split_cap.h"
#include "ops/cuda/pdl.cuh"

namespace grt::cuda {
namespace {

using namespace attn;
constexpr int kThreads = 128;
constexpr int kMaxSplits = 64;        // the grid's x extent never exceeds it
constexpr int64_t kCounters = 1 << 16;  // fused path: one per (request, head block) with splits > 1
constexpr int kMaxHeadDim = 256;
constexpr int kMaxClusterSplits = 16;  // legacy cluster merge: a non-portable cluster size at most
static_assert(kMaxClusterSplits <= kMaxSplits);

__device__ unsigned int g_split_counters[kCounters];  // zero at module load; kept at 0 between launches

struct DecodeParams {
  const void* q;
  int64_t q_stride;
  const void* k_cache;
  const void* v_cache;
  int64_t num_slots, max_reqs, max_context;
  const int32_t* req_to_token;
  const int32_t* req_pool_indices;
  const int32_t* seq_lens;
  void* out;
  float* part_o;    // [B, nq, splits, hd]
  float* part_lse;  // [B, nq, splits]
  int nq, nkv, hd, group, head_chunks, splits, lpt_log2;
  int min_chunk;     // fused: tokens per split at least (a request uses ceil(len / min_chunk) splits)
  float scale_log2;  // scale * log2(e)
};

// Fused: at most 128 registers up to GMAX 4 (4 blocks per SM, as the legacy kernel has; the slot
// prefetch and the merge would otherwise push GMAX 4 to 156 and 3 blocks per SM).
// kCluster (the legacy path's cluster merge, see launch_decode): the grid's x extent is the split
// count and one thread-block cluster; kThr threads a block (256: 2 blocks an SM, 512: 1), so that
// a cluster's one pass covers 1024 positions at head_dim 128 (kThr / 16 tokens x 4 a block).
template <typename T, int GMAX, bool kFused, int kThr = kThreads, bool kCluster = false>
__global__ void __launch_bounds__(kThr, kCluster ? 512 / kThr : kFused && GMAX <= 4 && sizeof(T) == 2 ? 4 : 1)
    decode_kernel(DecodeParams p) {
  __shared__ float sh_acc[kThr * 8];
  __shared__ float sh_m[kThr];
  __shared__ float sh_l[kThr];
  __shared__ float sh_w[kMaxSplits];
  __shared__ float sh_wsum;
  __shared__ bool sh_last;
  // kCluster: this block's normalised partial of each head and its log2-sum-exp, read by the
  // cluster's blocks through distributed shared memory.
  __shared__ float sh_po[kCluster ? GMAX * kMaxHeadDim : 1];
  __shared__ float sh_lse[GMAX];
  pdl_wait();
  const int split = blockIdx.x;
  const int kvh = blockIdx.y / p.head_chunks, chunk = blockIdx.y % p.head_chunks;
  const int b = blockIdx.z;
  const int lpt = 1 << p.lpt_log2;
  const int gl = threadIdx.x & (lpt - 1), grp = threadIdx.x >> p.lpt_log2, ngroups = kThr >> p.lpt_log2;
  const int d0 = gl * 8;
  const bool active = d0 < p.hd;
  const int first_head = kvh * p.group + chunk * GMAX;
  const int heads = min(GMAX, p.group - chunk * GMAX);

  // q first (as the legacy kernel always did): its loads overlap the length and table reads.
  const T* q = static_cast<const T*>(p.q) + static_cast<int64_t>(b) * p.q_stride;
  float qr[GMAX][8];
#pragma unroll
  for (int g = 0; g < GMAX; ++g) {
    if (active && g < heads) {
      load8(q + static_cast<int64_t>(first_head + g) * p.hd + d0, qr[g]);
#pragma unroll
      for (int i = 0; i < 8; ++i) qr[g][i] *= p.scale_log2;
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) qr[g][i] = 0.0f;
    }
  }

  const int64_t len = min(max(static_cast<int64_t>(p.seq_lens[b]), int64_t{0}), p.max_context);
  // This request's split count: the grid's (legacy), or from its live length (fused).
  const int splits =
      kFused ? static_cast<int>(min(static_cast<int64_t>(p.splits), max(int64_t{1}, (len + p.min_chunk - 1) / p.min_chunk)))
             : p.splits;
  if (split >= splits) return;  // uniform over the block; after pdl_wait (contract point 2)

  const int32_t req = p.req_pool_indices[b];
  const int32_t* table = (req >= 0 && req < p.max_reqs) ? p.req_to_token + req * p.max_context : nullptr;
  const int64_t per_split = (len + splits - 1) / splits;
  const int64_t start = split * per_split, end = min(len, start + per_split);

  const int64_t width = static_cast<int64_t>(p.nkv) * p.hd;
  const T* kc = static_cast<const T*>(p.k_cache) + static_cast<int64_t>(kvh) * p.hd + d0;
  const T* vc = static_cast<const T*>(p.v_cache) + static_cast<int64_t>(kvh) * p.hd + d0;
  float m[GMAX], l[GMAX], acc[GMAX][8];
#pragma unroll
  for (int g = 0; g < GMAX; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[g][i] = 0.0f;
  }
  // U tokens per group per iteration: their slots, then all their K/V loads, are issued before
  // any math so each thread keeps 2U 16-byte loads in flight. The loop bound is uniform over the
  // block so every lane reaches the shuffles.
  // The fused path also reads the next iteration's slots right after issuing this one's K/V
  // loads, so the table read (a dependent trip to memory) leaves each iteration's chain.
  constexpr int U = GMAX >= 8 ? 2 : 4;
  const int64_t step = static_cast<int64_t>(ngroups) * U;
  int64_t next_slot[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t pos = start + u * ngroups + grp;
    next_slot[u] = kFused && pos < end ? kv_slot(table, pos, p.num_slots) : 0;
  }
  for (int64_t base = start; base < end; base += step) {
    int64_t slot[U];
    bool valid[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t pos = base + u * ngroups + grp;
      valid[u] = pos < end;
      slot[u] = kFused ? next_slot[u] : valid[u] ? kv_slot(table, pos, p.num_slots) : 0;
    }
    Raw8<T> kr[U], vr[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (active && valid[u]) {
        kr[u].load(kc + slot[u] * width);
        vr[u].load(vc + slot[u] * width);
      } else {
        kr[u].zero();
        vr[u].zero();
      }
    }
    if (kFused) {
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t pos = base + step + u * ngroups + grp;
        next_slot[u] = pos < end ? kv_slot(table, pos, p.num_slots) : 0;
      }
    }
    float s[U][GMAX];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float kf[8];
      load8(kr[u].elems(), kf);
#pragma unroll
      for (int g = 0; g < GMAX; ++g) {
        float t = 0.0f;
#pragma unroll
        for (int i = 0; i < 8; ++i) t = fmaf(qr[g][i], kf[i], t);
        s[u][g] = t;
      }
    }
    for (int o = lpt >> 1; o > 0; o >>= 1) {
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int g = 0; g < GMAX; ++g) s[u][g] += __shfl_xor_sync(0xffffffffu, s[u][g], o);
    }
#pragma unroll
    for (int g = 0; g < GMAX; ++g) {
      float mt = -INFINITY;
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (valid[u]) mt = fmaxf(mt, s[u][g]);
      if (mt == -INFINITY) continue;  // no valid token for this group in this iteration
      const float mn = fmaxf(m[g], mt);
      const float alpha = exp2f(m[g] - mn);
      l[g] *= alpha;
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[g][i] *= alpha;
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if (!valid[u]) continue;
        const float pr = exp2f(s[u][g] - mn);
        l[g] += pr;
        float vf[8];
        load8(vr[u].elems(), vf);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc[g][i] = fmaf(pr, vf[i], acc[g][i]);
      }
      m[g] = mn;
    }
  }

  pdl_trigger();

  // Merge the groups of the block, one head at a time.
  T* out = static_cast<T*>(p.out);
#pragma unroll
  for (int g = 0; g < GMAX; ++g) {
    if (g >= heads) break;
#pragma unroll
    for (int i = 0; i < 8; ++i) sh_acc[threadIdx.x * 8 + i] = acc[g][i];
    if (gl == 0) {
      sh_m[grp] = m[g];
      sh_l[grp] = l[g];
    }
    __syncthreads();
    float mx = -INFINITY;
    for (int r = 0; r < ngroups; ++r) mx = fmaxf(mx, sh_m[r]);
    float lsum = 0.0f;
    if (mx != -INFINITY)
      for (int r = 0; r < ngroups; ++r) lsum += sh_l[r] * exp2f(sh_m[r] - mx);
    const int h = first_head + g;
    const int64_t bh = static_cast<int64_t>(b) * p.nq + h;
    for (int d = threadIdx.x; d < p.hd; d += kThr) {
      float o = 0.0f;
      if (lsum > 0.0f) {
        // Group r's lane d/8 holds dim d: thread index r * lpt + d / 8, element d % 8.
        for (int r = 0; r < ngroups; ++r) o += sh_acc[(r * lpt + d / 8) * 8 + d % 8] * exp2f(sh_m[r] - mx);
        o /= lsum;
      }
      if constexpr (kCluster) sh_po[g * p.hd + d] = o;
      else if (splits == 1) out[bh * p.hd + d] = from_float<T>(o);
      else p.part_o[(bh * p.splits + split) * p.hd + d] = o;
    }
    const float lse = lsum > 0.0f ? mx + log2f(lsum) : -INFINITY;
    if constexpr (kCluster) {
      if (threadIdx.x == 0) sh_lse[g] = lse;
    } else if (splits > 1 && threadIdx.x == 0) {
      p.part_lse[bh * p.splits + split] = lse;
    }
    __syncthreads();
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (kCluster) {
    // The combine kernel's merge over the cluster's blocks (= the splits, rank = split): each
    // block takes a share of the (head, dim) outputs and reads every split's lse and partial
    // through DSMEM; same arithmetic and order as combine_kernel.
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every block's partials and lse are in its shared memory
    __shared__ float sh_cw[GMAX * kMaxClusterSplits];  // the splits' lse, then their weights
    __shared__ float sh_cwsum[GMAX];
    if (static_cast<int>(threadIdx.x) < heads * splits)
      sh_cw[threadIdx.x] = *cluster.map_shared_rank(&sh_lse[threadIdx.x / splits], static_cast<int>(threadIdx.x) % splits);
    __syncthreads();
    if (static_cast<int>(threadIdx.x) < heads) {
      float* w = sh_cw + threadIdx.x * splits;
      float mx = -INFINITY;
      for (int s2 = 0; s2 < splits; ++s2) mx = fmaxf(mx, w[s2]);
      float sum = 0.0f;
      for (int s2 = 0; s2 < splits; ++s2) {
        w[s2] = mx == -INFINITY ? 0.0f : exp2f(w[s2] - mx);
        sum += w[s2];
      }
      sh_cwsum[threadIdx.x] = mx == -INFINITY ? 0.0f : sum;
    }
    __syncthreads();
    const int total = heads * p.hd, per = (total + splits - 1) / splits;
    for (int e = split * per + static_cast<int>(threadIdx.x); e < min(total, (split + 1) * per); e += kThr) {
      const int g = e / p.hd;
      const float wsum = sh_cwsum[g];
      float o = 0.0f;
      if (wsum > 0.0f) {
#pragma unroll 8
        for (int s2 = 0; s2 < splits; ++s2) o += sh_cw[g * splits + s2] * *cluster.map_shared_rank(&sh_po[e], s2);
        o /= wsum;
      }
      out[(static_cast<int64_t>(b) * p.nq + first_head) * p.hd + e] = from_float<T>(o);
    }
    cluster.sync();  // this block's shared memory stays until the others have read it
    return;
  }
#endif
  if (!kFused || splits == 1) return;

  // Fused combine: the last block of this (request, head block) to finish merges the partials
  // (threadFenceReduction pattern: partials fenced before the count, the count before the reads).
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned int* counter = g_split_counters + static_cast<int64_t>(b) * gridDim.y + blockIdx.y;
    const unsigned int done = atomicAdd(counter, 1u);
    sh_last = done == static_cast<unsigned int>(splits - 1);
    if (sh_last) atomicExch(counter, 0u);  // every split has counted: back to 0 for the next launch
  }
  __syncthreads();
  if (!sh_last) return;
  __threadfence();
  for (int g = 0; g < heads; ++g) {
    const int64_t bh = static_cast<int64_t>(b) * p.nq + first_head + g;
    const float* lse = p.part_lse + bh * p.splits;
    if (threadIdx.x < 32) {  // the combine kernel's weights: same arithmetic, same order
      float mx = -INFINITY;
      for (int s2 = threadIdx.x; s2 < splits; s2 += 32) mx = fmaxf(mx, __ldcg(lse + s2));
      for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      for (int s2 = threadIdx.x; s2 < splits; s2 += 32) sh_w[s2] = mx == -INFINITY ? 0.0f : exp2f(__ldcg(lse + s2) - mx);
      __syncwarp();
      if (threadIdx.x == 0) {
        float sum = 0.0f;
        for (int s2 = 0; s2 < splits; ++s2) sum += sh_w[s2];
        sh_wsum = mx == -INFINITY ? 0.0f : sum;
      }
    }
    __syncthreads();
    const float* po = p.part_o + bh * p.splits * p.hd;
    const float wsum = sh_wsum;
    for (int d = threadIdx.x; d < p.hd; d += kThreads) {
      float o = 0.0f;
      if (wsum > 0.0f) {
#pragma unroll 8
        for (int s2 = 0; s2 < splits; ++s2) o += sh_w[s2] * __ldcg(po + static_cast<int64_t>(s2) * p.hd + d);
        o /= wsum;
      }
      out[bh * p.hd + d] = from_float<T>(o);
    }
    __syncthreads();  // sh_w is reused for the next head
  }
}

// One block per (request, q head): merges the splits' partial outputs by their log-sum-exp.
// The split weights are computed once into shared memory; then each thread sums its dimension
// over the splits with independent loads in flight. (Reading lse and exponentiating inside one
// serial loop per thread took ~16 us at batch 1, more than the attention itself.) Same
// arithmetic in the same order as that loop: the results are unchanged.

template <typename T>
__global__ void __launch_bounds__(kThreads) combine_kernel(const float* __restrict__ part_o,
                                                           const float* __restrict__ part_lse, int splits, int hd,
                                                           T* __restrict__ out) {
  __shared__ float weight[kMaxSplits];
  __shared__ float weight_sum;
  __shared__ bool any;
  pdl_wait();
  pdl_trigger();
  const int64_t bh = blockIdx.x;
  const float* lse = part_lse + bh * splits;
  if (threadIdx.x < 32) {
    float mx = -INFINITY;
    for (int s = threadIdx.x; s < splits; s += 32) mx = fmaxf(mx, lse[s]);
    for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    for (int s = threadIdx.x; s < splits; s += 32) weight[s] = mx == -INFINITY ? 0.0f : exp2f(lse[s] - mx);
    __syncwarp();
    if (threadIdx.x == 0) {
      float sum = 0.0f;
      for (int s = 0; s < splits; ++s) sum += weight[s];
      weight_sum = sum;
      any = mx != -INFINITY;
    }
  }
  __syncthreads();
  const float* po = part_o + bh * splits * hd;
  for (int d = threadIdx.x; d < hd; d += kThreads) {
    float o = 0.0f;
    if (any) {
#pragma unroll 8
      for (int s = 0; s < splits; ++s) o += weight[s] * po[static_cast<int64_t>(s) * hd + d];
      o /= weight_sum;
    }
    out[bh * hd + d] = from_float<T>(o);
  }
}

int sm_count(Device device) {
  static std::mutex mu;
  static std::vector<int> counts;
  std::lock_guard<std::mutex> lock(mu);
  if (counts.size() <= static_cast<size_t>(device.index)) counts.resize(static_cast<size_t>(device.index) + 1, 0);
  int& c = counts[static_cast<size_t>(device.index)];
  if (c == 0)
    GRT_CUDA_CHECK(cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, device.index),
                   "reading the SM count of {}", device.str());
  return c;
}

// Path and tuning knobs, read once: GRAPHRT_DECODE_ATTENTION=auto|fused|legacy (default auto),
// GRAPHRT_DECODE_MIN_CHUNK (fused: tokens per split at least, default 64),
// GRAPHRT_DECODE_BLOCKS_PER_SM (blocks the split count aims at per SM, default 8),
// GRAPHRT_DECODE_HEADS_PER_BLOCK (most query heads of a GQA group one block applies its K/V rows
// to: 1, 2, 4 or 8; a larger group is split into chunks of that many; default 0: by batch, see
// heads_per_block);
// GRAPHRT_DECODE_MMA_CHUNK (mma path: tokens per split at least; default 0: by batch, see mma_chunk),
// GRAPHRT_DECODE_MMA_CHUNK_BY_PAIRS (1 default: below SMs pairs the chunk grows with the pairs; 0:
// 64; see mma_chunk) and
// GRAPHRT_DECODE_MMA_SPLITS (mma path: most splits a request uses, default 16, at most 64),
// GRAPHRT_DECODE_MMA_CLUSTER (mma path: -1 by batch, see mma_cluster (default); 0 the global merge;
// 2..16 clusters of that many blocks whenever they launch) and GRAPHRT_DECODE_MMA_CARVEOUT (mma
// path: preferred shared-memory carveout in percent; default -2: by kernel, see launch_decode_mma;
// -1 the driver's choice); GRAPHRT_DECODE_MMA_CARRY (mma path: 1 (default) a block doing several
// splits streams their tiles across split boundaries, 0 it drains its stages at each: the s6
// kernel; same bits), GRAPHRT_DECODE_MMA_EARLY (1: the carry kernel reads the decode metadata
// before pdl_wait; default 0: after it), GRAPHRT_DECODE_MMA_WIDE (default 1: from SMs pairs on,
// 512-token splits, one block each; 0: 256-token splits, blocks looping; see launch_mma) and
// GRAPHRT_DECODE_MMA_WIDE_SPLITS (the wide geometry's most splits a request: -1 auto (default, by
// the grid's waves: ops/decode_split_cap.h), 1..64 that many (4: sessions 19-26), 0:
// GRAPHRT_DECODE_MMA_SPLITS; see DecodeKnobs) and GRAPHRT_DECODE_MMA_HEAD_CLUSTER (0, 2, 4, 8: the
// global-merge kernel's blocks of that many kv heads as one cluster; see launch_mma) and
// GRAPHRT_DECODE_MMA_KV_GROUP (auto, 1, 2, 4: kv heads per block of the wide geometry; see
// mma_kv_group) and GRAPHRT_DECODE_MMA_WIDE_CHUNK (the wide geometry's most tokens a split, default
// 512; for A/B) and GRAPHRT_DECODE_MMA_SWAP (0, 1, auto: the transposed tile math in the wide
// geometry; see mma_swap) and GRAPHRT_DECODE_MMA_WARP_PIPE (0, 1: the swapped kernel's per-warp copy
// pipeline; same bits) and GRAPHRT_DECODE_MMA_EARLY_TRIGGER (0, 1: the mma kernel triggers its
// dependents right after pdl_wait; same bits) and GRAPHRT_DECODE_MMA_PRELOAD (0, 1, auto: below
// SMs pairs the mma kernel copies its first K/V tile before pdl_wait; same bits; see launch_mma)
// and GRAPHRT_DECODE_MMA_IDLE_EXIT (0, 1: blocks with no split of their request leave before
// pdl_wait; same bits) and GRAPHRT_DECODE_FUSE_PREPARE (0, 1: the preload kernel does prepare_qkv_'s
// work itself for ops::attention_decode_prepare; same bits; off: measured slower, see DecodeKnobs).

// The auto wide split cap's largest value (ops::wide_split_cap's `most`; sessions 19-26's fixed cap).
constexpr int64_t kWideSplitsMost = 4;

struct DecodeKnobs {
  DecodeAttentionPath path = DecodeAttentionPath::automatic;
  int min_chunk = 64;
  int blocks_per_sm = 8;
  int heads_per_block = 0;  // 0: by batch
  int mma_chunk = 0;  // 0: by batch
  int mma_chunk_by_pairs = 1;  // below SMs pairs: the chunk grows with the pairs (mma_chunk)
  int mma_splits = 16;
  int mma_cluster = -1;  // -1: by batch
  int mma_carveout = -2;  // by kernel
  int mma_carry = 1;
  int mma_early = 0;  // measured no gain (s7 run 1); an exception to pdl.cuh's contract point 1
  int mma_wide = 1;
  int mma_head_cluster = 0;
  int mma_kv_group = 1;  // 0: auto (mma_kv_group)
  int mma_wide_chunk = 512;
  // The wide geometry's most splits a request, within GRAPHRT_DECODE_MMA_SPLITS (0: that alone, as
  // sessions 7-18). Why a cap of its own: the grid is that many blocks a (request, kv head) whatever the
  // live lengths (a graph serves every length up to the table width, so up to 16 at a table of
  // 8192 tokens), and with short requests most blocks only read a length and leave, which still
  // takes their turn on the SMs; from SMs pairs on, fewer, longer splits still fill the GPU. A
  // fixed number, so a row's splits (and bits) still depend on its length and on which side of
  // the SM count the batch lies only (padding changes no real row). Measured (H100,
  // bench/results/h100_2026-11-25_session19, graph ms, qwen3-0.6b unless noted). Call I, ABBA, 4
  // against the old cap (16): prefill of 64 tokens as rows (table 4104: 9 splits, 4608 blocks,
  // 512 working) 1.339 / 1.364 vs 1.406 / 1.428; bs 256 ctx 700 with a table of 8192 9.080 /
  // 9.057 vs 9.128 / 9.120; bs 64 ctx 1024 with a table of 40960 4.099 / 4.112 vs 4.098 / 4.134,
  // with 1026 (3 splits either way) equal; llama-3.1-8b bs 64 (table 8192) equal; but long
  // requests just above SMs pairs lose: bs 32 ctx 4096 (8 splits before) 6.652 / 6.642 vs 6.584 /
  // 6.583 (+1%). Calls G-H: 2 lost more there (bs 32 ctx 4096 +0.33 ms, bs 24 ctx 8192 +0.07).
  // -1 (auto, the default since session 27): ops::wide_split_cap of the batch's rows (rounded up
  // to 8) and kv heads, at most kWideSplitsMost: the fewest splits whose grid is one wave of ~2
  // blocks an SM or uses >= 80% of its waves' slots (bench/results/h100_2026-11-26_session27 calls
  // C-E; the rule's header says what it measured); a row's splits still depend on its length and
  // its batch's row bucket only.
  int mma_wide_splits = -1;
  int mma_swap = 2;  // 0 off, 1 on where it applies, 2 auto (default; mma_swap)
  // s8-dattn2 run 1: llama bs 64 ncu 107.0 -> 105.9 us, graph -0.05 / 0.00 ms, qwen bs 64 -0.00 /
  // -0.03 (a small gain, same bits): on.
  int mma_warp_pipe = 1;
  // s8-dattn2 run 1: slower wherever the next kernel is a PDL GEMV (qwen bs 1 / 8 +0.01..+0.07 ms,
  // llama bs 1 +0.04..+0.06, qwen3-30b-a3b bs 1 +0.06): off.
  int mma_early_trigger = 0;
  int mma_preload = 2;  // 0 off, 1 below SMs pairs, 2 auto (default): where the grid is one wave; see launch_mma
  // Idle blocks leave before pdl_wait (DecodeMmaParams::idle_exit). Measured (H100, session 13,
  // bench/results/h100_2026-11-24_s13_idle, two rounds): qwen3-0.6b prefill of 16 tokens as rows
  // with the default schedule (grid 9 x 8 x 16 for a 4104-token table, 128 blocks working) 1.120 /
  // 1.130 -> 1.060 / 1.075 ms (attention's advance 4.61 -> 3.33 us a layer), 64 tokens 1.441 /
  // 1.435 -> 1.411 / 1.430; decode bs 1 / 8 / 64 at ctx 1024 (no idle blocks) and 4 tokens equal: on.
  int mma_idle_exit = 1;
  // K/V copies under an L2 evict-first policy (DecodeMmaParams::kv_evict_first). Measured (H100,
  // bench/results/h100_2026-11-26_session28 call D, graph ms, off -> on): llama-3.1-8b ctx 1024 bs 64
  // 9.01 / 9.05 -> 8.90 / 8.90, bs 128 12.17 / 12.23 -> 12.09 / 12.08, qwen3-0.6b bs 64 3.83-3.85 ->
  // 3.78-3.83, but qwen3-0.6b ctx 4096 bs 32 6.19 / 6.21 -> 6.34 / 6.39, and its premise refuted: the
  // blocks still wait as long on their first table entries (ncu: 47% of stall samples, 50% before),
  // so the wait is the SM's queue of K/V copies, not DRAM misses. Off.
  int mma_kv_evict_first = 0;
  // prepare_qkv_ inside the preload kernel (DecodeMmaParams::fuse_prepare; fuse_prepare_fits).
  // Measured slower (H100, bench/results/h100_2026-11-24_s14_fuse, decode graphs made decode-only
  // for the run, two rounds): qwen3-0.6b bs 1 1.028 / 1.025 -> 1.051 / 1.052 ms, qwen3-30b-a3b bs 1
  // 3.705 / 3.697 -> 3.781 / 3.779, llama-3.1-8b bs 1 5.796 / 5.814 -> 5.835 / 5.836: without
  // prepare_qkv between them the attention's blocks land only as the qkv GEMV's blocks (which hold
  // the register file) leave, 1.0 us before it ends instead of 3.1 us before prepare_qkv does, so
  // the K/V preload moves onto the chain (attention advance 7.68 + prepare 1.79 -> 10.56 us a layer):
  // off. Session 23 (bench/results/h100_2026-11-25_session23, call A), with the one-row qkv kernel
  // (weights in shared memory, 38-65 registers) before it and the decode graph of one row fused
  // (kv_new_from at batch 1 now fits): qwen3-0.6b bs 1 0.849-0.863 -> 0.877-0.893 ms, llama-3.1-8b
  // 5.836 -> 5.861, qwen3-30b-a3b 3.628 -> 3.663; the fused attention's blocks still land only
  // 1.5 us before the qkv GEMV ends (attention 9.60 us a layer against prepare 2.05 + 6.66): off.
  int fuse_prepare = 0;
  int legacy_cluster = -1;  // -1: by batch
};

DecodeKnobs read_knobs() {
  DecodeKnobs k;
  constexpr DecodeAttentionPath kPaths[] = {DecodeAttentionPath::automatic, DecodeAttentionPath::fused,
                                            DecodeAttentionPath::legacy, DecodeAttentionPath::mma};
  k.path = kPaths[env_choice("GRAPHRT_DECODE_ATTENTION", {"auto", "fused", "legacy", "mma"}, 0)];
  k.min_chunk = env_int("GRAPHRT_DECODE_MIN_CHUNK", k.min_chunk, 1, 1 << 20);
  k.blocks_per_sm = env_int("GRAPHRT_DECODE_BLOCKS_PER_SM", k.blocks_per_sm, 1, 64);
  k.heads_per_block = env_int("GRAPHRT_DECODE_HEADS_PER_BLOCK", k.heads_per_block, 0, 8);
  k.mma_chunk = env_int("GRAPHRT_DECODE_MMA_CHUNK", k.mma_chunk, 0, 1 << 20);
  k.mma_chunk_by_pairs = env_int("GRAPHRT_DECODE_MMA_CHUNK_BY_PAIRS", k.mma_chunk_by_pairs, 0, 1);
  k.mma_splits = env_int("GRAPHRT_DECODE_MMA_SPLITS", k.mma_splits, 1, kDecodeMmaMaxSplits);
  k.mma_cluster = env_int("GRAPHRT_DECODE_MMA_CLUSTER", k.mma_cluster, -1, kDecodeMmaMaxCluster);
  GRT_CHECK(k.mma_cluster != 1, "GRAPHRT_DECODE_MMA_CLUSTER=1: use 0 (global merge), -1 (by batch) or 2..{}",
            kDecodeMmaMaxCluster);
  k.mma_carveout = env_int("GRAPHRT_DECODE_MMA_CARVEOUT", k.mma_carveout, -2, 100);
  k.mma_carry = env_int("GRAPHRT_DECODE_MMA_CARRY", k.mma_carry, 0, 1);
  k.mma_early = env_int("GRAPHRT_DECODE_MMA_EARLY", k.mma_early, 0, 1);
  k.mma_wide = env_int("GRAPHRT_DECODE_MMA_WIDE", k.mma_wide, 0, 1);
  constexpr int kHeadClusters[] = {0, 2, 4, 8};
  k.mma_head_cluster = kHeadClusters[env_choice("GRAPHRT_DECODE_MMA_HEAD_CLUSTER", {"0", "2", "4", "8"}, 0)];
  constexpr int kKvGroups[] = {1, 0, 2, 4};
  k.mma_kv_group = kKvGroups[env_choice("GRAPHRT_DECODE_MMA_KV_GROUP", {"1", "auto", "2", "4"}, 0)];
  k.mma_wide_chunk = env_int("GRAPHRT_DECODE_MMA_WIDE_CHUNK", k.mma_wide_chunk, 16, 1 << 20);
  k.mma_wide_splits = env_int("GRAPHRT_DECODE_MMA_WIDE_SPLITS", k.mma_wide_splits, -1, kDecodeMmaMaxSplits);
  k.mma_swap = env_choice("GRAPHRT_DECODE_MMA_SWAP", {"0", "1", "auto"}, k.mma_swap);  // (index = mode)
  k.mma_warp_pipe = env_int("GRAPHRT_DECODE_MMA_WARP_PIPE", k.mma_warp_pipe, 0, 1);
  k.mma_early_trigger = env_int("GRAPHRT_DECODE_MMA_EARLY_TRIGGER", k.mma_early_trigger, 0, 1);
  k.mma_preload = env_choice("GRAPHRT_DECODE_MMA_PRELOAD", {"0", "1", "auto"}, k.mma_preload);  // (index = mode)
  k.mma_idle_exit = env_int("GRAPHRT_DECODE_MMA_IDLE_EXIT", k.mma_idle_exit, 0, 1);
  k.mma_kv_evict_first = env_int("GRAPHRT_DECODE_MMA_KV_EVICT_FIRST", k.mma_kv_evict_first, 0, 1);
  k.fuse_prepare = env_int("GRAPHRT_DECODE_FUSE_PREPARE", k.fuse_prepare, 0, 1);
  constexpr int kLegacyClusters[] = {-1, 0, 8, 16};
  k.legacy_cluster = kLegacyClusters[env_choice("GRAPHRT_DECODE_LEGACY_CLUSTER", {"auto", "0", "8", "16"}, 0)];
  GRT_CHECK((k.heads_per_block & (k.heads_per_block - 1)) == 0,
            "GRAPHRT_DECODE_HEADS_PER_BLOCK={} must be 0 (by batch), 1, 2, 4 or 8", k.heads_per_block);
  return k;
}

const DecodeKnobs& knobs() {
  static const DecodeKnobs k = read_knobs();
  return k;
}

std::atomic<int> g_path_override{-1};  // -1: the environment's path; else DecodeAttentionPath
std::atomic<int> g_cluster_override{-2};  // -2: the environment's GRAPHRT_DECODE_MMA_CLUSTER
std::atomic<int> g_carry_override{-1};  // -1: the environment's GRAPHRT_DECODE_MMA_CARRY
std::atomic<int> g_wide_override{-1};   // -1: the environment's GRAPHRT_DECODE_MMA_WIDE
std::atomic<int> g_kv_group_override{-1};  // -1: the environment's GRAPHRT_DECODE_MMA_KV_GROUP
std::atomic<int> g_swap_override{-1};      // -1: the environment's GRAPHRT_DECODE_MMA_SWAP
std::atomic<int> g_warp_pipe_override{-1};  // -1: the environment's GRAPHRT_DECODE_MMA_WARP_PIPE
std::atomic<int> g_early_trigger_override{-1};  // -1: the environment's GRAPHRT_DECODE_MMA_EARLY_TRIGGER
std::atomic<int> g_preload_override{-1};  // -1: the environment's GRAPHRT_DECODE_MMA_PRELOAD
std::atomic<int> g_idle_exit_override{-1};  // -1: the environment's GRAPHRT_DECODE_MMA_IDLE_EXIT
std::atomic<int> g_kv_evict_first_override{-1};  // -1: the environment's GRAPHRT_DECODE_MMA_KV_EVICT_FIRST
std::atomic<int> g_fuse_prepare_override{-1};  // -1: the environment's GRAPHRT_DECODE_FUSE_PREPARE
std::atomic<int> g_legacy_cluster_override{-2};  // -2: the environment's GRAPHRT_DECODE_LEGACY_CLUSTER

DecodeAttentionPath chosen_path() {
  const int o = g_path_override.load(std::memory_order_relaxed);
  return o < 0 ? knobs().path : static_cast<DecodeAttentionPath>(o);
}

// auto: below 2 blocks per SM before splitting (qwen3-0.6b / llama-3.1-8b: batch < 33) the legacy
// path measured faster on the H100 (bs 1: 1.271 vs 1.287 ms, llama 6.254 vs 6.428; bs 8: 1.810
// vs 1.841): its 33 one-iteration splits and 16-32 block combine beat the fused kernel's serial
// last-block merge. From there on the fused one did (llama bs 64: 11.146 vs 11.531; bs 256:
// 23.634 vs 27.072, qwen 12.731 vs 13.260; qwen bs 64 even, 4.715 vs 4.691).
// (mma forced on a case it does not cover: the auto choice between these two.)
bool use_legacy(int base_blocks, int sms) {
  const DecodeAttentionPath path = chosen_path();
  if (path == DecodeAttentionPath::fused || path == DecodeAttentionPath::legacy) return path == DecodeAttentionPath::legacy;
  return base_blocks < 2 * sms;
}

// auto: the tensor-core kernel wherever it takes the shape. Groups of 4+ query heads measured faster
// on it at every batch from the start (bench/results/h100_2026-11-23_s5_dattn/README.md and
// h100_2026-11-23_session5/run5: llama-3.1-8b bs 64 11.422 -> 9.917, bs 256 23.427 -> 21.704 ms).
// Group 2 (qwen3-0.6b) stayed on the lane-group kernel above 4 x SMs pairs (bs > 66) after session
// 5's bs 256 (12.49 -> 13.23 ms with mma); the mma kernel has since gained the swapped tile, the
// warp pipe, the wide geometry, unpadded swizzled tiles and the split cap, and re-measured faster at
// every batch there (H100, bench/results/h100_2026-11-26_session28 call B, qwen3-0.6b graph ms, lane
// group -> mma, ctx 1024: bs 72 5.15 -> 4.24, bs 96 5.77 -> 5.07, bs 128 7.17 -> 6.31, bs 192 9.70 ->
// 8.94, bs 256 12.33 -> 11.50; ctx 4096 bs 96 17.38 -> 16.28, bs 128 22.51 -> 20.96). Group 3 was
// never measured apart; it takes the same swapped kernel as group 2.
bool use_mma(bool supported) {
  if (!supported) return false;
  const DecodeAttentionPath path = chosen_path();
  return path == DecodeAttentionPath::automatic || path == DecodeAttentionPath::mma;
}

// Tokens per split at least (GRAPHRT_DECODE_MMA_CHUNK, else by batch). Below the SM count in
// batch x kv heads pairs, by pairs (GRAPHRT_DECODE_MMA_CHUNK_BY_PAIRS=1, the default: ops::
// decode_mma_chunk_by_pairs, with its measurements; 0: 64 for all of them, sessions 5-18); 256
// from the SM count on (outside the wide geometry, which takes 512: launch_mma). The bucket bounds
// (4 / 16 / 32 / SMs pairs: the last batch of a bucket is bs 2 / 4 / 16 at 8 kv heads, bs 1 / 4 /
// 8 / 32 at 4) are capture sizes, so padding a batch to its graph rarely crosses one.
int mma_chunk(int64_t pairs, int sms) {
  if (knobs().mma_chunk > 0) return knobs().mma_chunk;
  if (pairs >= sms) return 256;
  if (!knobs().mma_chunk_by_pairs) return 64;
  return ops::decode_mma_chunk_by_pairs(pairs);
}

// Cluster size of the mma path (0: the global merge), GRAPHRT_DECODE_MMA_CLUSTER or by batch.
// By batch: while batch x kv heads is below the SM count (the chunk-64 side: a few blocks per
// (request, kv head), latency bound at bs 1) the splits of a (request, kv head) form one cluster
// of one block per split (16 at most: a non-portable size; the same splits as the global merge)
// where all the launch's clusters are resident at once (14 of 16 on an H200 at head_dim 128);
// otherwise, and from SMs pairs on, the global merge, whose cost is small against the KV
// bandwidth there. Measured (bench/results/h100_2026-11-23_s5_dattn2, H200, graph ms, ctx 1024):
// qwen3-30b-a3b bs 1 3.602 / 3.603 -> 3.461 / 3.459 (clusters of 16; of 8: 3.669); bs 8 (32 pairs,
// 14 clusters of 16 and 30 of 8 resident: global merge) 10.75-10.81, forced 16 / 8 11.05 / 11.04;
// llama-3.1-8b bs 1 4.889 -> 4.584 with the cluster kernel's carveout left to the driver (4.971
// with the whole carveout preferred, see launch_decode_mma). Any size gives the same bits (same splits, same merge order), so the rule may
// change with the batch without changing any row.
int mma_cluster(int dev, DType dtype, int head_dim, int64_t pairs, int sms, int max_splits, int* slots) {
  int want = g_cluster_override.load(std::memory_order_relaxed);
  if (want < -1) want = knobs().mma_cluster;
  if (max_splits < 2 || want == 0 || (want < 0 && pairs >= sms)) return 0;
  const auto resident = [&](int size) {  // clusters of `size` resident at once
    *slots = (max_splits + size - 1) / size;
    return decode_mma_cluster_fits(dev, dtype, head_dim, size, *slots);
  };
  if (want > 1) {
    GRT_CHECK(resident(want) > 0,
              "GRAPHRT_DECODE_MMA_CLUSTER={}: clusters of {} blocks ({} splits each) cannot launch here", want, want,
              *slots);
    return want;
  }
  // By batch: one block per split (two splits a block measured slower than the global merge),
  // where every pair's cluster is resident at once.
  if (max_splits <= kDecodeMmaMaxCluster && resident(max_splits) >= pairs) return max_splits;
  *slots = 0;
  return 0;
}

// The fields both decode kernels' parameters share (DecodeParams, DecodeMmaParams), from the op's
// arguments.
template <typename P>
void set_common_params(P& p, const ops::DecodeArgs& d) {
  const ops::PagedAttentionArgs& a = d.a;
  p.q = a.q;
  p.q_stride = a.q_row_stride;
  p.k_cache = a.k_cache;
  p.v_cache = a.v_cache;
  p.num_slots = a.num_slots;
  p.max_reqs = a.max_reqs;
  p.max_context = a.max_context;
  p.req_to_token = a.req_to_token;
  p.req_pool_indices = a.req_pool_indices;
  p.seq_lens = d.seq_lens;
  p.out = a.out;
  p.nq = a.num_q_heads;
  p.nkv = a.num_kv_heads;
  p.hd = a.head_dim;
}

// Kv heads per block of the mma kernel (GRAPHRT_DECODE_MMA_KV_GROUP; DecodeMmaParams::kv_per_block):
// only in the wide geometry (one split a block, global merge, no carry), where `want` (1, 2, 4;
// 0: auto = the largest of 4, 2) divides the kv heads and the block's query heads fit the 16
// Q rows (it x group <= 16); else 1. Why: a block of one kv head reads 256-byte
// pieces (head_dim 128, bf16) at an nkv x 256-byte stride through the token rows, the 8 kv heads'
// blocks of a token range at unrelated times; a block of 4 reads 1 KB contiguous pieces, and at
// llama / qwen bs 64 ctx 1024 the grid (3, 2, 64) = 384 blocks is one wave of the 396 resident
// slots instead of 3.9 (one block start ramp, no wave boundaries). A row's bits depend on it (the
// warp split of a tile changes), as a function of the shape and the pairs-vs-SMs side only.
// Measured (bench/results/h100_2026-11-24_s8_bs64): the read pattern itself does not matter (the
// kernel's copy scheme with no math reads 1 KB or 2 KB pieces as fast as 256 B ones), and the
// kernel is slower (run 2, graph ms: llama bs 64 9.706 / 9.581 -> 9.825 / 9.826 at 4, 9.768 / 9.731
// at 2; bs 128 13.085 -> 13.449; bs 256 ctx 660 16.169 -> 16.411): opt-in, default 1 (where the
// swapped kernel, mma_swap, runs instead).
int mma_kv_group(int want, int nkv, int group) {
  for (const int h : {4, 2})
    if ((want == 0 || want == h) && nkv % h == 0 && h * group <= 16) return h;
  return 1;
}

// Whether the wide geometry's plain kernel (one kv head a block) runs the transposed tile math
// (GRAPHRT_DECODE_MMA_SWAP; DecodeMmaParams::swap; "Swap" in attention_decode_mma.cu): mode 1 for
// groups of 2..8 query heads (it has 8 head columns), 2 (auto, default) the measured rule, 0 never.
// Why: groups of 2-8 fill 2-8 of the untransposed A tile's 16 rows; transposed, the mma count of a
// tile halves. A row's bits depend on it (summation order), as a function of the shape only.
// Measured (H100, bench/results/h100_2026-11-24_s8_bs64 run 3, two rounds): a small, consistent
// gain: decode_mma alone llama-3.1-8b bs 64 108.7 -> 108.0 us, qwen3-0.6b 107.1 -> 106.2 us
// (-9% instructions); graph ms llama bs 64 9.627 / 9.592 -> 9.584 / 9.573, qwen bs 64 4.193 / 4.230
// -> 4.142 / 4.179, llama bs 256 ctx 660 16.226 -> 16.156. The swapped kernel's instruction stream
// does not depend on the group, so auto takes every group it covers (8 not timed).
bool mma_swap(int mode, int group) { return mode != 0 && group >= 2 && group <= 8; }

// Whether the mma kernel set up in p does prepare_qkv_'s work (pr) itself ("Fused prepare" in
// attention_decode_mma.cu): the preload kernel (one kv head a block, the small-batch geometry) of a
// decode, bf16 as prepare_qkv_'s lanes kernel, pr on the same rows, heads and caches as the
// attention, every row and weight 16-byte aligned (the kernel moves 16-byte chunks). A decode: no
// kv_new_from, or one row, whose kv_new_from can only be its own last position (a step of one
// token writes that position alone), so the fused kernel's rule (every position before seq_lens - 1
// is old) holds. Rows of an extend (two or more rows, kv_new_from set) need every new K/V row
// stored before any block reads it: unfused.
bool fuse_prepare_fits(const DecodeMmaParams& p, const ops::DecodeArgs& d, const ops::PrepareQkvArgs& pr) {
  const ops::PagedAttentionArgs& a = d.a;
  constexpr size_t es = 2;  // bf16
  return decode_fuse_prepare() && p.preload && (d.kv_new_from == nullptr || d.batch == 1) &&
         a.dtype == DType::BF16 && pr.dtype == DType::BF16 && pr.head_dim == p.hd && pr.q == a.q &&
         pr.q_stride == a.q_row_stride && pr.q_heads == p.nq && pr.kv_heads == p.nkv && pr.tokens == d.batch &&
         pr.k_cache == a.k_cache && pr.v_cache == a.v_cache && pr.num_slots == a.num_slots &&
         dense::aligned16(pr.k, pr.k_stride, es) && dense::aligned16(pr.v, pr.v_stride, es) &&
         dense::aligned16(pr.q_norm, 0, es) && dense::aligned16(pr.k_norm, 0, es) &&
         dense::aligned16(pr.cos_sin, 0, es);
}

// The mma path: splits per request from its own length (DecodeMmaParams), the grid as wide as
// the most splits while batch x kv heads x splits stays within blocks_per_sm x SMs (else blocks
// loop over splits; the bits are the same either way).
void launch_mma(Stream& stream, Device device, const ops::DecodeArgs& d, int sms) {
  const ops::PagedAttentionArgs& a = d.a;
  DecodeMmaParams p{};
  set_common_params(p, d);
  p.kv_new_from = d.kv_new_from;
  p.group = a.num_q_heads / a.num_kv_heads;
  const int64_t pairs = static_cast<int64_t>(d.batch) * p.nkv;
  // Wide (default; GRAPHRT_DECODE_MMA_WIDE=0 for the session-6 geometry): from SMs pairs on,
  // splits of at most 512 tokens and one block per split (grid x = the most splits) instead of
  // 256-token splits on at most ceil(8 x SMs / pairs) blocks a pair looping over them. The
  // blocks are equal and the grid fills whole waves better: llama-3.1-8b bs 256 ctx 1024 isolated
  // 428.7 -> 394.5 us (2.55 -> 2.73 TB/s). H100 graph ms (bench/results/h100_2026-11-24_s7_dattn,
  // run 2, two rounds): llama bs 32 8.11 -> 8.06, bs 64 9.78 -> 9.74, bs 128 13.51 -> 13.33, bs 256
  // ctx 660 16.81 -> 16.29, bs 64 ctx 4096 19.27 -> 18.72; qwen3-0.6b bs 32 2.82 -> 2.80, bs 64
  // 4.25 -> 4.23. A row's splits then depend on its length and on which side of the SM count
  // batch x kv heads lies, as before (the chunk rule had that boundary already).
  const bool wide = decode_mma_wide() && knobs().mma_chunk == 0 && pairs >= sms;
  p.chunk = wide ? knobs().mma_wide_chunk : mma_chunk(pairs, sms);
  // No request can use more splits than the table width allows: scratch for those only.
  const int64_t by_ctx = std::max<int64_t>(1, (a.max_context + p.chunk - 1) / p.chunk);
  int cap = wide && knobs().mma_wide_splits > 0 ? std::min(knobs().mma_wide_splits, knobs().mma_splits)
                                                 : knobs().mma_splits;
  if (wide && knobs().mma_wide_splits < 0) {  // auto: by the grid's waves (ops/decode_split_cap.h)
    const int most = static_cast<int>(std::min<int64_t>({kWideSplitsMost, knobs().mma_splits, by_ctx}));
    cap = ops::wide_split_cap(d.batch, p.nkv, static_cast<int64_t>(decode_mma_blocks_per_sm(p.hd)) * sms, sms, most);
  }
  p.max_splits = static_cast<int>(std::min<int64_t>(cap, by_ctx));
  p.scale_log2 = a.scale * kLog2e;
  p.cluster = mma_cluster(device.index, a.dtype, p.hd, pairs, sms, p.max_splits, &p.cluster_slots);
  Tensor part_o, part_lse;
  if (p.max_splits > 1 && p.cluster == 0) {
    part_o = empty(Shape{d.batch, p.nq, p.max_splits, p.hd}, DType::F32, device);
    part_lse = empty(Shape{d.batch, p.nq, p.max_splits}, DType::F32, device);
    p.part_o = part_o.data_as<float>();
    p.part_lse = part_lse.data_as<float>();
  }
  const int64_t by_gpu = std::max<int64_t>(1, (static_cast<int64_t>(sms) * knobs().blocks_per_sm + pairs - 1) / pairs);
  const int64_t grid_x = p.cluster > 1 ? p.cluster : wide ? p.max_splits : std::min<int64_t>(p.max_splits, by_gpu);
  // Head clusters (GRAPHRT_DECODE_MMA_HEAD_CLUSTER=n): the global-merge kernel's blocks of n kv
  // heads of one (request, split) launch as one cluster (co-scheduled: they read neighbouring
  // 256-byte pieces of the same token rows at the same time). Where n divides the kv heads and
  // such clusters launch; a scheduling choice only (same bits).
  // Measured slower (run 2: llama bs 64 9.78 -> 9.95 ms, isolated 112.8 -> 116.4 us): off by default.
  const int hc = knobs().mma_head_cluster;
  p.head_cluster = p.cluster == 0 && hc > 1 && p.nkv % hc == 0 &&
                           decode_mma_head_cluster_fits(device.index, a.dtype, p.hd, hc) > 0
                       ? hc
                       : 0;
  // The carry kernel where a block may do several splits (below SMs pairs with long requests, or
  // GRAPHRT_DECODE_MMA_WIDE=0), or where the early metadata read is asked for (only it has one).
  // Same bits either way. Measured (s7 runs 1-2): no change where blocks do 1-2 splits, -0.12 ms
  // at llama bs 64 ctx 4096 without wide (5-6 splits a block), qwen3-30b-a3b bs 8 -0.07 ms
  // (two rounds), bs 1 within noise.
  p.early = knobs().mma_early != 0;
  p.carry = decode_mma_carry() && (grid_x < p.max_splits || p.early);
  p.early = p.early && p.carry;
  // Kv groups: the wide geometry's one split a block (global merge, no carry) only.
  const bool plain_wide = wide && p.cluster == 0 && !p.carry && !p.early && p.head_cluster <= 1;
  const int want_group = decode_mma_kv_group();
  p.kv_per_block = plain_wide && want_group != 1 ? mma_kv_group(want_group, p.nkv, p.group) : 1;
  p.swap = plain_wide && p.kv_per_block == 1 && mma_swap(decode_mma_swap(), p.group);
  p.warp_pipe = p.swap && decode_mma_warp_pipe();
  p.early_trigger = decode_mma_early_trigger();
  p.idle_exit = decode_mma_idle_exit();
  p.kv_evict_first = decode_mma_kv_evict_first();
  // Preload (GRAPHRT_DECODE_MMA_PRELOAD; "Preload" in attention_decode_mma.cu): below SMs pairs,
  // where the kernel is a short chain of dependent memory trips (qwen3-0.6b bs 1 ctx 1024: 16 x 8
  // blocks of one 64-token tile each), the first tile's K/V copies overlap the predecessor
  // (prepare_qkv) instead of following its completion. Not in the wide geometry (bandwidth
  // bound; its own kernels). Same bits either way. Mode 1: wherever it applies; auto (default):
  // where the whole grid is resident at once (kOcc blocks an SM), so every block can preload while
  // prepare_qkv runs. Measured (H100, bench/results/h100_2026-11-24_s11_dattn1, ctx 1024, graph
  // ms, three interleaved rounds, mode 1 vs 0): qwen3-0.6b bs 1 -0.019 / -0.021 / -0.030, llama-3.1-8b
  // bs 1 -0.003 / -0.025 / -0.042, qwen3-30b-a3b bs 1 -0.021 / -0.015 / +0.002 (grids of 128, 128,
  // 64 blocks); qwen3-0.6b bs 8 (1024 blocks, 2.6 waves: only the first preloads) +0.023 / +0.014 /
  // -0.005: auto leaves it out.
  const int preload = decode_mma_preload();
  const int64_t blocks = grid_x * (p.nkv / p.kv_per_block) * d.batch;
  const bool one_wave = blocks <= static_cast<int64_t>(decode_mma_blocks_per_sm(p.hd)) * sms;
  p.preload = preload != 0 && pairs < sms && p.kv_per_block == 1 && !p.swap && (preload == 1 || one_wave);
  if (d.prepare != nullptr) {
    const ops::PrepareQkvArgs& pr = *d.prepare;
    p.fuse_prepare = fuse_prepare_fits(p, d, pr);
    if (p.fuse_prepare) {
      p.kv_new_from = nullptr;  // one row at most (fuse_prepare_fits): its new position is seq_lens - 1
      p.k_new = pr.k;
      p.v_new = pr.v;
      p.k_stride = pr.k_stride;
      p.v_stride = pr.v_stride;
      p.q_norm = pr.q_norm;
      p.k_norm = pr.k_norm;
      p.norm_eps = pr.eps;
      p.positions = pr.positions;
      p.cos_sin = pr.cos_sin;
      p.max_positions = pr.max_positions;
      p.out_cache_loc = pr.out_cache_loc;
    } else {
      prepare_qkv(device, pr);
    }
  }
  launch_decode_mma(device.index, native_stream(stream), p, a.dtype,
                    dim3(static_cast<unsigned>(grid_x), static_cast<unsigned>(p.nkv / p.kv_per_block),
                         static_cast<unsigned>(d.batch)),
                    knobs().mma_carveout);
  GRT_CUDA_CHECK_LAUNCH(
      "attention_decode mma B={} heads {}/{} head_dim {} grid x {} (splits <= {}, chunk {}, cluster {} x {} slots, carry {}, "
      "early {}, head cluster {}, kv heads a block {}, swap {}, warp pipe {}, early trigger {}, preload {}, "
      "fused prepare {}, kv evict first {})",
      d.batch, p.nq, p.nkv, p.hd, grid_x, p.max_splits, p.chunk, p.cluster, p.cluster_slots, p.carry ? 1 : 0,
      p.early ? 1 : 0, p.head_cluster, p.kv_per_block, p.swap ? 1 : 0, p.warp_pipe ? 1 : 0, p.early_trigger ? 1 : 0,
      p.preload ? 1 : 0, p.fuse_prepare ? 1 : 0, p.kv_evict_first ? 1 : 0);
}

template <typename T, bool kFused>
void launch_decode_path(int dev, cudaStream_t st, const DecodeParams& p, dim3 grid, int gmax) {
  const dim3 block(kThreads);
  switch (gmax) {
    case 1: (void)launch_pdl(dev, decode_kernel<T, 1, kFused>, grid, block, 0, st, 1, p); break;
    case 2: (void)launch_pdl(dev, decode_kernel<T, 2, kFused>, grid, block, 0, st, 1, p); break;
    case 4: (void)launch_pdl(dev, decode_kernel<T, 4, kFused>, grid, block, 0, st, 1, p); break;
    default: (void)launch_pdl(dev, decode_kernel<T, 8, kFused>, grid, block, 0, st, 1, p); break;
  }
}

// The legacy path's cluster merge: kernel of cluster size C (16: 256 threads, 8: 512).
template <typename T, int GMAX, int C>
auto legacy_cluster_kernel() {
  return decode_kernel<T, GMAX, false, 4096 / C, true>;
}

// Clusters of C blocks of the legacy cluster kernel resident at once (0: it cannot launch: no
// sm_90, or not this dtype / group chunk). Cached per (device, dtype, gmax, C).
template <typename T, int GMAX, int C>
int legacy_clusters_fit() {
  auto kernel = legacy_cluster_kernel<T, GMAX, C>();
  if (C > 8 && cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return max_active_clusters(kernel, C, dim3(4096 / C), 0);
}

int legacy_cluster_capacity(int dev, DType dtype, int gmax, int size) {
  if (dtype != DType::BF16 && dtype != DType::F16) return 0;
  if (gmax > 2 || (size != 8 && size != 16)) return 0;
  int major = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess || major < 9) return 0;
  static std::mutex mu;
  static std::map<std::tuple<int, int, int, int>, int> known;
  const auto key = std::make_tuple(dev, static_cast<int>(dtype), gmax, size);
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(key);
  if (it != known.end()) return it->second;
  int n = 0;
  const bool bf = dtype == DType::BF16;
  if (size == 16) {
    if (gmax == 1) n = bf ? legacy_clusters_fit<__nv_bfloat16, 1, 16>() : legacy_clusters_fit<__half, 1, 16>();
    else n = bf ? legacy_clusters_fit<__nv_bfloat16, 2, 16>() : legacy_clusters_fit<__half, 2, 16>();
  } else {
    if (gmax == 1) n = bf ? legacy_clusters_fit<__nv_bfloat16, 1, 8>() : legacy_clusters_fit<__half, 1, 8>();
    else n = bf ? legacy_clusters_fit<__nv_bfloat16, 2, 8>() : legacy_clusters_fit<__half, 2, 8>();
  }
  known.emplace(key, n);
  return n;
}

// Cluster size of the legacy path (0: fixed splits + the combine kernel), by
// GRAPHRT_DECODE_LEGACY_CLUSTER / set_decode_legacy_cluster (a size applies where its kernel runs:
// sm_90, bf16/f16, at most 2 query heads a block; elsewhere the combine kernel), else by batch:
// clusters of 16 where every (request, kv head, group chunk) has its cluster resident at once.
// The split count (and so a row's bits) then depends on the batch only through that residency
// test, as the legacy split count always did through the grid size.
int legacy_cluster(int dev, DType dtype, int gmax, int base) {
  int want = g_legacy_cluster_override.load(std::memory_order_relaxed);
  if (want < -1) want = knobs().legacy_cluster;
  if (want == 0) return 0;
  if (want > 0) return legacy_cluster_capacity(dev, dtype, gmax, want) > 0 ? want : 0;
  return legacy_cluster_capacity(dev, dtype, gmax, 16) >= base ? 16 : 0;
}

template <typename T, int GMAX>
void launch_legacy_cluster(int dev, cudaStream_t st, const DecodeParams& p, dim3 grid) {
  if (p.splits == 16) (void)launch_pdl(dev, legacy_cluster_kernel<T, GMAX, 16>(), grid, dim3(256), 0, st, 16, p);
  else (void)launch_pdl(dev, legacy_cluster_kernel<T, GMAX, 8>(), grid, dim3(512), 0, st, 8, p);
}

template <typename T>
void launch_decode(int dev, cudaStream_t st, const DecodeParams& p, dim3 grid, int gmax, bool legacy, bool cluster) {
  if constexpr (sizeof(T) == 2) {
    if (cluster) {
      if (gmax == 1) launch_legacy_cluster<T, 1>(dev, st, p, grid);
      else launch_legacy_cluster<T, 2>(dev, st, p, grid);
      return;
    }
  }
  if (!legacy) {
    launch_decode_path<T, true>(dev, st, p, grid, gmax);
    return;
  }
  launch_decode_path<T, false>(dev, st, p, grid, gmax);
  if (p.splits > 1) {
    GRT_CUDA_CHECK_LAUNCH("attention_decode B={} heads {} splits {}", grid.z, p.nq, p.splits);
    (void)launch_pdl(dev, combine_kernel<T>, dim3(grid.z * static_cast<unsigned>(p.nq)), dim3(kThreads), 0, st, 1,
                     static_cast<const float*>(p.part_o), static_cast<const float*>(p.part_lse), p.splits, p.hd,
                     static_cast<T*>(p.out));
  }
}

// The most query heads one block takes. Each token costs a block one shuffle reduction per head,
// so a block of many heads is issue-bound; with few (request, kv head) pairs there are SMs to spare
// for more, smaller blocks, which read the same K/V rows from L2. H100 (bench/results/
// h100_2026-11-23_session4, ablations4): qwen3-30b-a3b (8 heads per kv head) bs 1 4.85 -> 4.38 ms
// at 2 heads a block, bs 8 15.21 -> 13.80 at 4; with many pairs (bs 64) fewer heads a block was
// slower (llama 11.28 -> 11.74 ms at 2 instead of 4), so the cap applies only to small batches.
int heads_per_block(int batch, int nkv, int sms) {
  if (knobs().heads_per_block > 0) return knobs().heads_per_block;
  const int64_t pairs = static_cast<int64_t>(batch) * nkv;
  return pairs <= 16 ? 2 : pairs < sms ? 4 : 8;
}

// Splits per (request, kv head, group chunk): enough blocks to cover the GPU a few times over,
// at most one split per 32 positions of the table and at most 64. The fused path takes this as
// the most a request may use.
int decode_num_splits(int base_blocks, int sms, int64_t max_context, int blocks_per_sm) {
  int want = (sms * blocks_per_sm + base_blocks - 1) / base_blocks;
  int64_t by_ctx = std::max<int64_t>(1, (max_context + 31) / 32);
  return static_cast<int>(std::clamp<int64_t>(want, 1, std::min<int64_t>(by_ctx, kMaxSplits)));
}

}  // namespace

void attention_decode(Stream& stream, Device device, const ops::DecodeArgs& d) {
  const ops::PagedAttentionArgs& a = d.a;
  const int64_t es = static_cast<int64_t>(dtype_size(a.dtype));
  GRT_CHECK(a.dtype == DType::BF16 || a.dtype == DType::F16 || a.dtype == DType::F32,
            "attention_decode on CUDA: dtype {} not supported", dtype_name(a.dtype));
  GRT_CHECK(a.head_dim % 8 == 0 && a.head_dim <= 256, "attention_decode on CUDA: head_dim {} must be a multiple of 8, <= 256",
            a.head_dim);
  GRT_CHECK((a.q_row_stride * es) % 16 == 0 && reinterpret_cast<uintptr_t>(a.q) % 16 == 0 &&
                reinterpret_cast<uintptr_t>(a.k_cache) % 16 == 0 && reinterpret_cast<uintptr_t>(a.v_cache) % 16 == 0,
            "attention_decode on CUDA: q (row stride {}) and caches must be 16-byte aligned", a.q_row_stride);
  const int sms = sm_count(device);
  const int group = a.num_q_heads / a.num_kv_heads;
  const bool mma_ok = a.scale > 0.0f && decode_mma_supports(a.dtype, a.head_dim, group, d.batch, a.num_kv_heads, a.q,
                                                            a.q_row_stride, a.k_cache, a.v_cache, a.out);
  if (use_mma(mma_ok)) {
    launch_mma(stream, device, d, sms);  // (runs d.prepare, fused or before)
    return;
  }
  if (d.prepare != nullptr) prepare_qkv(device, *d.prepare);
  DecodeParams p{};
  set_common_params(p, d);
  p.group = group;
  const int gmax = std::min(p.group <= 1 ? 1 : p.group <= 2 ? 2 : p.group <= 4 ? 4 : 8,
                            heads_per_block(d.batch, p.nkv, sms));
  p.head_chunks = (p.group + gmax - 1) / gmax;
  int lanes = a.head_dim / 8, lpt_log2 = 0;
  while ((1 << lpt_log2) < lanes) ++lpt_log2;
  p.lpt_log2 = lpt_log2;
  p.scale_log2 = a.scale * kLog2e;
  const int base = d.batch * p.nkv * p.head_chunks;
  const bool legacy = use_legacy(base, sms);
  p.splits = decode_num_splits(base, sms, a.max_context, knobs().blocks_per_sm);
  p.min_chunk = knobs().min_chunk;
  // The legacy path at small batch: one cluster per (request, kv head, group chunk), its blocks
  // the splits, merged through DSMEM: no partials in scratch, no combine kernel.
  const int cluster = legacy && a.head_dim <= kMaxHeadDim ? legacy_cluster(device.index, a.dtype, gmax, base) : 0;
  if (cluster > 0) p.splits = cluster;
  // The fused path's counters cover (request, head block) pairs up to kCounters; past that the
  // grid has ~500 blocks per SM anyway and one split is what it would choose.
  if (!legacy && static_cast<int64_t>(base) > kCounters) p.splits = 1;
  GRT_CHECK(d.batch <= 65535, "attention_decode on CUDA: batch {} exceeds the grid limit", d.batch);
  Tensor part_o, part_lse;
  if (p.splits > 1 && cluster == 0) {
    part_o = empty(Shape{d.batch, p.nq, p.splits, p.hd}, DType::F32, device);
    part_lse = empty(Shape{d.batch, p.nq, p.splits}, DType::F32, device);
    p.part_o = part_o.data_as<float>();
    p.part_lse = part_lse.data_as<float>();
  }
  dim3 grid(static_cast<unsigned>(p.splits), static_cast<unsigned>(p.nkv * p.head_chunks),
            static_cast<unsigned>(d.batch));
  cudaStream_t st = native_stream(stream);
  if (a.dtype == DType::BF16) launch_decode<__nv_bfloat16>(device.index, st, p, grid, gmax, legacy, cluster > 0);
  else if (a.dtype == DType::F16) launch_decode<__half>(device.index, st, p, grid, gmax, legacy, cluster > 0);
  else launch_decode<float>(device.index, st, p, grid, gmax, legacy, false);
  GRT_CUDA_CHECK_LAUNCH("attention_decode B={} heads {}/{} head_dim {} splits {} ({})", d.batch, p.nq, p.nkv, p.hd,
                        p.splits, cluster > 0 ? "legacy, cluster merge" : legacy ? "legacy" : "fused");
}

void set_decode_attention_path(DecodeAttentionPath path) {
  g_path_override.store(static_cast<int>(path), std::memory_order_relaxed);
}

DecodeAttentionPath decode_attention_path() { return chosen_path(); }

void set_decode_mma_cluster(int mode) {
  GRT_CHECK(mode >= -2 && mode != 1 && mode <= kDecodeMmaMaxCluster,
            "set_decode_mma_cluster({}): -2 (environment), -1 (by batch), 0 (global merge) or 2..{}", mode,
            kDecodeMmaMaxCluster);
  g_cluster_override.store(mode, std::memory_order_relaxed);
}

void set_decode_legacy_cluster(int mode) {
  GRT_CHECK(mode == -2 || mode == -1 || mode == 0 || mode == 8 || mode == 16,
            "set_decode_legacy_cluster({}): -2 (environment), -1 (by batch), 0 (combine kernel), 8 or 16", mode);
  g_legacy_cluster_override.store(mode, std::memory_order_relaxed);
}

int decode_legacy_cluster() {
  const int o = g_legacy_cluster_override.load(std::memory_order_relaxed);
  return o < -1 ? knobs().legacy_cluster : o;
}

int decode_legacy_cluster_fits(int dev, DType dtype, int heads_per_block, int size) {
  return legacy_cluster_capacity(dev, dtype, heads_per_block, size);
}

int decode_mma_cluster() {
  const int o = g_cluster_override.load(std::memory_order_relaxed);
  return o < -1 ? knobs().mma_cluster : o;
}

void set_decode_mma_carry(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 1, "set_decode_mma_carry({}): -1 (environment), 0 (off) or 1 (on)", mode);
  g_carry_override.store(mode, std::memory_order_relaxed);
}

bool decode_mma_carry() {
  const int o = g_carry_override.load(std::memory_order_relaxed);
  return (o < 0 ? knobs().mma_carry : o) != 0;
}

void set_decode_mma_wide(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 1, "set_decode_mma_wide({}): -1 (environment), 0 (off) or 1 (on)", mode);
  g_wide_override.store(mode, std::memory_order_relaxed);
}

bool decode_mma_wide() {
  const int o = g_wide_override.load(std::memory_order_relaxed);
  return (o < 0 ? knobs().mma_wide : o) != 0;
}

void set_decode_mma_kv_group(int mode) {
  GRT_CHECK(mode == -1 || mode == 0 || mode == 1 || mode == 2 || mode == 4,
            "set_decode_mma_kv_group({}): -1 (environment), 0 (auto), 1, 2 or 4", mode);
  g_kv_group_override.store(mode, std::memory_order_relaxed);
}

int decode_mma_kv_group() {
  const int o = g_kv_group_override.load(std::memory_order_relaxed);
  return o < 0 ? knobs().mma_kv_group : o;
}

void set_decode_mma_swap(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 2, "set_decode_mma_swap({}): -1 (environment), 0 (off), 1 (on) or 2 (auto)", mode);
  g_swap_override.store(mode, std::memory_order_relaxed);
}

int decode_mma_swap() {
  const int o = g_swap_override.load(std::memory_order_relaxed);
  return o < 0 ? knobs().mma_swap : o;
}

void set_decode_mma_warp_pipe(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 1, "set_decode_mma_warp_pipe({}): -1 (environment), 0 (off) or 1 (on)", mode);
  g_warp_pipe_override.store(mode, std::memory_order_relaxed);
}

bool decode_mma_warp_pipe() {
  const int o = g_warp_pipe_override.load(std::memory_order_relaxed);
  return (o < 0 ? knobs().mma_warp_pipe : o) != 0;
}

void set_decode_mma_early_trigger(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 1, "set_decode_mma_early_trigger({}): -1 (environment), 0 (off) or 1 (on)", mode);
  g_early_trigger_override.store(mode, std::memory_order_relaxed);
}

bool decode_mma_early_trigger() {
  const int o = g_early_trigger_override.load(std::memory_order_relaxed);
  return (o < 0 ? knobs().mma_early_trigger : o) != 0;
}

void set_decode_mma_idle_exit(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 1, "set_decode_mma_idle_exit({}): -1 (environment), 0 (off) or 1 (on)", mode);
  g_idle_exit_override.store(mode, std::memory_order_relaxed);
}

bool decode_mma_idle_exit() {
  const int o = g_idle_exit_override.load(std::memory_order_relaxed);
  return (o < 0 ? knobs().mma_idle_exit : o) != 0;
}

void set_decode_mma_kv_evict_first(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 1, "set_decode_mma_kv_evict_first({}): -1 (environment), 0 (off) or 1 (on)", mode);
  g_kv_evict_first_override.store(mode, std::memory_order_relaxed);
}

bool decode_mma_kv_evict_first() {
  const int o = g_kv_evict_first_override.load(std::memory_order_relaxed);
  return (o < 0 ? knobs().mma_kv_evict_first : o) != 0;
}

void set_decode_mma_preload(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 2, "set_decode_mma_preload({}): -1 (environment), 0 (off), 1 (on) or 2 (auto)",
            mode);
  g_preload_override.store(mode, std::memory_order_relaxed);
}

int decode_mma_preload() {
  const int o = g_preload_override.load(std::memory_order_relaxed);
  return o < 0 ? knobs().mma_preload : o;
}

void set_decode_fuse_prepare(int mode) {
  GRT_CHECK(mode >= -1 && mode <= 1, "set_decode_fuse_prepare({}): -1 (environment), 0 (off) or 1 (on)", mode);
  g_fuse_prepare_override.store(mode, std::memory_order_relaxed);
}

bool decode_fuse_prepare() {
  const int o = g_fuse_prepare_override.load(std::memory_order_relaxed);
  return (o < 0 ? knobs().fuse_prepare : o) != 0;
}

}  // namespace grt::cuda
