// prepare_qkv_ on CUDA: per token, RMSNorm of each q/k head (when weights are given), RoPE of q
// and k, q written in place, k and v stored into their cache slots. Kernels with the same result
// bits (GRAPHRT_PREPARE_QKV below picks; `early` and `tile`, further down, are lanes variants):
//  - lanes (default where it applies: head_dim / chunk in {4, 8, 16, 32}, every row 16-byte
//    aligned): a head is a group of L = head_dim / chunk lanes, each holding one 16-byte chunk in
//    registers; a warp takes 32 / L heads (q, k and v heads of all tokens in one flat index, so a
//    4096-token prefill fills the GPU in one pass). A lane issues all its loads at once (its chunk,
//    the norm weight's chunk, the cos/sin it needs), the norm's sum is a butterfly over the L lanes,
//    and RoPE's partner element (j + head_dim/2) comes from lane + L/2 by one shuffle; stores are
//    16 bytes. (The heads kernel below chained three dependent memory trips per head through shared
//    memory: 65 us a layer for 4096 tokens of qwen3-0.6b on the H100, ~1 TB/s.) The default is
//    its cut form (prepare_qkv_cut_kernel: the same arithmetic in fewer instructions, see there).
//  - heads (any shape; GRAPHRT_PREPARE_QKV=heads forces it): a grid of (token, head block). Each
//    block copies its share of the token's V row into the cache slot, and each of its warps takes
//    one head (q heads, then k heads): it stages the head as floats in shared memory, applies the
//    RMSNorm when a weight is given, then rotates the (j, j + head_dim/2) pairs and writes q in
//    place or k into its cache row. (GRAPHRT_PREPARE_QKV=token: one block per token, the kernel
//    before session 4.) The heads are independent, so the split changes no result bit.
//
// Bit-for-bit agreement with rms_norm_ + apply_rope_ + store_kv on CUDA:
//  - the norm's sum of squares repeats rms_norm_kernel (norm.cu) launched on one head row: that
//    kernel runs row_threads(chunks) threads, each summing (FMA) the one 16-byte chunk it loads,
//    then block_sum (a butterfly per warp, then a butterfly over the warp sums). Here lane l of
//    the warp plays those threads l, l + 32, ... in turn with the same chunks, butterflies and
//    final sum, so the float32 total, inv and y = w * round(x * inv) are the same bits (the lanes
//    kernel's butterfly over L lanes is that butterfly without the steps that add zeros);
//  - the normed head is rounded to the dtype (where rms_norm_ stores it), then rotated with
//    dense::rope_rotate, the very function apply_rope_'s kernel uses;
//  - K and V reach the caches as the dtype's bits (store_kv copies bytes).
// Parts (PrepareQkvArgs::parts, session 24): the lanes kernels' units cover only the heads of the
// part ([first_head, first_head + per_token) of [q, k, v]), the heads kernel skips the others; the
// tile kernel takes only the whole. Each head's arithmetic is unchanged, so parts compose to the
// whole bit for bit. The model's extends run k and v here and q in the attention's kernel.
// On the decode path: PDL contract of ops/cuda/pdl.cuh (wait, then let attention launch).
// Trigger first (GRAPHRT_PDL_TRIGGER_FIRST=prepare, the default, or all; pdl.cuh point 3; measured
// figures in ops/cuda/pdl.h): every kernel here lets
// its dependent launch at entry, before its wait, so the decode attention's blocks land while the
// qkv GEMV still runs (not ~1.3 us before this kernel ends) and do their pre-wait part under it:
// the metadata and table reads and the preload of old K/V rows (attention_decode_mma.cu, "Early"
// and "Preload", whose case (a) covers this: what may run then is this kernel and the GEMV, which
// writes only its qkv output). The other successors read nothing but weights before their wait,
// or carry no PDL attribute (extend attention: a full edge). Only a scheduling instruction moves:
// the same bits.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/env_switch.h"
#include "ops/cuda/dense_common.cuh"
#include "ops/cuda/dense_cuda.h"
#include "ops/cuda/pdl.cuh"
#include "ops/cuda/prepare_qkv_math.cuh"

namespace grt::cuda {
namespace {

using namespace dense;
using namespace prep;

constexpr int kMaxWarps = 4;           // warps (heads) per block
constexpr int kMaxWarpsPerToken = 16;  // GRAPHRT_PREPARE_QKV=token: the old one block per token

// GRAPHRT_PREPARE_QKV, for A/B (same result bits whichever runs; each falls back to the next
// that applies: tile -> early -> heads, lanes -> heads):
//  lanes (default): the cut lanes kernel with its loads issued early (kNext at
//    prepare_qkv_cut_kernel; session 9: qwen3-0.6b prefill 4096 -0.06 / -0.09 ms against lanes-cut
//    on the H100); where its 32-bit arguments do not fit, lanes-s8 runs;
//  lanes-cut: the cut kernel without the early loads (session 9, run 2: the lanes-s8 kernel in
//    fewer instructions, 33.95 -> 30.88 us at 4096 tokens);
//  lanes-s8: the session-5..8 lanes kernel (its chunk load waits for the token's cache slot);
//  early: the lanes-s8 kernel with the chunk load issued before the slot is known;
//  tile: the token-tile kernel at every token count;
//  auto: tile from kTileMinTokens tokens, early below (the candidate default, not yet measured);
//  heads, token: the shared-memory kernels.
enum class Path { lanes, early, tile, auto_, heads, token, lanes_s8, lanes_cut };
constexpr const char* kPathNames[] = {"lanes",    "early", "tile",     "auto",
                                      "heads",    "token", "lanes-s8", "lanes-cut"};  // Path's order
int path_override = -1;  // set_prepare_qkv_path (tests), host side only
Path chosen_path() {
  static const Path p = static_cast<Path>(
      env_choice("GRAPHRT_PREPARE_QKV", {kPathNames[0], kPathNames[1], kPathNames[2], kPathNames[3], kPathNames[4],
                                         kPathNames[5], kPathNames[6], kPathNames[7]}, 0));
  return path_override >= 0 ? static_cast<Path>(path_override) : p;
}
constexpr int64_t kTileMinTokens = 512;
bool one_block_per_token() { return chosen_path() == Path::token; }
bool trigger_first() { return pdl_trigger_first(TriggerFirstSite::prepare); }
constexpr int64_t kMaxHeadDim = 1024;
constexpr int64_t kSmemBytes = 48 * 1024;  // the default dynamic shared memory limit

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
__global__ void prepare_qkv_kernel(ops::PrepareQkvArgs a, bool vec_q, bool vec_k, bool vec_v, bool trigger_first) {
  extern __shared__ __align__(16) float smem[];
  pdl_enter(trigger_first);  // ("Trigger first" at the top of this file)
  const int64_t t = blockIdx.x, hd = a.head_dim, width = a.kv_heads * hd;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int warps = static_cast<int>(blockDim.x / 32);
  const int64_t pos = a.positions[t];
  const float* cs = pos >= 0 && pos < a.max_positions ? a.cos_sin + pos * hd : nullptr;  // null: no rope
  const bool q_part = a.parts != ops::PrepareParts::kKv, kv_part = a.parts != ops::PrepareParts::kQ;
  const int64_t slot = kv_part ? a.out_cache_loc[t] : -1;
  const bool store = slot >= 0 && slot < a.num_slots;  // store_kv skips other slots too (none: the q part)
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
  const bool q_work = q_part && (a.q_norm != nullptr || cs != nullptr);  // else q stays as it is
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


// The lanes kernel (see the top of the file). Unit u of the flat index: token u / per_token, head
// u % per_token of [q heads, k heads, v heads] (every head is a unit: whether a q head has work
// depends on its token's position, read on the device); lanes [g L, g L + L) of a warp take unit
// warp * (32 / L) + g. Every lane reaches every shuffle (units past the end compute on zeros).
// (Four units per lane with their four loads issued first measured slower on the H100 at 4096
// tokens, 40.5 against 34.6 us a layer: fewer resident warps at 64 registers, bench/results/
// h100_2026-11-23_session5/run5.)
template <typename T, int L>
struct LaneUnit {
  static constexpr int V = kChunk<T>;
  static constexpr int hd = L * V;
  int t = 0, r = 0;
  bool in_range = false, is_q = false, is_v = false, store = false;
  int64_t slot = 0;

  // Units cover heads first_head .. first_head + per_token - 1 of every token (prepare_parts).
  __device__ __forceinline__ LaneUnit(const ops::PrepareQkvArgs& a, int u, int per_token, int units, int first_head) {
    in_range = u < units;
    t = in_range ? u / per_token : 0;
    r = in_range ? u % per_token + first_head : 0;
    slot = a.parts != ops::PrepareParts::kQ ? a.out_cache_loc[t] : -1;
    store = slot >= 0 && slot < a.num_slots;  // store_kv skips other slots too
    is_q = r < a.q_heads;
    is_v = r >= a.q_heads + a.kv_heads;
  }
  __device__ __forceinline__ bool active() const { return in_range && (is_q || store); }
  __device__ __forceinline__ int64_t kv_head(const ops::PrepareQkvArgs& a) const {
    return is_v ? r - a.q_heads - a.kv_heads : r - a.q_heads;
  }
  __device__ __forceinline__ const T* src(const ops::PrepareQkvArgs& a) const {
    if (is_q) return static_cast<const T*>(a.q) + t * a.q_stride + static_cast<int64_t>(r) * hd;
    if (!is_v) return static_cast<const T*>(a.k) + t * a.k_stride + kv_head(a) * hd;
    return static_cast<const T*>(a.v) + t * a.v_stride + kv_head(a) * hd;
  }
  __device__ __forceinline__ T* dst(const ops::PrepareQkvArgs& a) const {
    if (is_q) return static_cast<T*>(a.q) + t * a.q_stride + static_cast<int64_t>(r) * hd;
    T* cache = static_cast<T*>(is_v ? a.v_cache : a.k_cache);
    return cache + (store ? slot : 0) * a.kv_heads * hd + kv_head(a) * hd;
  }
};

// One unit's arithmetic in both lanes kernels and the tile kernel: the lane's chunk raw (elements
// c.. of the head), its RMSNorm when norm (wraw: the weight's chunk), RoPE with this lane's
// cos/sin when rope, stored to out (the chunk's place) when write. Every lane of the warp calls it
// (the sum and the partner element come by shuffles inside the lane's group of L).
template <typename T, int L>
__device__ __forceinline__ void norm_rope_chunk(const uint4& raw, bool norm, const uint4& wraw, float eps, bool rope,
                                                const float* cs_c, const float* cs_s, int sub, bool write, T* out) {
  constexpr int V = kChunk<T>, hd = L * V;
  float x[V];
  const float ss = chunk_sum_sq<T, L>(raw, x);
  if (norm) {
    const float inv = rsqrtf(ss / static_cast<float>(hd) + eps);
    const T* we = reinterpret_cast<const T*>(&wraw);
#pragma unroll
    for (int j = 0; j < V; ++j) x[j] = round_to<T>(to_float(we[j]) * round_to<T>(x[j] * inv));
  }
  float partner[V];
#pragma unroll
  for (int j = 0; j < V; ++j) partner[j] = __shfl_xor_sync(0xffffffffu, x[j], L / 2);
  if (!write) return;
  const bool low = sub < L / 2;  // holds elements j < half: keeps rope's lo, its partner hi
  float y[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    if (rope) {
      float lo, hi;
      rope_rotate(low ? x[j] : partner[j], low ? partner[j] : x[j], cs_c[j], cs_s[j], lo, hi);
      y[j] = low ? lo : hi;
    } else {
      y[j] = x[j];
    }
  }
  store_chunk(out, 0, hd, true, y);
}

// kEarly (GRAPHRT_PREPARE_QKV=early): the chunk load is predicated on the unit being in range only,
// not on its token's cache slot, so it leaves at once instead of one L2 round trip (the slot read)
// later; a k/v chunk of a token whose slot is skipped is read and dropped (its source row exists).
template <typename T, int L, bool kEarly>
__global__ void __launch_bounds__(256)
    prepare_qkv_lanes_kernel(ops::PrepareQkvArgs a, int per_token, int units, int first_head, bool first) {
  using Unit = LaneUnit<T, L>;
  constexpr int V = Unit::V, hd = Unit::hd, half = hd / 2;
  pdl_enter(first);
  const int lane = static_cast<int>(threadIdx.x % 32), sub = lane % L, c = sub * V, j0 = c % half;
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / 32);
  const Unit un(a, warp * (32 / L) + lane / L, per_token, units, first_head);
  const bool active = un.active();
  // Every load first: the chunk, the norm weight's chunk, this lane's cos and sin.
  const bool load = kEarly ? un.in_range : active;
  const uint4 raw = load ? *reinterpret_cast<const uint4*>(un.src(a) + c) : make_uint4(0, 0, 0, 0);
  const T* w = un.is_q ? static_cast<const T*>(a.q_norm) : un.is_v ? nullptr : static_cast<const T*>(a.k_norm);
  const int64_t pos = a.positions[un.t];
  const bool rope = !un.is_v && pos >= 0 && pos < a.max_positions;  // else no rope, as the heads kernel
  T* dst = un.dst(a);
  if (un.is_v) {  // a copy of the dtype's bits
    if (active) *reinterpret_cast<uint4*>(dst + c) = raw;
  }
  uint4 wraw = make_uint4(0, 0, 0, 0);
  if (active && w) wraw = *reinterpret_cast<const uint4*>(w + c);
  float cs_c[V], cs_s[V];
  if (active && rope) {
    load_cos_sin<V>(a.cos_sin + pos * hd, j0, half, cs_c, cs_s);
  }
  // v is stored above; q without a norm or a rope stays as it is (as in the heads kernel).
  const bool write = active && !un.is_v && !(un.is_q && !w && !rope);
  norm_rope_chunk<T, L>(raw, w != nullptr, wraw, a.eps, rope, cs_c, cs_s, sub, write, dst + c);
}

// The cut lanes kernel (GRAPHRT_PREPARE_QKV=lanes, the default; session 9): the session-8 lanes
// kernel above (GRAPHRT_PREPARE_QKV=lanes-s8) with fewer instructions per unit and the same
// arithmetic, step for step. Why: at 4096 tokens that kernel was issue-bound (ncu, H100: 68% of
// issue slots busy, ~350 instructions a warp, DRAM at 57% of peak), and about half its code before
// the math was index and address work. Here (CutArgs, built on the host):
//  - token = unit / per_token by a multiply-shift (magic, shift) instead of a 32-bit division;
//  - 32-bit strides, counts and range bounds (the host checks they fit), so the slot and position
//    range checks are one unsigned compare each and the offsets one wide multiply-add each;
//  - when q, k and v are column slices of one row (the model's fused qkv output: kOneRow), the
//    source is that row + head * head_dim, no three-way pointer select;
//  - a warp whose units are all v heads (or past the end) stores its copies and leaves before the
//    norm/RoPE code (a warp vote: uniform, so the shuffles below still see every lane);
//  - RoPE is one branch per unit, not one per element, and its lo/hi pair is one product sum with
//    the sign of sin flipped in the low half (a - b = a + (-b) exactly in IEEE arithmetic);
//  - the dtype roundings go two elements per conversion (the same round-to-nearest per element).
template <typename T>
struct CutArgs {
  T* q;
  const T* k;
  const T* v;
  T* k_cache;
  T* v_cache;
  const T* q_norm;
  const T* k_norm;
  const int32_t* positions;
  const int32_t* out_cache_loc;
  const float* cos_sin;
  int q_stride, k_stride, v_stride, width;  // elements
  int nq, nkv, per_token, units;
  int first_head;  // units cover heads first_head .. first_head + per_token - 1 of [q, k, v] (part_heads)
  bool q_only;     // the q part alone: no slot is read (out_cache_loc may be null)
  // Bounds clamped to [0, 2^31]: for any int32 i, (uint32_t)i < bound <=> 0 <= i < the int64 bound.
  uint32_t max_positions, num_slots;
  uint32_t magic;  // unit / per_token == __umulhi(unit << 2, magic) >> shift for every unit < 2^30
  int shift;
  float eps;
  bool trigger_first;  // pdl_enter's ("Trigger first" at the top of this file)
};

// kNext (the default GRAPHRT_PREPARE_QKV=lanes since session 9; without it: lanes-cut): the position is read beside
// the slot and the weight and cos/sin loads leave before the v store and the vote, so the cos/sin
// trip overlaps the chunk's DRAM trip (the default's chain is slot -> chunk -> position -> cos/sin,
// four dependent trips; session 9 run 2: latency-bound at 50% issue, 57% DRAM); bf16 conversions
// by bit operations (kBits of cut_norm_rope_chunk). Its cos/sin live across the chunk's wait:
// 45 registers unbounded (5 blocks an SM), 40 without spills under 6 blocks. (Minimum 0 blocks for
// lanes-cut leaves its machine code as measured: a 1 there changes it.) H100, qwen3-0.6b prefill
// 4096 piecewise, fresh processes interleaved: 12.042 / 12.112 ms against lanes-cut's 12.105 / 12.205.
template <typename T, int L, bool kOneRow, bool kNext = false>
__global__ void __launch_bounds__(256, kNext ? 6 : 0) prepare_qkv_cut_kernel(CutArgs<T> a) {
  constexpr int V = kChunk<T>, hd = L * V, half = hd / 2;
  pdl_enter(a.trigger_first);
  const int lane = static_cast<int>(threadIdx.x % 32), sub = lane % L, c = sub * V, j0 = c % half;
  // = warp * (32 / L) + lane / L; blockIdx.x * 256 could pass 2^32 (units < 2^30, L lanes each).
  const uint32_t u = blockIdx.x * (blockDim.x / L) + threadIdx.x / L;
  const bool in_range = u < static_cast<uint32_t>(a.units);
  // Units past the end act as unit 0 (token 0, a q head) with nothing loaded or stored.
  const int t = in_range ? static_cast<int>(__umulhi(u << 2, a.magic) >> a.shift) : 0;
  const int r = in_range ? static_cast<int>(u) - t * a.per_token + a.first_head : 0;
  const bool is_q = r < a.nq, is_v = r >= a.nq + a.nkv;
  const int kvh = r - (is_v ? a.nq + a.nkv : a.nq);  // k or v head (unused for q)
  const int slot = a.q_only ? -1 : a.out_cache_loc[t];
  int pos = 0;
  if constexpr (kNext) pos = a.positions[t];
  const bool store = static_cast<uint32_t>(slot) < a.num_slots;  // store_kv skips other slots too
  const bool active = in_range && (is_q || store);
  const T* src;
  if constexpr (kOneRow) {
    src = a.q + static_cast<int64_t>(t) * a.q_stride + r * hd;
  } else {
    const T* base = is_q ? a.q : is_v ? a.v : a.k;
    const int stride = is_q ? a.q_stride : is_v ? a.v_stride : a.k_stride;
    src = base + static_cast<int64_t>(t) * stride + (is_q ? r : kvh) * hd;
  }
  T* const kv_dst = (is_v ? a.v_cache : a.k_cache) + static_cast<int64_t>(store ? slot : 0) * a.width + kvh * hd;
  const uint4 raw = active ? *reinterpret_cast<const uint4*>(src + c) : make_uint4(0, 0, 0, 0);
  uint4 wraw = make_uint4(0, 0, 0, 0);
  float cs_c[V], cs_s[V];
  if constexpr (kNext) {  // the norm weight's chunk and this lane's cos/sin, as below
    const T* w = is_q ? a.q_norm : is_v ? nullptr : a.k_norm;
    if (active && w) wraw = *reinterpret_cast<const uint4*>(w + c);
    if (active && !is_v && static_cast<uint32_t>(pos) < a.max_positions)
      load_cos_sin<V>(a.cos_sin + static_cast<int64_t>(pos) * hd, j0, half, cs_c, cs_s);
  }
  if (is_v && active) __stcg(reinterpret_cast<uint4*>(kv_dst + c), raw);  // a copy of the dtype's bits
  if (__all_sync(0xffffffffu, is_v || !in_range)) return;  // v heads only: no norm, no RoPE, no shuffles
  T* const dst = is_q ? const_cast<T*>(src) : kv_dst;       // q in place
  const T* w = is_q ? a.q_norm : is_v ? nullptr : a.k_norm;
  if constexpr (!kNext) pos = a.positions[t];
  const bool rope = !is_v && static_cast<uint32_t>(pos) < a.max_positions;  // else no rope, as the heads kernel
  if constexpr (!kNext) {
    if (active && w) wraw = *reinterpret_cast<const uint4*>(w + c);
    if (active && rope) {
      load_cos_sin<V>(a.cos_sin + static_cast<int64_t>(pos) * hd, j0, half, cs_c, cs_s);
    }
  }
  // v is stored above; q without a norm or a rope stays as it is (as in the heads kernel).
  const bool write = active && !is_v && !(is_q && !w && !rope);
  cut_norm_rope_chunk<T, L, kNext>(raw, w != nullptr, wraw, a.eps, rope, cs_c, cs_s, sub, write, dst + c);
}

// The token-tile kernel (GRAPHRT_PREPARE_QKV=tile; auto from kTileMinTokens tokens): block t takes
// token t's per_token = q_heads + 2 kv_heads heads in R rounds of G = 256 / L lane groups (head
// k G + g in round k for group g; qwen3 bf16: 32 heads = 2 rounds, llama 48 = 3). Why: in the
// lanes kernel each lane had one 16-byte load in flight, issued only after the slot read, then
// its block ended (ncu: 1.9 TB/s at 4096 tokens); the 4-round lanes variant of session 5 kept 4
// loads but re-read slot and position and the cos/sin row per unit after the previous unit's
// stores, so those L2 round trips ran one after another. Here a lane issues its R chunk loads,
// the token's slot and position and both norm weights' chunks before anything waits, and the R
// units share one slot, one position and one cos/sin load (same token, same chunk offset), so R
// loads per lane stay in flight at about the registers of one unit plus 4 per extra round. Each
// unit's arithmetic is the lanes kernel's, step for step: same bits.
template <typename T, int L, int R>
__global__ void __launch_bounds__(256) prepare_qkv_tile_kernel(ops::PrepareQkvArgs a, int per_token, bool first) {
  constexpr int V = kChunk<T>, hd = L * V, half = hd / 2, G = 256 / L;
  pdl_enter(first);
  const int lane = static_cast<int>(threadIdx.x % 32), sub = lane % L, c = sub * V, j0 = c % half;
  const int g = static_cast<int>(threadIdx.x) / L;
  const int64_t t = blockIdx.x;
  const int nq = static_cast<int>(a.q_heads), nkv = static_cast<int>(a.kv_heads);
  // The source chunk row: q, k or v of token t, head r.
  const auto src = [&](int r) -> const T* {
    if (r < nq) return static_cast<const T*>(a.q) + t * a.q_stride + static_cast<int64_t>(r) * hd;
    if (r < nq + nkv) return static_cast<const T*>(a.k) + t * a.k_stride + static_cast<int64_t>(r - nq) * hd;
    return static_cast<const T*>(a.v) + t * a.v_stride + static_cast<int64_t>(r - nq - nkv) * hd;
  };
  // Every load first, none waiting on another: the R chunks, the slot, the position, both weights' chunks.
  uint4 raw[R];
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const int r = k * G + g;
    raw[k] = r < per_token ? *reinterpret_cast<const uint4*>(src(r) + c) : make_uint4(0, 0, 0, 0);
  }
  const int64_t slot = a.out_cache_loc[t];
  const bool store = slot >= 0 && slot < a.num_slots;  // store_kv skips other slots too
  const int64_t pos = a.positions[t];
  const bool rope = pos >= 0 && pos < a.max_positions;  // else no rope, as the heads kernel
  const T* wq = static_cast<const T*>(a.q_norm);
  const T* wk = static_cast<const T*>(a.k_norm);
  const uint4 wq_raw = wq ? *reinterpret_cast<const uint4*>(wq + c) : make_uint4(0, 0, 0, 0);
  const uint4 wk_raw = wk ? *reinterpret_cast<const uint4*>(wk + c) : make_uint4(0, 0, 0, 0);
  float cs_c[V], cs_s[V];
  if (rope) {
    load_cos_sin<V>(a.cos_sin + pos * hd, j0, half, cs_c, cs_s);
  }
  T* const k_row = static_cast<T*>(a.k_cache) + (store ? slot : 0) * a.kv_heads * hd;
  T* const v_row = static_cast<T*>(a.v_cache) + (store ? slot : 0) * a.kv_heads * hd;
#pragma unroll
  for (int k = 0; k < R; ++k) {
    const int r = k * G + g;
    const bool is_q = r < nq, is_v = r >= nq + nkv;
    const bool active = r < per_token && (is_q || store);
    if (is_v) {  // a copy of the dtype's bits
      if (active) *reinterpret_cast<uint4*>(v_row + static_cast<int64_t>(r - nq - nkv) * hd + c) = raw[k];
    }
    const T* w = is_q ? wq : is_v ? nullptr : wk;
    const bool rope_here = rope && !is_v;
    // v is stored above; q without a norm or a rope stays as it is (as in the heads kernel).
    const bool write = active && !is_v && !(is_q && !w && !rope_here);
    T* dst = is_q ? static_cast<T*>(a.q) + t * a.q_stride + static_cast<int64_t>(r) * hd
                  : k_row + static_cast<int64_t>(r - nq) * hd;
    const uint4 wraw = is_q ? wq_raw : wk_raw;  // a value: a selected reference would put both in local memory
    norm_rope_chunk<T, L>(raw[k], w != nullptr, wraw, a.eps, rope_here, cs_c, cs_s, sub, write,
                          dst + c);
  }
}

// Lanes per head of the lanes kernels, or 0 where they do not apply.
template <typename T>
int lanes_per_head(const ops::PrepareQkvArgs& a) {
  constexpr int V = kChunk<T>;
  const int64_t hd = a.head_dim, es = static_cast<int64_t>(sizeof(T));
  const Path p = chosen_path();
  if (p == Path::heads || p == Path::token || hd % V != 0 || a.tokens <= 0) return 0;
  const int64_t L = hd / V;
  if (L != 4 && L != 8 && L != 16 && L != 32) return 0;
  if (a.tokens * (a.q_heads + 2 * a.kv_heads) >= (int64_t{1} << 30)) return 0;  // 32-bit unit indices
  // 16-byte loads and stores of every head: q, k, v rows and both caches, and the norm weights.
  const bool aligned = aligned16(a.q, a.q_stride, sizeof(T)) && aligned16(a.k, a.k_stride, sizeof(T)) &&
                       aligned16(a.v, a.v_stride, sizeof(T)) && aligned16(a.k_cache, 0, sizeof(T)) &&
                       aligned16(a.v_cache, 0, sizeof(T)) && aligned16(a.q_norm, 0, sizeof(T)) &&
                       aligned16(a.k_norm, 0, sizeof(T)) && aligned16(a.cos_sin, 0, sizeof(float)) &&
                       (hd * es) % 16 == 0;
  return aligned ? static_cast<int>(L) : 0;
}

// The heads a token's units cover, [first, first + count) of [q heads, k heads, v heads], for a.parts.
struct PartHeads {
  int first, count;
};
PartHeads part_heads(const ops::PrepareQkvArgs& a) {
  const int nq = static_cast<int>(a.q_heads), nkv = static_cast<int>(a.kv_heads);
  switch (a.parts) {
    case ops::PrepareParts::kQ: return {0, nq};
    case ops::PrepareParts::kKv: return {nq, 2 * nkv};
    default: return {0, nq + 2 * nkv};
  }
}

template <typename T, int L, bool kEarly>
void launch_lanes(int dev, cudaStream_t s, const ops::PrepareQkvArgs& a) {
  const PartHeads ph = part_heads(a);
  const int per_token = ph.count;
  const int units = static_cast<int>(a.tokens * per_token);  // < 2^30: lanes_per_head checks it
  constexpr int kThreads = 256;
  constexpr int per_block = kThreads / 32 * (32 / L);
  const int blocks = (units + per_block - 1) / per_block;
  (void)launch_pdl(dev, prepare_qkv_lanes_kernel<T, L, kEarly>, dim3(blocks), dim3(kThreads), 0, s, 1, a, per_token,
                   units, ph.first, trigger_first());
}

// The cut lanes kernel where its 32-bit arguments fit (else false: the caller runs lanes-s8, same bits).
template <typename T, int L, bool kNext>
bool try_cut(int dev, cudaStream_t s, const ops::PrepareQkvArgs& a) {
  constexpr int64_t kInt = 0x7fffffff;
  const PartHeads ph = part_heads(a);
  const int64_t hd = a.head_dim, width = a.kv_heads * hd, per_token = ph.count;
  for (int64_t v : {a.q_stride, a.k_stride, a.v_stride, width})
    if (v < 0 || v > kInt) return false;
  if (per_token < 1 || per_token > 0xffff) return false;
  CutArgs<T> c{};
  c.q = static_cast<T*>(a.q);
  c.k = static_cast<const T*>(a.k);
  c.v = static_cast<const T*>(a.v);
  c.k_cache = static_cast<T*>(a.k_cache);
  c.v_cache = static_cast<T*>(a.v_cache);
  c.q_norm = static_cast<const T*>(a.q_norm);
  c.k_norm = static_cast<const T*>(a.k_norm);
  c.positions = a.positions;
  c.out_cache_loc = a.out_cache_loc;
  c.cos_sin = a.cos_sin;
  c.q_stride = static_cast<int>(a.q_stride);
  c.k_stride = static_cast<int>(a.k_stride);
  c.v_stride = static_cast<int>(a.v_stride);
  c.width = static_cast<int>(width);
  c.nq = static_cast<int>(a.q_heads);
  c.nkv = static_cast<int>(a.kv_heads);
  c.per_token = static_cast<int>(per_token);
  c.first_head = ph.first;
  c.q_only = a.parts == ops::PrepareParts::kQ;
  c.units = static_cast<int>(a.tokens * per_token);  // < 2^30: lanes_per_head checks it
  const auto bound = [](int64_t v) { return static_cast<uint32_t>(std::clamp<int64_t>(v, 0, int64_t{1} << 31)); };
  c.max_positions = bound(a.max_positions);
  c.num_slots = bound(a.num_slots);
  // u / P for u < 2^30: with l = ceil(log2 P) and m = ceil(2^(30+l) / P) (< 2^32), m P = 2^(30+l) + e,
  // 0 <= e < P <= 2^l, so u m / 2^(30+l) = u / P + u e / (P 2^(30+l)) and u e < 2^(30+l): the
  // floor is u / P's. __umulhi(u << 2, m) >> l is that floor (u << 2 < 2^32).
  int l = 0;
  while ((int64_t{1} << l) < per_token) ++l;
  const uint64_t m = ((uint64_t{1} << (30 + l)) + static_cast<uint64_t>(per_token) - 1) / static_cast<uint64_t>(per_token);
  c.magic = static_cast<uint32_t>(m);
  c.shift = l;
  const uint32_t last = static_cast<uint32_t>(c.units - 1);
  GRT_CHECK(((uint64_t{last} << 2) * m >> 32 >> l) == last / static_cast<uint32_t>(per_token),
            "prepare_qkv_: the multiply-shift division by {} heads a token is wrong at unit {}", per_token, last);
  c.eps = a.eps;
  c.trigger_first = trigger_first();
  // One row: k and v follow q's heads in the same row (the model's fused qkv output; the q part
  // alone reads q only, so any q takes that form).
  const bool one_row = a.parts == ops::PrepareParts::kQ || a.k == static_cast<const T*>(a.q) + a.q_heads * hd && a.v == c.k + width &&
                       a.k_stride == a.q_stride && a.v_stride == a.q_stride;
  constexpr int kThreads = 256;
  constexpr int per_block = kThreads / 32 * (32 / L);
  const int blocks = (c.units + per_block - 1) / per_block;
  if (one_row)
    (void)launch_pdl(dev, prepare_qkv_cut_kernel<T, L, true, kNext>, dim3(blocks), dim3(kThreads), 0, s, 1, c);
  else
    (void)launch_pdl(dev, prepare_qkv_cut_kernel<T, L, false, kNext>, dim3(blocks), dim3(kThreads), 0, s, 1, c);
  return true;
}

// The token-tile kernel where its rounds fit R <= 4 (L 8 or 16: bf16 head_dim 64/128, f32 32/64).
template <typename T, int L>
bool try_tile(int dev, cudaStream_t s, const ops::PrepareQkvArgs& a) {
  constexpr int G = 256 / L;
  const int per_token = static_cast<int>(a.q_heads + 2 * a.kv_heads);
  const int rounds = (per_token + G - 1) / G;
  const dim3 grid(static_cast<unsigned>(a.tokens));
  const bool first = trigger_first();
  const auto go = [&](auto kernel) {
    (void)launch_pdl(dev, kernel, grid, dim3(256), 0, s, 1, a, per_token, first);
    return true;
  };
  switch (rounds) {
    case 1: return go(prepare_qkv_tile_kernel<T, L, 1>);
    case 2: return go(prepare_qkv_tile_kernel<T, L, 2>);
    case 3: return go(prepare_qkv_tile_kernel<T, L, 3>);
    case 4: return go(prepare_qkv_tile_kernel<T, L, 4>);
    default: return false;
  }
}

template <typename T, int L>
void launch_lanes_path(int dev, cudaStream_t s, const ops::PrepareQkvArgs& a) {
  const Path p = chosen_path();
  if (p == Path::lanes && try_cut<T, L, true>(dev, s, a)) return;
  if (p == Path::lanes_cut && try_cut<T, L, false>(dev, s, a)) return;
  if (p == Path::lanes || p == Path::lanes_s8 || p == Path::lanes_cut) return launch_lanes<T, L, false>(dev, s, a);
  // The tile kernel takes every head of a token (no parts).
  const bool tile = a.parts == ops::PrepareParts::kAll && (p == Path::tile || (p == Path::auto_ && a.tokens >= kTileMinTokens));
  if constexpr (L == 8 || L == 16) {
    if (tile && try_tile<T, L>(dev, s, a)) return;
  }
  launch_lanes<T, L, true>(dev, s, a);
}

template <typename T>
bool try_lanes(int dev, cudaStream_t s, const ops::PrepareQkvArgs& a) {
  switch (lanes_per_head<T>(a)) {
    case 4: launch_lanes_path<T, 4>(dev, s, a); return true;
    case 8: launch_lanes_path<T, 8>(dev, s, a); return true;
    case 16: launch_lanes_path<T, 16>(dev, s, a); return true;
    case 32: launch_lanes_path<T, 32>(dev, s, a); return true;
    default: return false;
  }
}

template <typename T>
void launch(int dev, cudaStream_t s, const ops::PrepareQkvArgs& a) {
  if (try_lanes<T>(dev, s, a)) return;
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
                   dim3(warps * 32), smem, s, 1, a, vec_q, vec_k, vec_v, trigger_first());
}

}  // namespace

void set_prepare_qkv_path(const char* path) {
  if (path == nullptr) {
    path_override = -1;
    return;
  }
  int i = 0;
  for (const char* name : kPathNames) {
    if (std::strcmp(name, path) == 0) {
      path_override = i;
      return;
    }
    ++i;
  }
  GRT_FAIL("set_prepare_qkv_path: unknown kernel '{}' (lanes, early, tile, auto, heads, token, lanes-s8 or lanes-cut)", path);
}

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
