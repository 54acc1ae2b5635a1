// Seeded sampling on CUDA: one block per row, no full sort (argmax: two passes over many blocks,
// below). A "cut-off" is the first token, in (probability desc, index asc) order, where a
// running count or fixed-point mass exceeds a target; it is found exactly by a 4-pass radix
// select over the probability bits (256-bin integer histograms, warp-aggregated shared atomics:
// deterministic), then a block scan that picks among equal probabilities by index. Fast path: the
// first 4096 tokens in order are sorted in shared memory (bitonic) and top-k, top-p and the draw
// resolved there; only when a cut-off lies past them (very flat rows) do the selects run over the
// whole vocabulary. All kernels follow the logits GEMV: PDL contract of ops/cuda/pdl.cuh (wait
// first).
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/env_switch.h"
#include "device/cuda/cuda_check.h"
#include "device/cuda/cuda_stream.h"
#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "ops/cuda/attention_cuda.h"
#include "ops/cuda/pdl.cuh"
#include "ops/sampling_rule.h"

namespace grt::cuda {
namespace {

namespace rule = ops::sampling_rule;
constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;

// (value, index) pairs: NaN is largest, ties → lower index (torch.argmax).
__device__ bool beats(float a, int ia, float b, int ib) {
  bool na = isnan(a), nb = isnan(b);
  if (na != nb) return na;
  if (!na && a != b) return a > b;
  return ia < ib;
}

struct ArgMax {
  float v;
  int i;
};

__device__ ArgMax block_argmax(const float* x, int n, ArgMax* sh) {
  ArgMax m{x[0], 0};
  for (int i = threadIdx.x; i < n; i += kThreads)
    if (beats(x[i], i, m.v, m.i)) m = {x[i], i};
  for (int o = 16; o > 0; o >>= 1) {
    float v = __shfl_xor_sync(0xffffffffu, m.v, o);
    int i = __shfl_xor_sync(0xffffffffu, m.i, o);
    if (beats(v, i, m.v, m.i)) m = {v, i};
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sh[warp] = m;
  __syncthreads();
  if (warp == 0) {
    m = sh[lane];  // kWarps == 32
    for (int o = 16; o > 0; o >>= 1) {
      float v = __shfl_xor_sync(0xffffffffu, m.v, o);
      int i = __shfl_xor_sync(0xffffffffu, m.i, o);
      if (beats(v, i, m.v, m.i)) m = {v, i};
    }
    if (lane == 0) sh[0] = m;
  }
  __syncthreads();
  ArgMax r = sh[0];
  __syncthreads();
  return r;
}

__device__ uint64_t block_sum(uint64_t v, uint64_t* sh) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sh[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = sh[lane];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) sh[0] = v;
  }
  __syncthreads();
  uint64_t r = sh[0];
  __syncthreads();
  return r;
}

// Exclusive prefix sum over the block's threads (in thread order).
template <typename V>
__device__ V block_exclusive_scan(V v, V* sh) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  V inc = v;
  for (int o = 1; o < 32; o <<= 1) {
    V t = __shfl_up_sync(0xffffffffu, inc, o);
    if (lane >= o) inc += t;
  }
  if (lane == 31) sh[warp] = inc;
  __syncthreads();
  if (warp == 0) {
    V w = sh[lane];
    V winc = w;
    for (int o = 1; o < 32; o <<= 1) {
      V t = __shfl_up_sync(0xffffffffu, winc, o);
      if (lane >= o) winc += t;
    }
    sh[lane] = winc - w;
  }
  __syncthreads();
  V r = sh[warp] + inc - v;
  __syncthreads();
  return r;
}

// Sums N values over the block at once (one barrier round instead of N).
template <int N>
__device__ void block_sum_n(uint64_t (&v)[N], uint64_t (*sh)[kWarps]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    for (int o = 16; o > 0; o >>= 1) v[j] += __shfl_xor_sync(0xffffffffu, v[j], o);
    if (lane == 0) sh[j][warp] = v[j];
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < N; ++j) {
    uint64_t t = 0;
    for (int w = 0; w < kWarps; ++w) t += sh[j][w];
    v[j] = t;
  }
  __syncthreads();
}

// Token i (probability bits `bits`) is kept by cut-off (v, idx) when it comes no later in order.
struct Cut {
  uint32_t v;
  int idx;
  uint64_t mass;  // count or mass up to and including the cut-off token
};
__device__ bool kept(uint32_t bits, int i, const Cut& c) { return bits > c.v || (bits == c.v && i <= c.idx); }

struct SelectShared {
  // Bin masses as four 11-bit digit sums (32-bit shared atomics are native; 64-bit ones are
  // CAS loops that collapse under contention). Exact for vocabularies below 2^21.
  unsigned int hist[4][256];
  uint64_t above;
  uint32_t prefix;
  int found;
  int scan[kWarps];
};

__device__ uint64_t bin_mass(const SelectShared& sh, int b) {
  uint64_t m = 0;
#pragma unroll
  for (int d = 0; d < 4; ++d) m += static_cast<uint64_t>(sh.hist[d][b]) << (11 * d);
  return m;
}

// The first token (in order) among those kept by `keep` whose running weight exceeds `target`.
__device__ Cut select(const float* p, int n, const Cut& keep, bool weighted, uint64_t target, SelectShared& sh) {
  uint32_t prefix = 0;
  uint64_t above = 0;
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 24 - 8 * pass;
    const uint32_t hi_mask = pass == 0 ? 0u : (0xffffffffu << (shift + 8));
    for (int b = threadIdx.x; b < 4 * 256; b += kThreads) sh.hist[b / 256][b % 256] = 0;
    __syncthreads();
    // Lanes of a warp mostly fall into the same bin: one lane per distinct bin adds the warp's
    // total (match + redux), so shared atomics do not serialise 32 ways. The loop bound is
    // uniform over the block so all lanes take part in the warp collectives.
    for (int base = 0; base < n; base += kThreads) {
      const int i = base + static_cast<int>(threadIdx.x);
      const float pi = i < n ? p[i] : 0.0f;
      const uint32_t bits = rule::order_bits(pi);
      const bool in = i < n && (bits & hi_mask) == prefix && kept(bits, i, keep);
      const unsigned bin = in ? (bits >> shift) & 255u : 256u;
      const unsigned peers = __match_any_sync(0xffffffffu, bin);
      const bool leader = (threadIdx.x % 32) == static_cast<unsigned>(__ffs(peers) - 1);
      if (!weighted) {
        if (in && leader) atomicAdd(&sh.hist[0][bin], static_cast<unsigned>(__popc(peers)));
      } else {
        const uint64_t w = in ? rule::weight(pi) : 0;
        // Two 11-bit digits per word: a warp's digit sums stay below 2^16.
        const unsigned lo = __reduce_add_sync(peers, static_cast<unsigned>(w & 0x7ffu) |
                                                         (static_cast<unsigned>((w >> 11) & 0x7ffu) << 16));
        const unsigned hi = __reduce_add_sync(peers, static_cast<unsigned>((w >> 22) & 0x7ffu) |
                                                         (static_cast<unsigned>((w >> 33) & 0x7ffu) << 16));
        if (in && leader) {
          if (lo & 0xffffu) atomicAdd(&sh.hist[0][bin], lo & 0xffffu);
          if (lo >> 16) atomicAdd(&sh.hist[1][bin], lo >> 16);
          if (hi & 0xffffu) atomicAdd(&sh.hist[2][bin], hi & 0xffffu);
          if (hi >> 16) atomicAdd(&sh.hist[3][bin], hi >> 16);
        }
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      uint64_t acc = above;
      int b = 255;
      for (; b > 0; --b) {
        const uint64_t h = bin_mass(sh, b);
        if (acc + h > target) break;
        acc += h;
      }
      sh.above = acc;
      sh.prefix = prefix | (static_cast<uint32_t>(b) << shift);
    }
    __syncthreads();
    above = sh.above;
    prefix = sh.prefix;
    __syncthreads();
  }
  // Among kept tokens of probability bits == prefix, the r-th by index.
  float pv;
  memcpy(&pv, &prefix, sizeof(pv));
  const uint64_t wv = weighted ? rule::weight(pv) : 1ull;
  const uint64_t r = wv ? (target - above) / wv : 0;
  const int chunk = (n + kThreads - 1) / kThreads;
  const int lo = min(n, static_cast<int>(threadIdx.x) * chunk), hi = min(n, lo + chunk);
  int cnt = 0;
  for (int i = lo; i < hi; ++i) {
    uint32_t bits = rule::order_bits(p[i]);
    cnt += (bits == prefix && kept(bits, i, keep)) ? 1 : 0;
  }
  if (threadIdx.x == 0) sh.found = -1;
  const int before = block_exclusive_scan(cnt, sh.scan);
  if (static_cast<uint64_t>(before) <= r && r < static_cast<uint64_t>(before + cnt)) {
    int want = static_cast<int>(r) - before;
    for (int i = lo; i < hi; ++i) {
      uint32_t bits = rule::order_bits(p[i]);
      if (bits == prefix && kept(bits, i, keep) && want-- == 0) {
        sh.found = i;
        break;
      }
    }
  }
  __syncthreads();
  Cut c{prefix, sh.found, above + (r + 1) * wv};
  __syncthreads();
  if (c.idx < 0) c = keep;  // unreachable when target < kept mass; stay safe
  return c;
}

// ---- fast path: sort only the candidates ---------------------------------------------------
// Tokens with p >= some boundary form a prefix of the (p desc, index asc) order. Counting tokens
// above 16 levels (p >= 4^-j) and then 15 thresholds inside the level where the count passes
// kCap (register counters and block sums: no atomics) gives a boundary with at most kCap tokens
// above it; those are sorted in shared memory and top-k, top-p and the draw resolved there. When
// a cut-off falls past them (very flat rows), the caller takes the exact radix path instead.
constexpr int kCap = 4096;
constexpr int kLevels = 16;

__device__ uint32_t level_bits(int j) { return static_cast<uint32_t>(127 - 2 * j) << 23; }

struct FastShared {
  unsigned long long key[kCap];  // (probability bits << 32) | (~index): descending = our order
  uint64_t sums[kLevels + 1][kWarps];
  uint64_t scan[kWarps];
  uint64_t value;
  int count;
  int pos;
};

__device__ uint64_t key_weight(unsigned long long key) {
  const uint32_t bits = static_cast<uint32_t>(key >> 32);
  float pv;
  memcpy(&pv, &bits, sizeof(pv));
  return rule::weight(pv);
}
__device__ int key_index(unsigned long long key) { return static_cast<int>(0xffffffffu - static_cast<uint32_t>(key)); }

// 16 counters of 16 bits in 8 registers: per-thread histograms without local memory or atomics
// (a thread sees at most ceil(vocab / kThreads) < 2^16 tokens per pass).
struct Counters16 {
  uint32_t w[8];
  __device__ void clear() {
#pragma unroll
    for (int k = 0; k < 8; ++k) w[k] = 0;
  }
  __device__ void bump(unsigned b) {  // b < 16
#pragma unroll
    for (int k = 0; k < 8; ++k) w[k] += (b >> 1) == static_cast<unsigned>(k) ? (1u << ((b & 1u) * 16)) : 0u;
  }
  // Block totals of the 16 counters plus one extra value.
  __device__ void block_totals(uint64_t (&out)[kLevels + 1], uint64_t extra, FastShared& fs) const {
#pragma unroll
    for (int k = 0; k < 8; ++k) out[2 * k] = w[k] & 0xffffu, out[2 * k + 1] = w[k] >> 16;
    out[kLevels] = extra;
    block_sum_n<kLevels + 1>(out, fs.sums);
  }
};

// Level bucket of p (p >= 4^-b and not p >= 4^-(b-1)), or >= 16 when p < 4^-15.
__device__ unsigned level_of(uint32_t bits) { return (128u - (bits >> 23)) >> 1; }

// Token drawn, or -1 when the candidates do not contain every cut-off. `levels` are block
// totals of level_of over the row, `total` its mass.
__device__ int sample_fast(const float* p, int n, const uint64_t (&levels)[kLevels + 1], int top_k, float top_p,
                           uint64_t seed, uint64_t step, FastShared& fs) {
  const uint64_t total = levels[kLevels];
  uint32_t boundary = 0;
  if (n > kCap) {
    uint64_t above = 0;  // tokens at or above the chosen level
    int level = -1;
#pragma unroll
    for (int j = 0; j < kLevels; ++j) {
      const uint64_t upto = above + levels[j];
      if (level == j - 1 && upto <= static_cast<uint64_t>(kCap)) level = j, above = upto;
    }
    if (level < 0) return -1;  // more than kCap tokens tie at the top
    boundary = level_bits(level);
    if (level + 1 < kLevels) {
      // 16 buckets of 2^20 bit patterns between the next level and this one.
      const uint32_t lo_bits = level_bits(level + 1);
      Counters16 h;
      h.clear();
      for (int i = threadIdx.x; i < n; i += kThreads) {
        const uint32_t bits = rule::order_bits(p[i]);
        if (bits >= lo_bits && bits < boundary) h.bump((bits - lo_bits) >> 20);
      }
      uint64_t r[kLevels + 1];
      h.block_totals(r, 0, fs);
      uint64_t count = above;
      bool done = false;
#pragma unroll
      for (int q = kLevels - 1; q >= 1; --q) {
        count += r[q];
        if (!done && count <= static_cast<uint64_t>(kCap)) boundary = lo_bits + (static_cast<uint32_t>(q) << 20);
        else done = true;
      }
    }
  }
  // Gather the candidates (warp-aggregated slots; their order is fixed by the sort).
  if (threadIdx.x == 0) fs.count = 0;
  __syncthreads();
  const unsigned lane = threadIdx.x % 32;
  for (int base = 0; base < n; base += kThreads) {
    const int i = base + static_cast<int>(threadIdx.x);
    const uint32_t bits = i < n ? rule::order_bits(p[i]) : 0u;
    const bool take = i < n && bits >= boundary;
    const unsigned ballot = __ballot_sync(0xffffffffu, take);
    int first = 0;
    if (lane == 0 && ballot) first = atomicAdd(&fs.count, __popc(ballot));
    first = __shfl_sync(0xffffffffu, first, 0);
    if (take)
      fs.key[first + __popc(ballot & ((1u << lane) - 1u))] =
          (static_cast<unsigned long long>(bits) << 32) | (0xffffffffu - static_cast<uint32_t>(i));
  }
  __syncthreads();
  const int cn = fs.count;
  int n2 = 1;
  while (n2 < cn) n2 <<= 1;
  for (int i = cn + threadIdx.x; i < n2; i += kThreads) fs.key[i] = 0ull;
  __syncthreads();
  // Bitonic sort, descending.
  for (int k = 2; k <= n2; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int t = threadIdx.x; t < n2 / 2; t += kThreads) {
        const int i = 2 * t - (t & (j - 1)), ixj = i + j;  // the t-th pair (i, i ^ j) with i < i ^ j
        const unsigned long long a = fs.key[i], b = fs.key[ixj];
        if (((i & k) == 0) ? (a < b) : (a > b)) fs.key[i] = b, fs.key[ixj] = a;
      }
      __syncthreads();
    }
  // Running masses: thread t owns positions [lo, hi) and knows the mass before lo.
  const int chunk = (n2 + kThreads - 1) / kThreads;
  const int lo = min(n2, static_cast<int>(threadIdx.x) * chunk), hi = min(n2, lo + chunk);
  uint64_t mine = 0;
  for (int q = lo; q < hi; ++q) mine += key_weight(fs.key[q]);
  const uint64_t before = block_exclusive_scan(mine, fs.scan);
  // First position below `limit` whose running mass exceeds `target`; -1 if none.
  auto find = [&](int limit, uint64_t target, uint64_t* mass_through) {
    if (threadIdx.x == 0) fs.pos = INT_MAX;
    __syncthreads();
    uint64_t acc = before;
    for (int q = lo; q < min(hi, limit); ++q) {
      acc += key_weight(fs.key[q]);
      if (acc > target) {
        atomicMin(&fs.pos, q);
        break;
      }
    }
    __syncthreads();
    const int pos = fs.pos;
    // The owner of `pos` publishes the mass through it.
    if (pos != INT_MAX && pos >= lo && pos < hi) {
      uint64_t v = before;
      for (int q = lo; q <= pos; ++q) v += key_weight(fs.key[q]);
      fs.value = v;
    }
    __syncthreads();
    *mass_through = fs.value;
    __syncthreads();
    return pos == INT_MAX ? -1 : pos;
  };
  int limit = cn;
  uint64_t mass = total;
  if (top_k > 0 && top_k < n) {
    if (top_k > cn) return -1;  // the top-k cut-off lies past the candidates
    limit = top_k;
    uint64_t part = 0;
    for (int q = lo; q < min(hi, top_k); ++q) part += key_weight(fs.key[q]);
    uint64_t one[1] = {part};
    block_sum_n<1>(one, fs.sums);
    mass = one[0];
  }
  if (top_p < 1.0f) {
    uint64_t through = 0;
    const int pos = find(limit, rule::top_p_target(top_p, mass), &through);
    if (pos < 0) return -1;
    limit = pos + 1;
    mass = through;
  }
  uint64_t through = 0;
  const int pos = find(limit, rule::draw_target(seed, step, mass), &through);
  if (pos < 0) return -1;
  return key_index(fs.key[pos]);
}

// The one-block argmax, kept for A/B runs (GRAPHRT_ARGMAX_ONE_BLOCK=1).
__global__ void __launch_bounds__(kThreads) argmax_kernel(const float* __restrict__ logits, int n,
                                                          int32_t* __restrict__ out) {
  __shared__ ArgMax sh[kWarps];
  pdl_wait();
  pdl_trigger();
  ArgMax m = block_argmax(logits + static_cast<int64_t>(blockIdx.x) * n, n, sh);
  if (threadIdx.x == 0) out[blockIdx.x] = m.i;
}

bool argmax_one_block() {
  static const bool on = [] {
    return env_choice("GRAPHRT_ARGMAX_ONE_BLOCK", {"0", "1"}, 0) == 1;
  }();
  return on;
}

// Greedy argmax in two passes, so that a row of 152K logits is read by many SMs instead of one
// (one 1024-thread block took 21 us on an H100 for qwen's vocabulary). Pass 1: block (s, row)
// takes chunk s of the row, kArgChunk elements (16 per thread, 16-byte loads when the row
// allows), and writes its (value, index) winner. Pass 2: a warp per row picks among the chunks'
// winners. beats() is a total order on (value, index), so the winner does not depend on the
// order of the comparisons: the result is torch.argmax's, NaN and ties included.
constexpr int kArgThreads = 256;
constexpr int kArgPer = 16;
constexpr int kArgChunk = kArgThreads * kArgPer;

__device__ __forceinline__ void warp_argmax(ArgMax& m) {
  for (int o = 16; o > 0; o >>= 1) {
    const float v = __shfl_xor_sync(0xffffffffu, m.v, o);
    const int i = __shfl_xor_sync(0xffffffffu, m.i, o);
    if (beats(v, i, m.v, m.i)) m = {v, i};
  }
}

__global__ void __launch_bounds__(kArgThreads) argmax_chunks_kernel(const float* __restrict__ logits, int n, bool vec,
                                                                    ArgMax* __restrict__ parts) {
  __shared__ ArgMax sh[kArgThreads / 32];
  pdl_wait();
  pdl_trigger();
  const int row = blockIdx.y, chunk = blockIdx.x;
  const float* x = logits + static_cast<int64_t>(row) * n;
  const int begin = chunk * kArgChunk;
  ArgMax m{x[begin], begin};
  if (vec) {
    // Every thread's four 16-byte loads are in flight together.
    float4 v[kArgPer / 4];
#pragma unroll
    for (int j = 0; j < kArgPer / 4; ++j) {
      const int i = begin + (j * kArgThreads + static_cast<int>(threadIdx.x)) * 4;
      v[j] = i < n ? *reinterpret_cast<const float4*>(x + i) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int j = 0; j < kArgPer / 4; ++j) {
      const int i = begin + (j * kArgThreads + static_cast<int>(threadIdx.x)) * 4;
      if (i >= n) continue;  // n % 4 == 0: a chunk of 4 is all in or all out
      if (beats(v[j].x, i, m.v, m.i)) m = {v[j].x, i};
      if (beats(v[j].y, i + 1, m.v, m.i)) m = {v[j].y, i + 1};
      if (beats(v[j].z, i + 2, m.v, m.i)) m = {v[j].z, i + 2};
      if (beats(v[j].w, i + 3, m.v, m.i)) m = {v[j].w, i + 3};
    }
  } else {
    const int end = min(n, begin + kArgChunk);
    for (int i = begin + static_cast<int>(threadIdx.x); i < end; i += kArgThreads)
      if (beats(x[i], i, m.v, m.i)) m = {x[i], i};
  }
  warp_argmax(m);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) sh[warp] = m;
  __syncthreads();
  if (warp == 0) {
    m = lane < kArgThreads / 32 ? sh[lane] : sh[0];
    warp_argmax(m);
    if (lane == 0) parts[static_cast<int64_t>(row) * gridDim.x + chunk] = m;
  }
}

__global__ void __launch_bounds__(32) argmax_rows_kernel(const ArgMax* __restrict__ parts, int chunks,
                                                         int32_t* __restrict__ out) {
  pdl_wait();
  pdl_trigger();
  const ArgMax* p = parts + static_cast<int64_t>(blockIdx.x) * chunks;
  ArgMax m = p[0];
  for (int c = static_cast<int>(threadIdx.x); c < chunks; c += 32)
    if (beats(p[c].v, p[c].i, m.v, m.i)) m = p[c];
  warp_argmax(m);
  if (threadIdx.x == 0) out[blockIdx.x] = m.i;
}

__global__ void __launch_bounds__(kThreads) sample_kernel(ops::SampleArgs a, float* __restrict__ scratch) {
  __shared__ ArgMax sh_max[kWarps];
  __shared__ uint64_t sh_sum[kWarps];
  __shared__ SelectShared sh;
  __shared__ FastShared fs;
  pdl_wait();
  pdl_trigger();
  const int64_t row = blockIdx.x;
  const int n = static_cast<int>(a.vocab);
  const float* x = a.logits + row * n;
  const ArgMax m = block_argmax(x, n, sh_max);
  const float temperature = a.temperature[row];
  if (!(temperature > 0.0f) || !isfinite(m.v)) {
    if (threadIdx.x == 0) a.out[row] = m.i;
    return;
  }
  const float inv_t = 1.0f / temperature;
  float* p = scratch + row * n;
  Counters16 h;
  h.clear();
  uint64_t mass_sum = 0;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    float e = expf((x[i] - m.v) * inv_t);
    e = e >= 0.0f ? e : 0.0f;  // NaN logits never win
    p[i] = e;
    const uint32_t bits = rule::order_bits(e);
    mass_sum += rule::weight(e);
    if (level_of(bits) < kLevels) h.bump(level_of(bits));
  }
  uint64_t levels[kLevels + 1];
  h.block_totals(levels, mass_sum, fs);  // its barriers also publish p
  const int top_k = a.top_k[row];
  const float top_p = a.top_p[row];
  const int fast = sample_fast(p, n, levels, top_k, top_p, static_cast<uint64_t>(a.seed[row]),
                               static_cast<uint64_t>(a.step[row]), fs);
  if (fast >= 0) {
    if (threadIdx.x == 0) a.out[row] = fast;
    return;
  }
  Cut cut{0u, n - 1, 0};
  if (top_k > 0 && top_k < n) cut = select(p, n, cut, false, static_cast<uint64_t>(top_k - 1), sh);
  uint64_t mass = 0;
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const float pi = p[i];
    if (kept(rule::order_bits(pi), i, cut)) mass += rule::weight(pi);
  }
  mass = block_sum(mass, sh_sum);
  if (top_p < 1.0f) {
    cut = select(p, n, cut, true, rule::top_p_target(top_p, mass), sh);
    mass = cut.mass;
  }
  const uint64_t target =
      rule::draw_target(static_cast<uint64_t>(a.seed[row]), static_cast<uint64_t>(a.step[row]), mass);
  cut = select(p, n, cut, true, target, sh);
  if (threadIdx.x == 0) a.out[row] = cut.idx;
}

}  // namespace

void argmax(Stream& stream, const ops::SampleArgs& a) {
  GRT_CHECK(a.batch < 65536, "argmax: {} rows exceed the grid limit (65535)", a.batch);
  GRT_CHECK(a.vocab > 0 && a.vocab < (int64_t{1} << 31) - kArgChunk, "argmax: a vocabulary of {} is not supported",
            a.vocab);
  const int n = static_cast<int>(a.vocab);
  if (argmax_one_block()) {
    (void)launch_pdl(stream.device().index, argmax_kernel, dim3(static_cast<unsigned>(a.batch)), dim3(kThreads), 0,
                     native_stream(stream), 1, a.logits, n, a.out);
    GRT_CUDA_CHECK_LAUNCH("argmax (one block) rows={} vocab={}", a.batch, a.vocab);
    return;
  }
  const int chunks = (n + kArgChunk - 1) / kArgChunk;
  const bool vec = n % 4 == 0 && reinterpret_cast<uintptr_t>(a.logits) % 16 == 0;
  // ArgMax pairs of 8 bytes, as 2 f32 each; freed stream-ordered after pass 2.
  Tensor parts = empty(Shape{a.batch * chunks * 2}, DType::F32, stream.device());
  auto* p = reinterpret_cast<ArgMax*>(parts.data());
  const int index = stream.device().index;
  cudaStream_t s = native_stream(stream);
  (void)launch_pdl(index, argmax_chunks_kernel, dim3(static_cast<unsigned>(chunks), static_cast<unsigned>(a.batch)),
                   dim3(kArgThreads), 0, s, 1, a.logits, n, vec, p);
  GRT_CUDA_CHECK_LAUNCH("argmax (chunks) rows={} vocab={}", a.batch, a.vocab);
  (void)launch_pdl(index, argmax_rows_kernel, dim3(static_cast<unsigned>(a.batch)), dim3(32), 0, s, 1,
                   static_cast<const ArgMax*>(p), chunks, a.out);
  GRT_CUDA_CHECK_LAUNCH("argmax (rows) rows={} vocab={}", a.batch, a.vocab);
}

void sample(Stream& stream, Device device, const ops::SampleArgs& a) {
  GRT_CHECK(a.batch < (int64_t{1} << 31), "sample: {} rows exceed the grid limit", a.batch);
  Tensor scratch = empty(Shape{a.batch, a.vocab}, DType::F32, device);
  (void)launch_pdl(device.index, sample_kernel, dim3(static_cast<unsigned>(a.batch)), dim3(kThreads), 0,
                   native_stream(stream), 1, a, scratch.data_as<float>());
  GRT_CUDA_CHECK_LAUNCH("sample rows={} vocab={}", a.batch, a.vocab);
}

}  // namespace grt::cuda
