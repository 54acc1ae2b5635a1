// fa3-ws / fa3-wsp / fa3-wsn / fa3-wsnp: paged extend attention on Hopper with warp
// specialisation (issue 18, session 6). A producer warpgroup and an mbarrier ring feed two
// consumer warpgroups on the fa3-ov loop (attention_extend_wgmma.cu, whose building blocks,
// attention_wgmma.cuh, it shares). fa3-wsnp: the default at head_dim 128 on grids of about one
// block per multiprocessor (bench/results/h100_2026-11-24_s6_fa3ws). Session 8: fa3-ws128* with
// 128-key ring stages; fa3-ws128s, also on a persistent longest-first grid (16/8/128 causal, H100:
// 414 TFLOP/s at 4k, 471 at 8k), fa3-ws128p (pingpong) the default at head_dim 64
// (bench/results/h100_2026-11-24_s8_attn). Session 9: fa3-ws128ns (fa3-ws128n's m64n128 O GEMM on
// fa3-ws128s's persistent grid; the default on large grids at head_dim 128: 433 at 4k, 491 at 8k),
// fa3-ws128nsq (+ Q released after the last S GEMM, the next q tile's first key tile gathered
// before its Q) and fa3-ws128nsk (+ K and V of a ring stage awaited and released apart); both
// measured slower (-5% / -24% at 4k; bench/results/h100_2026-11-24_s9_attn), kept for A/B.
// fa3-ws128nso / fa3-ws128ns2: fa3-ws128ns with the softmax meant to run under the O GEMM (the P
// pack pinned after the row sums / a second P register set): both measured serial in the SASS
// and slower (-7% / -9% at 4k), kept for A/B. fa3-wsnh / fa3-wsnsh / fa3-wsnph: fa3-wsn / fa3-wsnp
// with the softmax held under the O GEMM (HOLD_O; overlapped in the cubin, not yet measured).
// Session 12: fa3-wsn64, fa3-wsn with one consumer on 64-row q tiles (GROUPS 1) for short extends.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "device/cuda/cuda_check.h"
#include "ops/cuda/attention_extend_params.h"
#include "ops/cuda/attention_wgmma.cuh"
#include "ops/cuda/prepare_qkv_math.cuh"
#include "ops/cuda/smem_mbarrier.cuh"

namespace grt::cuda {
namespace {

using namespace wg;

// The block: warpgroup 0 the producer, 1 .. GROUPS the consumers; BK keys per ring stage (64, or
// 128 for fa3-ws128). GROUPS 1 (fa3-wsn64, session 12): one consumer, 64-row q tiles, so twice the
// blocks of a short extend.
template <int HD, int STAGES, int BK = 64, int GROUPS = 2>
struct WsCfg {
  static_assert(GROUPS == 1 || GROUPS == 2, "one or two consumer warpgroups");
  static constexpr int kGroups = GROUPS;    // consumer warpgroups of 64 q rows
  static constexpr int kThreads = 128;      // loader threads (WgTile's gather): the producer warpgroup
  static constexpr int kConsumerThreads = 128 * GROUPS;
  static constexpr int kBlockThreads = 128 + kConsumerThreads;
  static constexpr int kBQ = 64 * GROUPS;
  static constexpr int kBK = BK;
  static constexpr uint32_t kQBytes = kBQ * HD * 2;
  static constexpr uint32_t kTileBytes = kBK * HD * 2;
  // full[S], empty[S], q_full, q_empty; then v_full[S], v_empty[S] where the ring is split (fa3-ws128nsk:
  // full / empty then stand for K alone).
  static constexpr uint32_t kBarOffset = kQBytes + 2 * STAGES * kTileBytes;
  static constexpr size_t kSmem = size_t{kBarOffset} + 8 * (4 * STAGES + 2) + 1024;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// ---- fa3-ws: warp specialisation (issue 18, session 6) -----------------------------------------
// Three warpgroups: warpgroup 0 gathers (page table rows, cp.async per 16 bytes; no TMA: a row's
// slot is arbitrary at page size 1 and TMA writes rows unswizzled) Q and a ring of STAGES K/V
// tiles, each stage with a "full" mbarrier (the 128 producer threads arrive through
// cp.async.mbarrier.arrive.noinc when their copies land) and an "empty" one (the 256 consumer
// threads arrive when their O GEMM on it is done); warpgroups 1 and 2 run the fa3-ov loop on 64 q
// rows each without any block-wide barrier. setmaxnreg gives the producer 72 registers and the
// consumers 216 (40 spilled the producer's slot list at head_dim 128). PINGPONG (fa3-wsp): the
// two consumers take turns issuing their GEMMs (named barriers 1 and 2), so one's softmax runs
// while the other's GEMMs run. O128 (fa3-wsn / fa3-wsnp): the O GEMM as m64n128 instructions.

using smem_mbar::cp_async_mbar_arrive;
using smem_mbar::mbar_arrive;
using smem_mbar::mbar_init;
using smem_mbar::mbar_wait;

__device__ __forceinline__ void named_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int n) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}

// A block's unit of work: q tile qt of head h of request b (extend length ext, clamped).
struct WsItem {
  int qt, h, b, ext;
};

// The k-th work item of this block: 1 and `it` set, 2 where that item is empty (a short request's
// q tile that does not exist: skip it), 0 past the block's last item. Non-persistent blocks run
// the q tiles `first` and `second` (extend_block_tiles) of their (head, request). Persistent
// blocks (PERSIST, a grid of at most one block per multiprocessor) run every gridDim.x-th item of
// the list ordered by q tile from each request's last (the heaviest causal work) to its first,
// heads and requests inside each rank; rounds alternate their direction over the blocks (block c
// takes item c of round 0, G - 1 - c of round 1, ...), so that the heavy and light ends of
// successive rounds even out (a static "snake" longest-first schedule; no counter to reset
// between graph replays, and a tile's bits do not depend on the block that runs it).
template <bool PERSIST>
__device__ __forceinline__ int ws_item(const ExtendParams& p, int k, int first, int second, int tiles_max, WsItem& it) {
  if constexpr (!PERSIST) {
    if (k > 1 || (k == 1 && second < 0)) return 0;
    it.qt = k == 0 ? first : second;
    it.h = static_cast<int>(blockIdx.y);
    it.b = static_cast<int>(blockIdx.z);
    it.ext = min(max(p.extend_lens[it.b], 0), p.max_extend_len);
    return 1;
  } else {
    const int g = static_cast<int>(gridDim.x), c = static_cast<int>(blockIdx.x);
    const int per_rank = p.nq * p.num_reqs;
    const int64_t i = int64_t{k} * g + ((k & 1) ? g - 1 - c : c);
    if (i >= int64_t{tiles_max} * per_rank) return 0;
    const int rank = static_cast<int>(i / per_rank), j = static_cast<int>(i % per_rank);
    it.h = j % p.nq;
    it.b = j / p.nq;
    it.ext = min(max(p.extend_lens[it.b], 0), p.max_extend_len);
    it.qt = (it.ext + 127) / 128 - 1 - rank;
    return it.qt >= 0 ? 1 : 2;
  }
}

// Ring position of the block's it-th key tile (counted over all its q tiles: both of a pair, or a
// persistent block's items).
template <int STAGES>
struct WsRing {
  int it = 0;
  __device__ __forceinline__ int stage(int k = 0) const { return (it + k) % STAGES; }
  __device__ __forceinline__ uint32_t phase(int k = 0) const { return static_cast<uint32_t>((it + k) / STAGES) & 1u; }
};

// Producer warpgroup: Q of q tile `qt` (after the consumers released the previous one) and its key
// tiles. EARLY_Q (fa3-ws128nsq): key tile 0 first, into its ring stage as soon as that is free (the
// stage frees before the previous q tile's Q does), then Q. SPLIT_KV (fa3-ws128nsk): K and V of a
// key tile under their own full / empty barriers, in the order the consumers free them (K of tile
// t once S(t - 3) is done, V once O(t - 3) is: K(0), Q, then K(t), V(t - 1), ...), so that K lands
// up to 2.5 loop steps ahead of its S GEMM, V 2 ahead of its O GEMM (1 for both in one stage).
template <typename T, int HD, int STAGES, int BK, bool EARLY_Q, bool SPLIT_KV, int GROUPS>
__device__ __forceinline__ void ws_produce(const ExtendParams& p, const WsItem& it, unsigned char* smem, int pass,
                                           WsRing<STAGES>& ring, uint32_t bars) {
  using C = WsCfg<HD, STAGES, BK, GROUPS>;
  WgTile<T, HD, C> w(p, it.qt, it.ext, smem, static_cast<int>(threadIdx.x), it.h, it.b);
  const uint32_t full = bars, empty = bars + 8 * STAGES, q_full = bars + 16 * STAGES, q_empty = q_full + 8;
  if constexpr (SPLIT_KV) {
    const uint32_t v_full = q_empty + 8, v_empty = v_full + 8 * STAGES;
    const int n = w.num_tiles;
    const auto put_k = [&](int t) {
      w.load_slots(t);
      mbar_wait(empty + 8 * ring.stage(t), ring.phase(t) ^ 1u);
      w.template issue_half<false>(ring.stage(t));
      cp_async_mbar_arrive(full + 8 * ring.stage(t));
    };
    const auto put_v = [&](int t) {
      w.load_slots(t);  // again (K(t + 1) replaced them): one slot list in the producer's 72 registers
      mbar_wait(v_empty + 8 * ring.stage(t), ring.phase(t) ^ 1u);
      w.template issue_half<true>(ring.stage(t));
      cp_async_mbar_arrive(v_full + 8 * ring.stage(t));
    };
    if (n > 0) put_k(0);
    if (pass > 0) mbar_wait(q_empty, static_cast<uint32_t>(pass - 1) & 1u);
    w.load_q();
    cp_async_mbar_arrive(q_full);
    for (int t = 1; t < n; ++t) {
      put_k(t);
      put_v(t - 1);
    }
    if (n > 0) put_v(n - 1);
    ring.it += n;
    return;
  }
  const auto put = [&](int t) {
    w.load_slots(t);
    mbar_wait(empty + 8 * ring.stage(), ring.phase() ^ 1u);
    w.issue_tile(ring.stage());
    cp_async_mbar_arrive(full + 8 * ring.stage());
    ++ring.it;
  };
  const int t0 = EARLY_Q && w.num_tiles > 0 ? 1 : 0;
  if (t0 > 0) put(0);
  if (pass > 0) mbar_wait(q_empty, static_cast<uint32_t>(pass - 1) & 1u);
  w.load_q();
  cp_async_mbar_arrive(q_full);
  for (int t = t0; t < w.num_tiles; ++t) put(t);
}

__device__ __forceinline__ uint4 lds128(uint32_t a) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a));
  return v;
}
__device__ __forceinline__ void sts128(uint32_t a, const uint4& v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// ExtendParams::prepare_q: a consumer warpgroup gives its 64 rows of the Q tile prepare_qkv_'s q
// part in shared memory, between the tile's landing and its first S GEMM. Why here: a 4096-token
// qwen3-0.6b prefill spent 29.4 us a layer in prepare_qkv_, half of it reading and writing q
// (33.5 of 67 MB); the attention reads q anyway. A row (one q head of one token) is L = HD / 8
// threads of one 16-byte chunk each, as in prepare_qkv_'s lanes kernels, and each runs their
// arithmetic (prep::cut_norm_rope_values, kBits): the same bits as the prepare kernel's q.
// begin() issues the global loads (the rows' positions, then their cos/sin, and the norm
// weight's chunk) before the warpgroup waits for the tile, so they travel while Q lands; finish()
// rewrites the chunks in place, then fences them for wgmma's reads (async proxy) and syncs the
// warpgroup (named barrier 3 + warpgroup: the pingpong turns use 1 and 2). Rows past the tile's
// end or outside q keep what landed (zeros).
// Registers: a thread holds 8 of the 16 cos/sin values its chunk needs per row (the lower half of
// the row's threads the cos, the upper half the sin of the same elements j0..j0+7) and trades them
// with its partner (lane ^ L/2) by shuffles when it uses them; AHEAD of its rows' values are in
// flight at a time (the rest are asked for as earlier rows are done: a ring of AHEAD slots).
// Holding all 16 values for 8 rows (128 floats) made ptxas spill 430-690 bytes a thread in every
// bf16 kernel, and the attention took 222 us a layer instead of 165 at 4096 tokens (call A); 8
// for all 8 rows still spilled ~500 bytes in the 128-key-stage kernels at head_dim 128 (their S
// is twice as wide), which therefore keep 4 ahead.
template <typename T, int HD, int BQ, int AHEAD>
struct WsQPrepare {
  static constexpr int V = 8, L = HD / V, kRowsPerPass = 128 / L, kPasses = 64 / kRowsPerPass, kHalf = HD / 2;
  static constexpr int kAhead = AHEAD < kPasses ? AHEAD : kPasses;
  static_assert(kPasses <= 32, "row flags in one word");
  int sub = 0, row0 = 0;
  uint32_t ok = 0, rope = 0;  // bit i: pass i's row is in q / gets RoPE
  uint4 wraw = make_uint4(0, 0, 0, 0);
  int pos[kPasses];
  float cs[kAhead][V];  // slot i % kAhead: cos (sub < L/2) or sin (sub >= L/2) of elements j0.. of pass i's position

  __device__ __forceinline__ void load(const ExtendParams& p, int i) {
    if (!((rope >> i) & 1u)) return;
    const int j0 = (sub * V) % kHalf;
    const float* src = p.cos_sin + static_cast<int64_t>(pos[i]) * HD + (sub < L / 2 ? 0 : kHalf) + j0;
    const float4 a = *reinterpret_cast<const float4*>(src), b = *reinterpret_cast<const float4*>(src + 4);
    float* d = cs[i % kAhead];
    d[0] = a.x, d[1] = a.y, d[2] = a.z, d[3] = a.w, d[4] = b.x, d[5] = b.y, d[6] = b.z, d[7] = b.w;
  }

  // ctid: the thread's index in its consumer warpgroup (0..127); grow0, rows: the warpgroup's first
  // tile row and the tile's rows; tok0: q's row of tile row 0.
  __device__ __forceinline__ void begin(const ExtendParams& p, int ctid, int grow0, int rows, int64_t tok0) {
    sub = ctid % L;
    row0 = grow0 + ctid / L;
    if (p.q_norm != nullptr) wraw = *reinterpret_cast<const uint4*>(static_cast<const T*>(p.q_norm) + sub * V);
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const int r = row0 + i * kRowsPerPass;
      const int64_t t = tok0 + r;
      const bool in = r < rows && t >= 0 && t < p.num_rows;
      ok |= static_cast<uint32_t>(in) << i;
      pos[i] = in ? p.positions[t] : -1;
      const bool ro = static_cast<uint64_t>(static_cast<int64_t>(pos[i])) < static_cast<uint64_t>(p.max_positions);
      rope |= static_cast<uint32_t>(ro) << i;
    }
#pragma unroll
    for (int i = 0; i < kAhead; ++i) load(p, i);
  }

  // Q has landed (the caller waited for q_full). qs: the tile's shared address.
  __device__ __forceinline__ void finish(const ExtendParams& p, uint32_t qs, int wg) {
    const bool norm = p.q_norm != nullptr, upper = sub >= L / 2;
#pragma unroll
    for (int i = 0; i < kPasses; ++i) {
      const uint32_t a = qs + sw128(row0 + i * kRowsPerPass, sub, BQ);
      const uint4 raw = lds128(a);
      const bool in = (ok >> i) & 1u, r = (rope >> i) & 1u;  // the same for both partners (one row)
      float c[V], sn[V], y[V];
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float mine = cs[i % kAhead][j], other = __shfl_xor_sync(0xffffffffu, mine, L / 2);
        c[j] = upper ? other : mine;
        sn[j] = upper ? mine : other;
      }
      if (i + kAhead < kPasses) load(p, i + kAhead);  // into the slot just read
      // Every lane takes the shuffles; q without a norm or a RoPE stays as it is (the prepare kernel's rule).
      const bool write = in && (norm || r);
      if (prep::cut_norm_rope_values<T, L, true>(raw, norm, wraw, p.q_eps, r, c, sn, sub, write, y))
        sts128(a, prep::pack_chunk<T>(y));
    }
    fence_proxy_async();  // these generic-proxy writes before the wgmma's (async proxy) reads
    named_sync(3 + wg, 128);
  }
};

// Consumer warpgroup cw (0 or 1): rows 64·cw .. 64·cw + 63 of q tile `qt`, the fa3-ov loop with
// the ring's mbarriers in place of the block barrier. BK 128 (fa3-ws128): S of a tile as one
// m64n128 GEMM per 16 head dims, held as two 64-key blocks (s[KH][32]), P as 8 k-steps of 16 keys.
// EARLY_Q (fa3-ws128nsq): Q released (q_empty) as soon as the last S GEMM is done, not after the
// last O GEMM, so that the producer gathers the next q tile's Q under the last O GEMM and the
// store. SPLIT_KV (fa3-ws128nsk): K of a stage awaited before its S GEMM and released when that is
// done, V awaited before its O GEMM and released after it. Both: the same instructions on the same
// values otherwise (same bits). PIN_P (fa3-ws128nso; measured: still SERIAL, -7%): ptxas hoists the O GEMM's
// wait above the softmax so as to interleave the P pack (which writes the registers the in-flight O
// GEMM reads) with the exps, serialising S, O and the softmax (session 9's SASS). Here every pack
// and the stage release take a +0.0f computed from the row sums (so from every exp), which the
// compiler cannot fold: none of the instructions that need the O GEMM done can move above the
// softmax, so the wait has no reason to either. x + 0.0f == x for the exps (>= +0): same bits.
// P2 (fa3-ws128ns2): FA3's intra-warpgroup overlap with a second P register set
// (pn): the softmax of tile t + 1 packs P(t + 1) into pn as its exps come (exp_pack_rows) while the
// in-flight O(t) reads pf, so nothing between the S wait and the O wait needs O(t) done and ptxas
// has no register reason to hoist the O wait; after it, pf = pn (32 moves a step). The loop is not
// unrolled by 2 to alternate the sets in place: that alone (even with one set) made ptxas spill 32
// bytes at the consumers' 216 registers. The arithmetic runs in fa3-ws128ns's order: O(t) = O(t - 1)
// + P(t) V(t) completes, then O is scaled by alpha(t + 1) (after the O wait, as before), then
// O(t + 1) adds P(t + 1) V(t + 1); P(t + 1) is the same exp of the same S with the same running max
// and l the same sums in the same order, only packed earlier: same bits.
// HOLD_O (fa3-wsnh / fa3-wsnsh / fa3-wsnph, not yet measured): found after run 2 on cubins
// (scripts/cubin_softmax_overlap.py): ptxas's scheduler puts the O wait (DEPBAR) early inside the
// softmax's basic block whatever the data dependences say; a never-taken warp-uniform branch on the
// row sums just before the wait ends that block, and the wait stays after every exp. It fits the
// registers only with 64-key stages at head_dim 128 (fa3-wsn family: O 64 + S 32 + P 16 in flight
// with the softmax; 0 spills) and at head_dim 64; with 128-key stages at head_dim 128 ptxas spills
// 240 bytes and serialises every wgmma, so no fa3-ws128 variant gets it. Same values, same bits.
// Measured (run 2): -9% at 4k: ptxas serialised every wgmma of it (C7513 in -Xptxas -v: "non wgmma
// instructions defining input registers of a wgmma between start and end of the pipeline stage";
// it merged pn with pf). Kept for A/B only. ptxas keeps the O wait above the softmax whatever the
// source says (nso: the pack pinned after the exps; S GEMMs not reading S's old values; the stage
// release or the rescale moved: all SERIAL in the cubin), and where the exps are forced before the
// wait it serialises every wgmma instead (C7513): see bench/results/h100_2026-11-24_s9_attn.
template <typename T, int HD, int STAGES, int BK, bool PINGPONG, bool O128, bool EARLY_Q, bool SPLIT_KV,
          bool PIN_P, bool P2, bool HOLD_O, int GROUPS, bool PERSIST>
__device__ __forceinline__ void ws_consume(const ExtendParams& p, const WsItem& it, unsigned char* smem, int pass,
                                           WsRing<STAGES>& ring, uint32_t bars) {
  using C = WsCfg<HD, STAGES, BK, GROUPS>;
  constexpr bool kPrepareQ = std::is_same_v<T, __nv_bfloat16> && !PERSIST && GROUPS == 2;
  WgTile<T, HD, C> w(p, it.qt, it.ext, smem, static_cast<int>(threadIdx.x) - 128, it.h, it.b);
  constexpr int kCB = WgTile<T, HD, C>::kCB;
  constexpr int kKH = BK / 64;
  const uint32_t full = bars, empty = bars + 8 * STAGES, q_full = bars + 16 * STAGES, q_empty = q_full + 8;
  const uint32_t v_full = q_empty + 8, v_empty = v_full + 8 * STAGES;  // SPLIT_KV only
  const int num_tiles = w.num_tiles;
  const int me = 1 + w.wg, other = 2 - w.wg;  // named barriers of the pingpong turns
  const auto wait_full = [&](int k) {  // the stage (SPLIT_KV: its K)
    mbar_wait(full + 8 * ring.stage(k), ring.phase(k));
    fence_proxy_async();  // the producer's cp.async writes (generic proxy) before wgmma's reads
  };
  const auto wait_v = [&](int k) {  // SPLIT_KV: the stage's V
    if constexpr (SPLIT_KV) {
      mbar_wait(v_full + 8 * ring.stage(k), ring.phase(k));
      fence_proxy_async();
    }
  };

  // prepare_q (bf16, one q tile a block: the host's ws_prepares_q): the loads before the tile
  // lands, the rewrite after. The other kernels carry no code for it (their registers as before).
  if constexpr (kPrepareQ) {
    WsQPrepare<T, HD, C::kBQ, HD == 128 && BK == 128 ? 4 : 8> qp;
    if (p.prepare_q) qp.begin(p, static_cast<int>(threadIdx.x) - 128 - 128 * w.wg, w.grow0, w.rows, w.start + w.q0);
    mbar_wait(q_full, static_cast<uint32_t>(pass) & 1u);
    if (p.prepare_q) qp.finish(p, w.qs, w.wg);
  }

  float o[kCB][32];
  float s[kKH][32];
  uint32_t pf[4 * kKH][4];
  uint32_t pn[P2 ? 4 * kKH : 1][4];  // P2: P(t + 1), packed while O(t) reads pf
#pragma unroll
  for (int i = 0; i < 32; ++i) {
#pragma unroll
    for (int h = 0; h < kKH; ++h) s[h][i] = 0.0f;
#pragma unroll
    for (int cb = 0; cb < kCB; ++cb) o[cb][i] = 0.0f;
  }
#pragma unroll
  for (int kk = 0; kk < 4 * kKH; ++kk)
#pragma unroll
    for (int j = 0; j < 4; ++j) pf[kk][j] = 0u;
  const auto issue_o = [&](int stage) {  // O128: m64n128 O GEMM instructions (head_dim 128)
    if constexpr (O128 && kCB == 2) w.issue_o128(o, pf, stage);
    else w.issue_o(o, pf, stage);
  };
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  const float sl2 = p.scale_log2;

  if constexpr (!kPrepareQ) mbar_wait(q_full, static_cast<uint32_t>(pass) & 1u);
  if (num_tiles > 0) {  // S(0) and P(0); O is zero, so a rescale changes nothing
    wait_full(0);
    fence_regs(s);
    wgmma_fence();
    w.issue_s(s, ring.stage());
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(s);
    if (SPLIT_KV) mbar_arrive(empty + 8 * ring.stage());  // K(0) read
    if (EARLY_Q && num_tiles == 1) mbar_arrive(q_empty);  // S(0) was the last read of Q
    w.mask_voted(s, 0);
    float mx[2], alpha[2];
    tile_max(s, sl2, m, mx);
    new_max_lazy(m, l, mx, alpha);
    exp_rows(s, m, l, sl2);
    pack_p<T>(s, pf);
  }
  // As wg_tile_ov: each wgmma's issue and wait in one branch; both consumers run every tile.
  for (int t = 0; t < num_tiles; ++t, ++ring.it) {
    const uint32_t release = (SPLIT_KV ? v_empty : empty) + 8 * ring.stage();
    if (t + 1 < num_tiles) {
      wait_full(1);
      if constexpr (PINGPONG) named_sync(me, 256);
      fence_regs(s);
      wgmma_fence();
      w.issue_s(s, ring.stage(1));
      wgmma_commit();
      wait_v(0);
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) fence_regs(o[cb]);
      fence_regs(pf);
      wgmma_fence();
      issue_o(ring.stage());
      wgmma_commit();
      if constexpr (PINGPONG) named_arrive(other, 256);
      wgmma_wait<1>();  // S(t + 1); O(t) may still run
      fence_regs(s);
      if (SPLIT_KV) mbar_arrive(empty + 8 * ring.stage(1));  // K(t + 1) read
      if (EARLY_Q && t + 2 == num_tiles) mbar_arrive(q_empty);  // S(t + 1) was the last read of Q
      w.mask_voted(s, t + 1);
      float mx[2], alpha[2];
      const bool grow = tile_max(s, sl2, m, mx);
      new_max_lazy(m, l, mx, alpha);
      if constexpr (P2) exp_pack_rows<T>(s, m, l, sl2, pn);  // under O(t): pf untouched
      else exp_rows(s, m, l, sl2);
      // PIN_P: +0.0f from the row sums (finite: every P <= 2^8), not foldable (IEEE: x * 0 may be -0 or NaN).
      const float z = PIN_P ? (l[0] + l[1]) * 0.0f : 0.0f;
      // HOLD_O: a branch on the row sums (never taken: a sum of exps is >= 0 or NaN, never -1) ends
      // the softmax's basic block, so ptxas cannot schedule the O wait above the exps.
      if constexpr (HOLD_O)
        if (__any_sync(0xffffffffu, l[0] + l[1] == -1.0f)) asm volatile("nanosleep.u32 1;\n" ::: "memory");
      wgmma_wait<0>();
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) fence_regs(o[cb]);
      fence_regs(pf);
      // The stage of tile t was read by this thread's warpgroup for the last time.
      mbar_arrive(PIN_P ? release + static_cast<uint32_t>(z) : release);
      if (grow) scale_o(o, alpha);
      if constexpr (PIN_P) pack_p_after<T>(s, pf, z);
      else if constexpr (P2) copy_p(pn, pf);
      else pack_p<T>(s, pf);
    } else {  // the last tile: O only
      wait_v(0);
      if constexpr (PINGPONG) named_sync(me, 256);
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) fence_regs(o[cb]);
      fence_regs(pf);
      wgmma_fence();
      issue_o(ring.stage());
      wgmma_commit();
      if constexpr (PINGPONG) named_arrive(other, 256);
      wgmma_wait<0>();
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) fence_regs(o[cb]);
      mbar_arrive(release);
    }
  }
  // Every S GEMM of this q tile is done: the producer may load the next Q.
  if (!EARLY_Q || num_tiles == 0) mbar_arrive(q_empty);
  w.store(o, l);
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// fa3-ws / fa3-wsp: the warp-specialised kernel (WsCfg); pairing and tile order as above, or
// PERSIST: a grid of at most one block per multiprocessor running ws_item's list. The ring and
// its phases run on across the q tiles of a block (no block-wide barrier after the role split).
template <typename T, int HD, int STAGES, bool PINGPONG, bool O128, int BK, bool PERSIST, bool EARLY_Q, bool SPLIT_KV,
          bool PIN_P, bool P2, bool HOLD_O, int GROUPS>
__global__ void __launch_bounds__(128 + 128 * GROUPS, 1) extend_wgmma_ws_kernel(ExtendParams p) {
  // One consumer: no pingpong partner; ws_item's persistent list counts 128-row tiles.
  static_assert(GROUPS == 2 || (!PINGPONG && !PERSIST), "fa3-wsn64: one consumer, no pingpong, not persistent");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = WsCfg<HD, STAGES, BK, GROUPS>;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
  const int tiles_max = (p.max_extend_len + C::kBQ - 1) / C::kBQ;
  int first = 0, second = -1;
  if constexpr (!PERSIST) {
    const int ext = min(max(p.extend_lens[blockIdx.z], 0), p.max_extend_len);
    const int tiles = (ext + C::kBQ - 1) / C::kBQ;
    if (!attn::extend_block_tiles(p.pair_q_tiles, tiles, static_cast<int>(blockIdx.x), static_cast<int>(gridDim.x),
                                  first, second))
      return;
  }
  const uint32_t bars = smem_addr(smem) + C::kBarOffset;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(bars + 8 * s, 128);                 // full: the producer's threads, through their copies
      mbar_init(bars + 8 * (STAGES + s), C::kConsumerThreads);  // empty: every consumer thread
    }
    mbar_init(bars + 16 * STAGES, 128);             // q_full
    mbar_init(bars + 16 * STAGES + 8, C::kConsumerThreads);  // q_empty
    if (SPLIT_KV)
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(bars + 16 * STAGES + 16 + 8 * s, 128);             // v_full
        mbar_init(bars + 16 * STAGES + 16 + 8 * (STAGES + s), C::kConsumerThreads);  // v_empty
      }
  }
  __syncthreads();
  WsRing<STAGES> ring;
  WsItem it{};
  int pass = 0;
  if (threadIdx.x < 128) {
    // One consumer (256 threads): every thread keeps the kernel's registers (up to 255 at one block
    // a multiprocessor), no reallocation needed.
    if constexpr (GROUPS == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 72;\n" ::: "memory");
#pragma unroll 1
    for (int k = 0;; ++k) {
      const int st = ws_item<PERSIST>(p, k, first, second, tiles_max, it);
      if (st == 0) break;
      if (st == 2) continue;
      ws_produce<T, HD, STAGES, BK, EARLY_Q, SPLIT_KV, GROUPS>(p, it, smem, pass++, ring, bars);
    }
    cp_async_wait<0>();
  } else {
    if constexpr (GROUPS == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 216;\n" ::: "memory");
    // Pingpong: consumer 0 takes the first turn (consumer 1 grants it), and at the end takes
    // consumer 1's last grant so that no named barrier is left half-arrived.
    const bool second_consumer = threadIdx.x >= 256;
    if (PINGPONG && second_consumer) named_arrive(1, 256);
#pragma unroll 1
    for (int k = 0;; ++k) {
      const int st = ws_item<PERSIST>(p, k, first, second, tiles_max, it);
      if (st == 0) break;
      if (st == 2) continue;
      ws_consume<T, HD, STAGES, BK, PINGPONG, O128, EARLY_Q, SPLIT_KV, PIN_P, P2, HOLD_O, GROUPS, PERSIST>(
          p, it, smem, pass++, ring, bars);
    }
    if (PINGPONG && !second_consumer) named_sync(1, 256);
  }
#else
  __trap();  // launch_extend_wgmma refuses devices other than sm_90
#endif
}

template <typename T, int HD, int STAGES, bool PINGPONG, bool O128, int BK = 64, bool PERSIST = false,
          bool EARLY_Q = false, bool SPLIT_KV = false, bool PIN_P = false, bool P2 = false,
          bool HOLD_O = false, int GROUPS = 2>
void launch_ws(cudaStream_t st, const ExtendParams& p) {
  using C = WsCfg<HD, STAGES, BK, GROUPS>;
  auto kernel = extend_wgmma_ws_kernel<T, HD, STAGES, PINGPONG, O128, BK, PERSIST, EARLY_Q, SPLIT_KV, PIN_P, P2,
                                       HOLD_O, GROUPS>;
  GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(C::kSmem)),
                 "allowing {} bytes of shared memory for attention_extend fa3-ws (head_dim {})", C::kSmem, HD);
  const int tiles = (p.max_extend_len + C::kBQ - 1) / C::kBQ;
  if constexpr (PERSIST) {
    const int64_t items = int64_t{tiles} * p.nq * p.num_reqs;
    if (items == 0) return;
    dim3 grid(static_cast<unsigned>(std::min<int64_t>(items, extend_multiprocessors())));
    kernel<<<grid, C::kBlockThreads, C::kSmem, st>>>(p);
    return;
  }
  dim3 grid(static_cast<unsigned>(p.pair_q_tiles ? (tiles + 1) / 2 : tiles), static_cast<unsigned>(p.nq),
            static_cast<unsigned>(p.num_reqs));
  kernel<<<grid, C::kBlockThreads, C::kSmem, st>>>(p);
}

template <typename T, int HD>
void launch_ws_variant(cudaStream_t st, const ExtendParams& p, WgVariant v) {
  switch (v) {
    case WgVariant::kWs: launch_ws<T, HD, 4, false, false>(st, p); return;
    case WgVariant::kWsP: launch_ws<T, HD, 4, true, false>(st, p); return;
    case WgVariant::kWsN: launch_ws<T, HD, 4, false, HD == 128>(st, p); return;  // head_dim 64: fa3-ws
    case WgVariant::kWsNP: launch_ws<T, HD, 4, true, HD == 128>(st, p); return;
    // 128-key stages: 64 KB a stage at head_dim 128, so 3 (Q + ring: 224 KB of the 227); 4 at 64.
    case WgVariant::kWs128: launch_ws<T, HD, HD == 128 ? 3 : 4, false, false, 128>(st, p); return;
    case WgVariant::kWs128P: launch_ws<T, HD, HD == 128 ? 3 : 4, true, false, 128>(st, p); return;
    case WgVariant::kWs128N: launch_ws<T, HD, HD == 128 ? 3 : 4, false, HD == 128, 128>(st, p); return;
    case WgVariant::kWs128S: launch_ws<T, HD, HD == 128 ? 3 : 4, false, false, 128, true>(st, p); return;
    // Session 9: fa3-ws128n on the persistent grid; and with the early Q release (head_dim 64:
    // fa3-ws128s / fa3-ws128s with it).
    case WgVariant::kWs128NS: launch_ws<T, HD, HD == 128 ? 3 : 4, false, HD == 128, 128, true>(st, p); return;
    case WgVariant::kWs128NSQ: launch_ws<T, HD, HD == 128 ? 3 : 4, false, HD == 128, 128, true, true>(st, p); return;
    case WgVariant::kWs128NSK:  // + K and V of a stage under their own barriers
      launch_ws<T, HD, HD == 128 ? 3 : 4, false, HD == 128, 128, true, true, true>(st, p);
      return;
    case WgVariant::kWs128NSO:  // fa3-ws128ns with the P pack and the release pinned after the softmax
      launch_ws<T, HD, HD == 128 ? 3 : 4, false, HD == 128, 128, true, false, false, true>(st, p);
      return;
    case WgVariant::kWs128NS2:  // fa3-ws128ns with a second P register set (the softmax under the O GEMM)
      launch_ws<T, HD, HD == 128 ? 3 : 4, false, HD == 128, 128, true, false, false, false, true>(st, p);
      return;
    // fa3-wsn / fa3-wsnp with the O wait held after the softmax; fa3-wsnsh: fa3-wsnh on the persistent grid.
    case WgVariant::kWsNH:
      launch_ws<T, HD, 4, false, HD == 128, 64, false, false, false, false, false, true>(st, p);
      return;
    case WgVariant::kWsNSH:
      launch_ws<T, HD, 4, false, HD == 128, 64, true, false, false, false, false, true>(st, p);
      return;
    case WgVariant::kWsNPH:
      launch_ws<T, HD, 4, true, HD == 128, 64, false, false, false, false, false, true>(st, p);
      return;
    // Session 12: fa3-wsn with one consumer on 64-row q tiles (twice the blocks of a short extend).
    case WgVariant::kWsN64:
      launch_ws<T, HD, 4, false, HD == 128, 64, false, false, false, false, false, false, 1>(st, p);
      return;
    default: GRT_FAIL("attention_extend fa3-ws: variant {} is not warp-specialised", static_cast<int>(v));
  }
}

}  // namespace

bool ws_prepares_q(const ExtendParams& p, DType dtype, WgVariant v) {
  // The kernels with the rewrite (kPrepareQ in ws_consume): one q tile a block, two consumers.
  const bool ws = v == WgVariant::kWs || v == WgVariant::kWsP || v == WgVariant::kWsN || v == WgVariant::kWsNP ||
                  v == WgVariant::kWs128 || v == WgVariant::kWs128P || v == WgVariant::kWs128N ||
                  v == WgVariant::kWsNH || v == WgVariant::kWsNPH;
  const auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  return ws && dtype == DType::BF16 && (p.hd == 64 || p.hd == 128) && p.positions != nullptr &&
         p.cos_sin != nullptr && aligned(p.cos_sin) && aligned(p.q_norm) && p.max_positions > 0;
}

void launch_extend_wgmma_ws(cudaStream_t stream, const ExtendParams& p, DType dtype, WgVariant v) {
  GRT_CHECK(!p.prepare_q || ws_prepares_q(p, dtype, v),
            "attention_extend fa3-ws: the Q tiles' prepare (variant {}, {}, head_dim {}) is not taken here", static_cast<int>(v),
            dtype_name(dtype), p.hd);
  with_type_and_head_dim(dtype, p.hd, [&]<typename T, int HD>() { launch_ws_variant<T, HD>(stream, p, v); });
}

}  // namespace grt::cuda
