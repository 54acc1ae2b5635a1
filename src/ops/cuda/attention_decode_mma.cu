// Paged decode attention on the tensor cores, for grouped-query models (2..16 query heads per kv
// head), bf16/f16, head_dim 64 and 128.
//
// Why: the lane-group kernel (attention_decode.cu) reduces every q·k product by warp shuffles,
// once per query head and token; with 8 heads per kv head that is issue/latency bound (qwen3-30b-
// a3b bs 1 ctx 1024: 21.9 + 9.6 us for 2 MB of KV a layer). Here the group's query heads are the
// rows of one m16n8k16 A tile (padded to 16 rows with zeros), so S = Q·Kᵀ and O += P·V are a few
// mma.sync per 16 tokens whatever the group (FA2 structure with a single 16-row q tile).
//
// Design:
//  - One block of 4 warps per (split, kv head, request); grid (grid_x, nkv, B). A request's split
//    count is min(max_splits, ceil(len / chunk)) from its live length read on the device, so it
//    does not depend on the grid or on other rows' contents (chunk and max_splits are the host's
//    choice by the batch's pairs bucket, attention_decode.cu's mma_chunk). Its splits are whole
//    tiles long where that keeps the count (only the last ends in a partial tile), else even
//    (H100, bench/results/h100_2026-11-25_session26 calls F-G, qwen3-0.6b bs 64 ctx 1024 in the
//    wide geometry's 512-token chunks: 1025 tokens in 3 even splits of 342 take 18 tile steps,
//    tiled 384 + 384 + 257 take 17: 3.92 -> 3.87 ms a step; 1024 tokens, 2 splits of 512 and 16
//    steps, 3.83; session 26 had read the gap as 5 splits of 205, the chunk-256 case; see session
//    27's README): block x takes
//    splits x, x + grid_x, ... (one each whenever the grid is wide enough); blocks past the count
//    exit right after pdl_wait.
//  - A split's tokens go through shared memory in tiles of 64, gathered through req_to_token with
//    cp.async into two stages (the next tile loads while this one is used; the table entries of
//    the tile after next are read one step ahead). Rows unpadded, their 16-byte chunks XOR-swizzled
//    by the row (MmaCfg::kv_at) for ldmatrix; padded rows (+16 bytes) had split every warp's copy
//    into 1.5x the L2 sector requests (session 25: qwen3-0.6b bs 64 attention 104.8 -> 101.1 us).
//  - Warp w owns tokens 16w..16w+15 of every tile (a slice of the tile's tokens, all of head_dim):
//    S (16 x 16) = Q·Kᵀ in HD/16 k-steps, online softmax per row in registers (exp2 with the
//    log2e-folded scale), P packed to bf16/f16 as the A fragment of O += P·V (HD/8 n-tiles). Each
//    warp keeps its own O, running max and sum; no barrier between warps inside a tile.
//  - End of a split: the 4 warps' (m, l, O) merge through shared memory (fixed warp order). One
//    split: the normalised output is written directly. Several: the normalised partial and its
//    log2-sum-exp go to scratch, each block counts the splits it did on a per-(request, kv head)
//    counter (threadFenceReduction: partials fenced before the count, the count before the reads),
//    and the block that completes the count merges all partials in split order — the same bits
//    whichever block is last — and resets the counter to 0, so every launch, eager or replayed,
//    finds it at 0. The counters are this module's zero-initialised __device__ array (per device):
//    as for the fused path, two decode attentions must not run concurrently on one device.
//  - Cluster merge (p.cluster > 1, small batch): the grid's x is one thread-block cluster per
//    (request, kv head); the normalised partials and log2-sum-exps stay in each block's shared
//    memory (one slot per split it does), and after cluster.sync the cluster's threads share the
//    output elements, read every split's partial through distributed shared memory (map_shared_rank)
//    and merge them in split order with the global merge's arithmetic: the same bits, without the
//    scratch store, fence, counter atomic and the merging block's L2 reads on the dependent chain
//    (at bs 1 the kernel is a chain of memory trips, not bandwidth: 2 MB of KV in 12.9 us).
//    Blocks past a request's splits stay for the two cluster barriers (the second keeps every
//    block's shared memory alive until all reads are done).
//  - Carry (p.carry; on by default where a block may do several splits, GRAPHRT_DECODE_MMA_CARRY=0
//    for the kernel without it): when a block does several splits (grid x < splits: below SMs
//    pairs with long requests, or at large batch with GRAPHRT_DECODE_MMA_WIDE=0, e.g. llama-3.1-8b
//    bs 64 ctx 1024: 5 splits on 3 blocks), its tiles form one stream: the next
//    split's table entries and first tile are issued during the current split's last tile and
//    merge (which uses the stage not in flight), so the two stages stay busy across split
//    boundaries instead of draining at each (a table trip and a K/V trip with nothing in flight).
//    Same tiles, same arithmetic in the same order: the same bits as without it. Measured
//    (bench/results/h100_2026-11-24_s7_dattn): no change at 1-2 splits a block (the other blocks'
//    copies keep DRAM busy while one drains), -0.6% at 5-6 (llama bs 64 ctx 4096, wide off).
//  - Early (p.early, carry kernel only; off by default, GRAPHRT_DECODE_MMA_EARLY=1: it measured no
//    gain, the metadata lines being L2 hits at small batch): the lengths, request
//    slots and the first tile's table entries are read before pdl_wait, so two of the three
//    dependent trips in front of the first K/V copy overlap the predecessor's tail (in a graph
//    the blocks are resident while prepare_qkv runs). An exception to point 1 of pdl.cuh's
//    contract that holds because no kernel writes that metadata: the host copies it (eager
//    uploads, replay-prepare into persistent buffers) before the forward's kernels, and only the
//    immediate predecessor (with trigger first: also its predecessor, see "Preload" (a)) can still
//    be running when this kernel starts (pdl.cuh points 2 and 3).
//    q and the K/V cache (prepare_qkv writes the new token's) are read after the wait.
//  - Kv groups (p.kv_per_block = KH 2 or 4; opt-in GRAPHRT_DECODE_MMA_KV_GROUP, wide geometry
//    only): a block takes KH consecutive kv heads of one (request, split); a tile row is one
//    token's K (V) of those heads (KH x HD contiguous), tiles of 64 / KH tokens, warp w on head
//    w / (4 / KH), the warp merge over a head's warps, Q packed (KH x group rows, row 16 zero).
//    Its premise (DRAM locality of 256-byte pieces) was refuted by bench/results/
//    h100_2026-11-24_s8_bs64 (every read pattern within 2%), and its A/B (run 2) measured it
//    slower (llama bs 64 +0.12..+0.25 ms at KH 4, isolated 108.5 -> 111.3 us): opt-in, off.
//  - Swap (p.swap; GRAPHRT_DECODE_MMA_SWAP, wide geometry's plain kernel, groups <= 8): a group
//    of G query heads fills G of the A tile's 16 rows, so half or more of every mma is padding.
//    Transposed, the tokens are the 16 rows and the heads the 8 columns: Sᵀ = K·Qᵀ (A: K from
//    the stage by ldmatrix, B: Q rows from registers) and Oᵀ += Vᵀ·Pᵀ (A: V by ldmatrix .trans,
//    B: the packed Sᵀ transposed in registers by movmatrix), so a warp's 16 tokens cost HD / 16 +
//    HD / 16 mma instead of HD / 8 + HD / 8 (the ldmatrix count is the same: the tile's bytes are
//    read once either way). The softmax runs per column (8 lanes of a t4 hold a head's 16
//    tokens). Other summation order: bits differ from the unswapped kernel, as a function of the
//    shape and of the switch only. On by default (auto) where it applies: measured a small gain
//    (bench/results/h100_2026-11-24_s8_bs64 run 3: -0.7..-0.9 us a layer at bs 64, -9%
//    instructions): the mma was not what held the kernel ~9 us above its copy skeleton.
//  - Warp pipe (p.warp_pipe, swap kernel only; GRAPHRT_DECODE_MMA_WARP_PIPE, s8-dattn2): a warp
//    only ever reads its own 16-token slice of a tile, so it can copy that slice itself (its 32
//    lanes take the slice's rows: as many cp.async a thread as the block-wide roles), wait for it
//    with cp.async.wait_group + __syncwarp and free it with __syncwarp: no __syncthreads in the
//    tile loop (one at tile 0, for Q, which the block copies). The 4 warps of a block become 4
//    independent streams, so one slow copy stalls one warp, not the block, and a warp done with
//    its math issues its next copy at once instead of waiting for the slowest warp. Same tiles,
//    same arithmetic: the same bits as the swapped kernel without it. On by default: measured a
//    small gain (bench/results/h100_2026-11-24_s8_dattn2: llama bs 64 107.0 -> 105.9 us isolated,
//    graph -0.02 ms on average at llama and qwen bs 64); the block start and merge are untouched.
//  - Preload (p.preload / kPreload; GRAPHRT_DECODE_MMA_PRELOAD, s11-dattn1; the small-batch
//    kernels only: one kv head a block, no swap, batch x kv heads below the SM count): before
//    pdl_wait a block reads the metadata (as "Early") and issues the K/V copies of its first tile
//    (the carry kernel: of its tile stream), except two kinds of rows, copied after the wait into
//    the same shared rows with Q: the positions this step stores (the last, len - 1, for a decode
//    row; from kv_new_from on for an extend's row) and any row on slot 0. At bs 1
//    (ctx 1024: 16 splits of one 64-token tile) that is every K/V byte of the block, so the KV
//    trip overlaps prepare_qkv instead of following it. A second exception to point 1 of pdl.cuh's
//    contract, which holds because nothing that may still run writes those rows:
//    (a) who may run: the kernel launched just before this one, and the kernels before it back to
//        the nearest one that waits before it triggers (pdl.cuh points 2 and 3: that one's
//        predecessor has completed). In the decode forward (model/decoder_model.cpp) that is
//        prepare_qkv; with GRAPHRT_PDL_TRIGGER_FIRST=prepare|all (prepare_qkv triggers before its
//        wait) also the qkv projection before it (a GEMV that waits first, or a cuBLAS kernel,
//        which never triggers: prepare_qkv's blocks only start as its blocks exit): it writes only
//        its qkv output, whose q part this kernel reads after the wait. In a MIXED step's decode
//        tail (ops/attention.cpp) the extend attention or its output memset (no PDL attribute: a
//        full edge from prepare_qkv), which write only `out`, with prepare_qkv before them
//        (complete). Eager and graph runs launch the same sequence;
//        the host's metadata and table uploads are copies before the forward's kernels (no kernel
//        writes seq_lens, req_pool_indices or req_to_token: see "Early").
//    (b) what it writes: prepare_qkv stores one K/V row per token row at out_cache_loc. A decode
//        row's new token is position len - 1 (len = the length after this step, as seq_lens
//        holds); the rows of an extend run as decode rows (runtime/extend_rows.h: one row per
//        token, several rows of one request) store positions prefix .. len - 1 of their request,
//        and p.kv_new_from gives that prefix per row. Every position before it (len - 1 without
//        kv_new_from) was stored by an earlier step's kernel (a prefill, or an earlier decode),
//        whose slot the allocator handed out then and does not hand out again while the request
//        lives (shared prefixes are read-only).
//    (c) padded rows (decode graphs: request slot = the padding request, seq_len 1, out_cache_loc
//        0) write the sink slot 0 every step; tables of invalid or padding requests, and invalid
//        entries (kv_slot), point at it. So rows on slot 0 are never preloaded, whatever their
//        position: real requests never hold slot 0 (runtime/batch_ranges.h), so this costs them
//        nothing, and a padded row's bits stay those of the kernel without preload.
//    q (prepared in place by prepare_qkv) is read after the wait. Same tiles, same arithmetic in
//    the same order: the same bits as without it (two cp.async groups instead of one for the first
//    tile; the loop's wait_group covers both). Measured (bench/results/h100_2026-11-24_s11_dattn1):
//    qwen3-0.6b / llama-3.1-8b / qwen3-30b-a3b bs 1 -0.02 / -0.02 / -0.01 ms a step; the window is
//    small because the blocks land only when prepare_qkv triggers (after its own wait: ~1.3 us
//    before it ends), and the metadata and table trips come first. On by default where the grid
//    is one wave (launch_mma). GRAPHRT_PDL_TRIGGER_FIRST=prepare (the default; pdl.cuh point 3,
//    s12-pdlfirst) widens the window: prepare_qkv triggers at entry, so the blocks may land during
//    the qkv GEMV, as far as registers allow: at qwen3-0.6b bs 1 its 256 blocks of 256 threads
//    (2 a SM) hold the whole register file of 124 SMs, so they land as those leave (gap -1.28 ->
//    -2.56 us, advance 8.19 -> 7.17 us, traced with =all); qwen3-30b-a3b's 160 leave room (gap
//    -1.54 -> -9.2 us). Step: bs 1 -0.018 / -0.054 / -0.033 ms (qwen / MoE / llama).
//  - PDL (ops/cuda/pdl.cuh): everything else is read after pdl_wait; pdl_trigger after the main
//    loop, or right after pdl_wait with p.early_trigger ("Early trigger": GRAPHRT_DECODE_MMA_
//    EARLY_TRIGGER=1, s8-dattn2): the next kernel (the o_proj GEMV at small batch) is scheduled
//    while this one runs and reads its weights before its own pdl_wait (pdl.cuh point 3: it waits
//    for this grid's completion before reading anything this kernel writes). Blocks are only
//    scheduled after every block of this grid has triggered (so none of this grid's blocks waits
//    for space behind them); at large batch the next kernel is cuBLASLt (no PDL attribute): no
//    effect there. Off by default: measured slower in every case it changes (bs 1 / 8: +0.01..
//    +0.07 ms a step, bench/results/h100_2026-11-24_s8_dattn2).
#include "ops/cuda/attention_decode_mma.h"

#include <cuda_bf16.h>
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "core/error.h"
#include "device/cuda/cuda_check.h"
#include "ops/cuda/attention_common.cuh"
#include "ops/cuda/attention_mma.cuh"
#include "ops/cuda/pdl.cuh"
#include "ops/cuda/prepare_qkv_math.cuh"

namespace grt::cuda {
namespace {

using attn::cp_async16;
using attn::cp_async16_hint;
using attn::l2_evict_first_policy;
using attn::cp_async_commit;
using attn::cp_async_wait;
using attn::fast_exp2;
using attn::TileEntries;
using attn::ldmatrix_x4;
using attn::ldmatrix_x4_trans;
using attn::mma16816;
using attn::pack2;
using attn::smem_addr;

__device__ unsigned int g_mma_counters[kDecodeMmaCounters];  // zero at module load; 0 between launches

// KH: kv heads per block (1: the s5-s7 kernel; 2, 4: "kv groups", see the header comment). A tile
// row is one token's K (or V) of the block's KH heads: KH x HD contiguous elements of the cache.
template <int HD, int KH = 1>
struct MmaCfg {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kWph = kWarps / KH;                 // warps per kv head: 16 tokens each
  static constexpr int kBK = 16 * kWph;                    // tokens per tile
  // Elements per shared K/V row: KH x HD, unpadded (a multiple of 128 bytes), its 16-byte chunks
  // XOR-swizzled by the row (kv_at): ldmatrix without bank conflicts, and each row's copy lands in
  // whole 128-byte segments. The old padding (+16 bytes a row) split every warp's copy of two rows
  // into 6 segments instead of 4, each asking L2 for its sectors again: 1.5x the ideal sectors and
  // an L2 hit rate of 38% at qwen3-0.6b bs 64 (ncu, bench/results/h100_2026-11-25_session25).
  static constexpr int kPitch = KH * HD;
  static constexpr int kQPitch = HD + 8;                   // elements per shared Q row
  static constexpr int kChunks = KH * HD / 8;              // 16-byte chunks per K/V row
  static constexpr int kRowsPerPass = kThreads / kChunks;  // rows the block copies at once
  static constexpr int kKvRows = kBK / kRowsPerPass;       // K/V rows per thread and tile
  static constexpr int kQChunks = HD / 8;                  // 16-byte chunks per Q row
  static constexpr int kQRowsPerPass = kThreads / kQChunks;
  // Q rows in shared memory: KH = 1: 16 (rows past the group zero-filled, as in s5-s7); KH > 1:
  // the KH x G query heads packed (row hh * G + r; KH x G <= 16) and row 16 all zero, which the
  // lanes of rows r >= G of a head's 16-row A tile read.
  static constexpr int kQSmemRows = KH == 1 ? 16 : 17;
  static constexpr int kQPasses = (kQSmemRows + kQRowsPerPass - 1) / kQRowsPerPass;
  // The K/V stages start 128-byte aligned after the Q rows (the swizzle's bank pattern); 2-byte
  // elements (bf16 / f16, the kernel's only types).
  static constexpr int kQElems = (kQSmemRows * kQPitch * 2 + 127) / 128 * 64;
  static constexpr int kTileElems = kBK * kPitch;
  static constexpr size_t kSmem = (size_t{kQElems} + size_t{2 * 2} * kTileElems) * 2;  // Q + two stages of K and V
  static_assert(HD % 64 == 0);  // rows of whole 128-byte groups of 8 chunks
  // Element offset of 16-byte chunk c of K/V tile row r (the chunk's low 3 bits XOR the row's).
  static __device__ __forceinline__ int kv_at(int r, int c) { return r * kPitch + ((c ^ (r & 7)) << 3); }
  // ldmatrix lane addresses of row r, head hh of the row, chunks b + 2 kk (b = 0, 1) for kk = 0, 1, ...:
  // byte offset kv_lane(r, hh, b) + ((32 kk) ^ kv_xor(r)) from the tile's start.
  static __device__ __forceinline__ uint32_t kv_lane(int r, int hh, int b) {
    return static_cast<uint32_t>((r * kPitch + hh * HD) * 2 + ((b ^ (r & 1)) << 4));
  }
  static __device__ __forceinline__ uint32_t kv_xor(int r) { return static_cast<uint32_t>((r & 6) << 4); }
  // Blocks per SM: 3 at head_dim 128 (68-69 KB each of 228), 4 at 64 (register bound).
  static constexpr int kOcc = HD == 128 ? 3 : 4;
  static_assert(KH == 1 || KH == 2 || KH == 4);
  static_assert(kThreads % kChunks == 0 && kBK % kRowsPerPass == 0 && kThreads % kQChunks == 0);
  static_assert(KH > 1 || 16 % kRowsPerPass == 0);
  // The warp merge (4 x 16 x HD floats) and the split weights (16 x 64 floats) reuse the stages.
  static_assert(size_t{kWarps} * 16 * HD * 4 <= size_t{4} * kTileElems * 2);
  // Carry: the warp merge fits in one stage (K and V of one tile), the one not in flight.
  static_assert(size_t{kWarps} * 16 * HD * 4 <= size_t{2} * kTileElems * 2);
  static_assert(size_t{16} * kDecodeMmaMaxSplits * 4 <= size_t{4} * kTileElems * 2);
  // Cluster path: each split's normalised partial (16 x HD floats) and log2-sum-exp (16 floats)
  // stay in the block's shared memory after kSmem, one slot per split the block does.
  static constexpr size_t kSlotFloats = size_t{16} * HD + 16;
  static_assert(kSlotFloats > 0);  // (referenced: KH > 1 configurations never use the cluster path)
  static size_t smem_bytes(int slots) { return kSmem + static_cast<size_t>(slots) * kSlotFloats * 4; }
};
// 3 blocks an SM at head_dim 128 (68.25 KB each; KH > 1 up to 384 bytes more: 17 Q rows rounded to 128 bytes).
static_assert(MmaCfg<128, 1>::kSmem == size_t{16 * 136 + 4 * 64 * 128} * 2);
// Every configuration's kOcc blocks fit an SM's 228 KB (1 KB reserved a block).
template <int HD, int KH>
constexpr bool kFitsOcc = MmaCfg<HD, KH>::kOcc * (MmaCfg<HD, KH>::kSmem + 1024) <= size_t{228} * 1024;
static_assert(kFitsOcc<128, 1> && kFitsOcc<128, 2> && kFitsOcc<128, 4>);
static_assert(kFitsOcc<64, 1> && kFitsOcc<64, 2> && kFitsOcc<64, 4>);

template <typename T>
__device__ __forceinline__ void store4(T* dst, float4 v) {
  uint2 u;
  u.x = pack2<T>(v.x, v.y);
  u.y = pack2<T>(v.z, v.w);
  *reinterpret_cast<uint2*>(dst) = u;
}

__device__ __forceinline__ float4 fma4(float w, float4 x, float4 acc) {
  return make_float4(fmaf(w, x.x, acc.x), fmaf(w, x.y, acc.y), fmaf(w, x.z, acc.z), fmaf(w, x.w, acc.w));
}

// The transpose of an 8 x 8 b16 matrix held in fragment layout (this lane: row lane / 4, columns
// 2 (lane % 4), + 1) into the same layout.
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// One warp's 16 tokens of a tile, transposed ("Swap" in the header comment): Sᵀ = K·Qᵀ (16 tokens
// x 8 heads, the heads past the group score against zero Q rows and are never read), the online
// softmax per head (a column: this lane's tokens g, g + 8, max over the 8 lanes of its t4), and
// Oᵀ += Vᵀ·Pᵀ (HD / 16 m-tiles of dims; Pᵀ's B fragments from the packed Sᵀ by movmatrix).
// k_addr: this lane's ldmatrix address of the K A tile's first k-step (token lane % 16, dims
// 8 (lane / 16)), step kk at k_addr + ((32 kk) ^ k_xor) (MmaCfg::kv_lane); v_addr, v_xor: of the
// transposed V A tile (token lane % 8 + 8 (lane / 16), dims 8 ((lane / 8) % 2)).
template <typename T, int HD>
__device__ __forceinline__ void swap_tile(uint32_t k_addr, uint32_t k_xor, uint32_t v_addr, uint32_t v_xor,
                                          const uint32_t (&qf)[HD / 16][4], int key0, int n, int g, float sl2,
                                          float (&m)[2], float (&l)[2], float (&o)[HD / 16][4]) {
  // Two accumulators (even / odd k-steps): two independent mma chains, summed in a fixed order.
  float sa[4] = {0.0f, 0.0f, 0.0f, 0.0f}, sb[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk) {
    uint32_t af[4];
    ldmatrix_x4(af, k_addr + ((32u * kk) ^ k_xor));
    mma16816<T>(kk % 2 == 0 ? sa : sb, af, qf[kk][0], qf[kk][1]);
  }
  // s[e]: token g + 8 (e / 2), head 2 t4 + e % 2.
  float s[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) s[e] = sa[e] + sb[e];
  if (key0 + 16 > n) {  // tokens past the split: no weight
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (key0 + g + 8 * (e / 2) >= n) s[e] = -INFINITY;
  }
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    float mx = fmaxf(s[c], s[2 + c]);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 4));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 8));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
    const float mn = fmaxf(m[c], mx * sl2);  // finite: the warp has a token of the split
    const float alpha = fast_exp2(m[c] - mn);
    m[c] = mn;
    s[c] = fast_exp2(fmaf(s[c], sl2, -mn));
    s[2 + c] = fast_exp2(fmaf(s[2 + c], sl2, -mn));
    l[c] = l[c] * alpha + (s[c] + s[2 + c]);
#pragma unroll
    for (int j = 0; j < HD / 16; ++j) {
      o[j][c] *= alpha;
      o[j][2 + c] *= alpha;
    }
  }
  // Pᵀ (16 tokens x 8 heads) as the B fragment: b0 tokens 2 t4 (+1) of head g, b1 tokens + 8.
  const uint32_t b0 = movmatrix_trans(pack2<T>(s[0], s[1]));
  const uint32_t b1 = movmatrix_trans(pack2<T>(s[2], s[3]));
#pragma unroll
  for (int j = 0; j < HD / 16; ++j) {
    uint32_t af[4];
    ldmatrix_x4_trans(af, v_addr + ((32u * j) ^ v_xor));
    mma16816<T>(o[j], af, b0, b1);
  }
}

// kCarry: the block's tiles form one stream across its splits (see "Carry" in the header comment);
// false: every split fills and drains the two stages on its own (the s5 kernel, kept for the A/B).
// KH > 1 (kv groups): only the global merge without carry (the wide geometry's one split a block).
// kSwap: the transposed tile math (see "Swap" in the header comment); the wide geometry's plain
// kernel only (one kv head a block, global merge, no carry), groups of at most 8.
// kWarpPipe (with kSwap only): each warp copies, waits for and frees its own 16-token slice of
// every tile ("Warp pipe" in the header comment): no block barrier in the tile loop.
// kPreload (KH = 1, no swap: the small-batch kernels): the block's first tile is copied before
// pdl_wait, except the rows this step may write ("Preload" in the header comment). kFusePrepare
// (with kPreload, bf16): the instances that may run the fused prepare (DecodeMmaParams::fuse_prepare).
template <typename T, int HD, bool kCluster, bool kCarry, int KH = 1, bool kSwap = false, bool kWarpPipe = false,
          bool kPreload = false, bool kFusePrepare = false, bool kOptIn = false>
__global__ void __launch_bounds__(MmaCfg<HD, KH>::kThreads, MmaCfg<HD, KH>::kOcc) decode_mma_kernel(DecodeMmaParams p) {
  using C = MmaCfg<HD, KH>;
  static_assert(!kFusePrepare || kPreload);
  // The fused prepare's code only in its own instances (DecodeMmaParams::fuse_prepare, off by
  // default), so the default preload kernels do not carry it (session 33: see launch_typed).
  // prepare_qkv_'s CUDA dtypes: bf16 (and f32).
  constexpr bool kFuseOk = kFusePrepare && std::is_same_v<T, __nv_bfloat16>;
  // The opt-in switches measured as losses (DecodeMmaParams::early_trigger, kv_evict_first; off by
  // default) likewise only in instances of their own (kOptIn): the default kernels do not carry
  // their branches, the evict-first copies in the tile loop among them (session 34).
  const bool early_trigger = kOptIn && p.early_trigger;
  const bool kv_evict_first = kOptIn && p.kv_evict_first;
  static_assert(KH == 1 || (!kCluster && !kCarry));
  static_assert(!kSwap || (KH == 1 && !kCluster && !kCarry));
  static_assert(!kWarpPipe || kSwap);
  static_assert(!kPreload || (KH == 1 && !kSwap));
  static_assert(!kPreload || C::kKvRows <= 32);  // the deferred-row mask
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __shared__ float sh_m[C::kWarps][16], sh_l[C::kWarps][16];
  __shared__ float sh_wsum[16];
  __shared__ bool sh_last;
  T* qs = reinterpret_cast<T*>(smem_raw);
  // Stage s: K at kvs + 2s * tile, V at kvs + (2s + 1) * tile (after the Q rows: 16 x (HD + 8) at
  // KH = 1, 17 x (HD + 8) at KH > 1, rounded up to 128 bytes); rows addressed by MmaCfg::kv_at.
  T* kvs = qs + C::kQElems;
  float* scratch = reinterpret_cast<float*>(kvs);  // after the loop: warp partials, split weights
  // Cluster path: [slots][16][HD] partials, then [slots][16] log2-sum-exps (MmaCfg::smem_bytes).
  float* keep = reinterpret_cast<float*>(smem_raw + C::kSmem);
  float* keep_lse = keep + static_cast<size_t>(p.cluster_slots) * 16 * HD;

  // kCarry, kPreload or p.idle_exit: the request's length and slot are read before pdl_wait (host-
  // written decode metadata: see "Early" in the header comment), with p.early or kPreload also the
  // table; kPreload also the first tile's K/V rows that no kernel of this step writes ("Preload");
  // everything else after it.
  if constexpr (!kCarry && !kPreload) {
    if (!p.idle_exit) {  // (with idle_exit: below, once the block knows it works)
      pdl_wait();
      if (early_trigger) pdl_trigger();  // ("Early trigger" in the header comment)
    }
  }
  const int kvh = blockIdx.y, b = blockIdx.z;
  // The length and the request slot in one trip to memory (the slot is needed for the table row).
  const int32_t req = p.req_pool_indices[b];
  const int64_t len = min(max(static_cast<int64_t>(p.seq_lens[b]), int64_t{0}), p.max_context);
  const int splits =
      static_cast<int>(min(static_cast<int64_t>(p.max_splits), max(int64_t{1}, (len + p.chunk - 1) / p.chunk)));
  // Uniform over the block, and over a cluster (one request and kv head) when splits == 1.
  // Cluster blocks past the splits of a longer request stay for the cluster barriers below.
  const bool idle = static_cast<int>(blockIdx.x) >= splits;
  // Idle exit (DecodeMmaParams::idle_exit): an idle block has read only the host-written lengths
  // and slots, and writes nothing: it leaves before pdl_wait, so it does not hold its slot until
  // the predecessor completes, and the working blocks behind it in a multi-wave grid start sooner.
  // Block 0 of every (request, kv head) is never idle and waits (pdl.cuh point 2).
  if (p.idle_exit && idle && (!kCluster || splits == 1)) return;
  if constexpr (!kCarry && !kPreload) {
    if (p.idle_exit) {
      pdl_wait();
      if (early_trigger) pdl_trigger();
    }
    if (idle && (!kCluster || splits == 1)) return;
    if (idle && !early_trigger) pdl_trigger();  // (the loop below, where the others trigger, is empty here)
  }

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int G = p.group;  // rows of a head's 16-row tile in use
  const int GR = KH * G;  // query heads of the block (KH kv heads; blockIdx.y is the kv group for KH > 1)
  const int first_head = kvh * GR;
  const int32_t* table = (req >= 0 && req < p.max_reqs) ? p.req_to_token + req * p.max_context : nullptr;
  // Tokens a split: a whole number of tiles where that keeps the split count, so that only the
  // last split ends in a partial tile (1025 tokens in 5 splits: 256 x 4 + 1, 17 tile steps, not
  // 205 x 5, 20). Where rounding up would leave splits empty (1025 in 16: 128-token splits fill
  // only 9), the even share as before: the split count, and so the parallelism, never drops.
  const int64_t even_split = (len + splits - 1) / splits;
  // (At least one tile: a row of length 0 keeps per_split 0, without a division by zero.)
  const int64_t tiled_split = max(int64_t{1}, (even_split + C::kBK - 1) / C::kBK) * C::kBK;
  const int64_t per_split = (len + tiled_split - 1) / tiled_split == splits ? tiled_split : even_split;

  // Copy roles: this thread moves 16-byte chunk `chunk` of rows crow, crow + kRowsPerPass, ...
  // kWarpPipe: the K/V rows are those of the warp's own slice (rows 16 w + lane / kChunks, + 32 /
  // kChunks, ...: as many a thread as kKvRows); Q keeps the block's roles (qchunk, qrow below).
  constexpr int kWarpRowStep = C::kChunks <= 32 ? 32 / C::kChunks : 1;  // rows a warp copies at once
  static_assert(!kWarpPipe || (C::kChunks <= 32 && 16 % kWarpRowStep == 0 && 16 / kWarpRowStep == C::kKvRows));
  const int chunk = (kWarpPipe ? tid % 32 : tid) % C::kChunks;
  const int crow = kWarpPipe ? (tid / 32) * 16 + (tid % 32) / C::kChunks : tid / C::kChunks;
  constexpr int kRowStep = kWarpPipe ? kWarpRowStep : C::kRowsPerPass;  // between a thread's K/V rows
  const int64_t width = static_cast<int64_t>(p.nkv) * HD;
  const T* kc = static_cast<const T*>(p.k_cache) + static_cast<int64_t>(kvh) * KH * HD + chunk * 8;
  const T* vc = static_cast<const T*>(p.v_cache) + static_cast<int64_t>(kvh) * KH * HD + chunk * 8;

  // Q tile: row r = query head first_head + r; rows past the group zero-filled. Committed with
  // the first split's first tile (one cp.async group). Not for idle blocks (no copy left behind).
  // KH > 1: rows hh * G + r packed, row 16 zero (MmaCfg::kQSmemRows).
  const auto load_q = [&] {
    const int qchunk = KH == 1 && !kWarpPipe ? chunk : tid % C::kQChunks;
    const int qrow = KH == 1 && !kWarpPipe ? crow : tid / C::kQChunks;
    const T* q = static_cast<const T*>(p.q) + static_cast<int64_t>(b) * p.q_stride +
                 static_cast<int64_t>(first_head) * HD + qchunk * 8;
#pragma unroll
    for (int i = 0; i < C::kQPasses; ++i) {
      const int r = qrow + i * C::kQRowsPerPass;
      if (KH > 1 && r >= C::kQSmemRows) continue;
      const bool ok = r < GR;
      cp_async16(smem_addr(qs + r * C::kQPitch + qchunk * 8), ok ? q + static_cast<int64_t>(r) * HD : q, ok);
    }
  };
  if constexpr (!kCarry && !kPreload)
    if (!idle) load_q();

  // Fragment ownership (mma layouts): this lane holds rows g and g + 8 (query heads), score
  // columns (tokens) and output columns (dims) 2 t4, 2 t4 + 1 of every 8-column tile.
  const int g = lane / 4, t4 = lane % 4;
  // ldmatrix lane addresses (elements): Q/A: row lane%16, col 8*(lane/16); K/B: token (lane%8) +
  // 8*(lane/16), dim 8*((lane/8)%2); V/B transposed: token (lane%8) + 8*((lane/8)%2), dim 8*(lane/16).
  // Warp w works on kv head hh = w / kWph of the block, tokens 16 sl..16 sl + 15 of every tile
  // (KH = 1: hh 0, sl w). KH > 1: the A rows past the group read the zero Q row 16.
  const int hh = KH == 1 ? 0 : warp / C::kWph, sl = KH == 1 ? warp : warp % C::kWph;
  const int qr = lane % 16;
  const int a_row = KH == 1 ? qr : (qr < G ? hh * G + qr : 16);
  const int a_off = a_row * C::kQPitch + (lane / 16) * 8;
  const int k_row = sl * 16 + (lane % 8) + (lane / 16) * 8, v_row = sl * 16 + (lane % 8) + ((lane / 8) % 2) * 8;
  const uint32_t k_off = C::kv_lane(k_row, hh, (lane / 8) % 2), k_xor = C::kv_xor(k_row);
  const uint32_t v_off = C::kv_lane(v_row, hh, lane / 16), v_xor = C::kv_xor(v_row);
  const float sl2 = p.scale_log2;

  uint32_t qf[HD / 16][4];  // kSwap: qf[kk][0..1] are the Qᵀ B fragments
  bool q_in_regs = false;
  int done = 0;  // splits this block finished
  T* out = static_cast<T*>(p.out);

  // Tokens of split s (0 only for trailing splits: a block's splits come in increasing order).
  const auto split_tokens = [&](int s) {
    const int64_t start = s * per_split;
    return static_cast<int>(max(int64_t{0}, min(len, start + per_split) - start));
  };
  // This thread's rows of the next tile to issue (read a tile ahead; attn::TileEntries).
  TileEntries<C::kKvRows> slots;
  auto load_slots_of = [&](int s, int t) {
    slots.read(table != nullptr ? table + s * per_split : nullptr, t * C::kBK + crow, kRowStep, split_tokens(s));
  };
  // K/V copies: under the L2 evict-first policy with kv_evict_first (read once a step).
  const uint64_t kv_policy = kv_evict_first ? l2_evict_first_policy() : 0;
  const auto copy_kv = [&](uint32_t dst, const T* src, bool ok) {
    if (kv_evict_first) cp_async16_hint(dst, src, ok, kv_policy);
    else cp_async16(dst, src, ok);
  };
  const auto slot_ok = [&](int i) { return slots.ok(i); };
  const auto slot_of = [&](int i) { return slots.slot(i, p.num_slots); };
  auto issue_tile = [&](int stage) {
    T* ks = kvs + (2 * stage) * C::kTileElems;
    T* vs = ks + C::kTileElems;
#pragma unroll
    for (int i = 0; i < C::kKvRows; ++i) {
      const int r = crow + i * kRowStep;
      const bool ok = slot_ok(i);
      const int64_t off = ok ? slot_of(i) * width : 0;
      copy_kv(smem_addr(ks + C::kv_at(r, chunk)), kc + off, ok);
      copy_kv(smem_addr(vs + C::kv_at(r, chunk)), vc + off, ok);
    }
  };
  // kCarry: the next tile to issue is tile `nt` of split `ns` (ns >= splits: none left). Uniform
  // over the block. Stages alternate over the block's whole tile stream: its c-th tile (counted
  // over all its splits) lies in stage c & 1.
  int ns = static_cast<int>(blockIdx.x), nt = 0;
  const auto next_tile = [&] {  // moves the cursor one tile on, into the block's next split at the end
    if (++nt * C::kBK >= split_tokens(ns)) {
      ns += static_cast<int>(gridDim.x);
      nt = 0;
      if (ns < splits && split_tokens(ns) == 0) ns = splits;  // trailing empty splits: no tiles
    }
  };
  // kPreload: issue the tile (split s, tile t; slots loaded) into `stage` before pdl_wait, except
  // its rows that this step's kernels may write: the request's positions from `fresh` on (the new
  // tokens, written by prepare_qkv: len - 1 for a decode row, the prefix length for an extend's
  // row, p.kv_new_from) and the padding sink slot 0 (written by padded rows, and where invalid
  // table entries point): those are marked in `late` and issued by issue_late after the wait,
  // into the same shared rows. Rows past the split are zero-filled as issue_tile does.
  [[maybe_unused]] uint32_t late = 0;  // bit i: this thread's row crow + i * kRowStep of the preloaded tile
  [[maybe_unused]] int64_t fresh = len - 1;
  if constexpr (kPreload) {
    if (p.kv_new_from) fresh = min(static_cast<int64_t>(p.kv_new_from[b]), len - 1);  // host-written, like seq_lens
  }
  const auto issue_tile_pre = [&](int stage, int s, int t) {
    T* ks = kvs + (2 * stage) * C::kTileElems;
    T* vs = ks + C::kTileElems;
    const int64_t pos0 = static_cast<int64_t>(s) * per_split + static_cast<int64_t>(t) * C::kBK;  // row 0's position
#pragma unroll
    for (int i = 0; i < C::kKvRows; ++i) {
      const int r = crow + i * kRowStep;
      const bool ok = slot_ok(i);
      const int64_t slot = slot_of(i);
      if (kFuseOk && ok && p.fuse_prepare && pos0 + r == len - 1) continue;  // written by fused_prepare (no copy)
      if (ok && (slot == 0 || pos0 + r >= fresh)) {
        late |= 1u << i;
        continue;
      }
      const int64_t off = ok ? slot * width : 0;
      copy_kv(smem_addr(ks + C::kv_at(r, chunk)), kc + off, ok);
      copy_kv(smem_addr(vs + C::kv_at(r, chunk)), vc + off, ok);
    }
  };
  const auto issue_late = [&](int stage) {  // after pdl_wait; slots still those of the preloaded tile
    T* ks = kvs + (2 * stage) * C::kTileElems;
    T* vs = ks + C::kTileElems;
#pragma unroll
    for (int i = 0; i < C::kKvRows; ++i) {
      if (((late >> i) & 1u) == 0) continue;
      const int r = crow + i * kRowStep;
      const int64_t off = slot_of(i) * width;
      copy_kv(smem_addr(ks + C::kv_at(r, chunk)), kc + off, true);
      copy_kv(smem_addr(vs + C::kv_at(r, chunk)), vc + off, true);
    }
  };
  // Fused prepare (p.fuse_prepare, kPreload kernels, bf16; "Fused prepare" in the header comment).
  // The new token (position len - 1) lies in split new_split at offset new_off; the block doing that
  // split (owner) prepares k and v, and keeps them in shared memory where that is the preloaded tile.
  // Before pdl_wait: the host-written position and slot (as "Early"), the cos/sin and norm weights.
  constexpr int kFV = 16 / static_cast<int>(sizeof(T)), kFL = HD / kFV;  // elements a lane, lanes a head
  [[maybe_unused]] int new_split = -1, new_off = 0, f_slot = -1;
  [[maybe_unused]] bool f_rope = false;
  [[maybe_unused]] uint4 f_wq = make_uint4(0, 0, 0, 0), f_wk = make_uint4(0, 0, 0, 0);
  [[maybe_unused]] float f_cc[kFV], f_cs[kFV];
  const auto fused_pre_wait = [&] {
    if constexpr (kFuseOk) {
      if (!p.fuse_prepare || len <= 0) return;
      new_split = static_cast<int>((len - 1) / per_split);
      new_off = static_cast<int>(len - 1 - static_cast<int64_t>(new_split) * per_split);
      const int c = (tid % kFL) * kFV, half = HD / 2;
      const int pos = p.positions[b];
      f_slot = p.out_cache_loc[b];
      f_rope = pos >= 0 && pos < p.max_positions;
      if (f_rope) prep::load_cos_sin<kFV>(p.cos_sin + static_cast<int64_t>(pos) * HD, c % half, half, f_cc, f_cs);
      if (p.q_norm) f_wq = *reinterpret_cast<const uint4*>(static_cast<const T*>(p.q_norm) + c);
      if (p.k_norm) f_wk = *reinterpret_cast<const uint4*>(static_cast<const T*>(p.k_norm) + c);
    }
  };
  // After pdl_wait, in place of load_q: prepare_qkv's arithmetic (prep::cut_norm_rope_values, as
  // its default lanes kernel) on the group's q heads, then (owner) the kv head's k and v: units of
  // kFL lanes, q heads first. q goes to the Q tile (rows past the group zeroed, as load_q's copy
  // fills them); k and v to the caches (slot in range, as store_kv) and, in the preloaded tile, to
  // the row issue_tile_pre left out. Where the new token's tile loads later, the loop copies it from
  // the cache: the stores are fenced and the block synchronised first.
  const auto fused_prepare = [&] {
    if constexpr (kFuseOk) {
      const int sub = tid % kFL, c = sub * kFV;
      const bool owner = new_split >= 0 && new_split % static_cast<int>(gridDim.x) == static_cast<int>(blockIdx.x);
      const bool in_tile = owner && new_split == static_cast<int>(blockIdx.x) && new_off < C::kBK;
      const bool store = f_slot >= 0 && f_slot < p.num_slots;  // store_kv skips other slots too
      const int units = G + (owner ? 2 : 0);                      // uniform over the block
      const T* qsrc = static_cast<const T*>(p.q) + static_cast<int64_t>(b) * p.q_stride;
      const T* ksrc = static_cast<const T*>(p.k_new) + static_cast<int64_t>(b) * p.k_stride + static_cast<int64_t>(kvh) * HD;
      const T* vsrc = static_cast<const T*>(p.v_new) + static_cast<int64_t>(b) * p.v_stride + static_cast<int64_t>(kvh) * HD;
      const int64_t row = static_cast<int64_t>(store ? f_slot : 0) * width + static_cast<int64_t>(kvh) * HD + c;
      for (int base = 0; base < units; base += C::kThreads / kFL) {  // every lane takes every pass (shuffles)
        const int u = base + tid / kFL;
        const bool in = u < units, is_q = u < G, is_v = u == G + 1;
        const T* src = is_q ? qsrc + static_cast<int64_t>(first_head + u) * HD : is_v ? vsrc : ksrc;
        const uint4 raw = in ? *reinterpret_cast<const uint4*>(src + c) : make_uint4(0, 0, 0, 0);
        const bool norm = is_q ? p.q_norm != nullptr : p.k_norm != nullptr;
        float y[kFV];
        const bool made = prep::cut_norm_rope_values<T, kFL, true>(raw, !is_v && norm, is_q ? f_wq : f_wk, p.norm_eps,
                                                                    !is_v && f_rope, f_cc, f_cs, sub, in && !is_v, y);
        if (!in) continue;
        const uint4 out = is_v ? raw : (made ? prep::pack_chunk<T>(y) : raw);
        if (is_q) {
          *reinterpret_cast<uint4*>(qs + u * C::kQPitch + c) = out;
        } else {
          if (store) __stcg(reinterpret_cast<uint4*>(static_cast<T*>(const_cast<void*>(is_v ? p.v_cache : p.k_cache)) + row), out);
          if (in_tile) *reinterpret_cast<uint4*>(kvs + (is_v ? C::kTileElems : 0) + C::kv_at(new_off, sub)) = out;
        }
      }
      for (int i = tid; i < (16 - G) * C::kQChunks; i += C::kThreads)
        *reinterpret_cast<uint4*>(qs + (G + i / C::kQChunks) * C::kQPitch + (i % C::kQChunks) * 8) = make_uint4(0, 0, 0, 0);
      if (owner && !in_tile) {  // uniform over the block
        __threadfence_block();
        __syncthreads();
      }
    }
  };
  [[maybe_unused]] bool preloaded = false;  // !kCarry && kPreload: the block's first split has its preamble done
  if constexpr (!kCarry && kPreload) {
    // Two cp.async groups where the kernel without preload has one (Q and tile 0): the tile's
    // preloaded rows, then Q and the deferred rows; tile 0's wait_group<1> in the loop (after
    // tile 1's group) waits for both. Same shared-memory contents, same arithmetic: same bits.
    const int s0 = static_cast<int>(blockIdx.x);
    const int n0 = idle ? 0 : split_tokens(s0);
    if (!idle) fused_pre_wait();
    if (n0 > 0) {
      load_slots_of(s0, 0);
      issue_tile_pre(0, s0, 0);
    }
    cp_async_commit();
    pdl_wait();
    if (early_trigger) pdl_trigger();
    if (idle && (!kCluster || splits == 1)) return;
    if (idle && !early_trigger) pdl_trigger();  // (the loop below, where the others trigger, is empty here)
    if (!idle) {
      if (kFuseOk && p.fuse_prepare) fused_prepare();
      else load_q();
    }
    issue_late(0);
    cp_async_commit();
    if (n0 > C::kBK) load_slots_of(s0, 1);
    preloaded = true;
  }
  int ct = 0;  // kCarry: tiles of the stream computed so far
  if constexpr (kCarry && kPreload) {
    // As above, for the block's tile stream: its first tile before the wait (two groups).
    if (ns < splits && split_tokens(ns) == 0) ns = splits;
    if (!idle) fused_pre_wait();
    if (ns < splits) {
      load_slots_of(ns, nt);
      issue_tile_pre(0, ns, nt);
    }
    cp_async_commit();
    pdl_wait();
    if (early_trigger) pdl_trigger();
    if (idle && (!kCluster || splits == 1)) return;
    if (idle && !early_trigger) pdl_trigger();
    if (!idle) {
      if (kFuseOk && p.fuse_prepare) fused_prepare();
      else load_q();
    }
    issue_late(0);
    if (ns < splits) next_tile();
    cp_async_commit();
    if (ns < splits) load_slots_of(ns, nt);
  } else if constexpr (kCarry) {
    if (ns < splits && split_tokens(ns) == 0) ns = splits;
    if (p.early && ns < splits) load_slots_of(ns, nt);  // the first tile's table entries, before the wait
    pdl_wait();
    if (early_trigger) pdl_trigger();
    if (idle && (!kCluster || splits == 1)) return;
    if (idle && !early_trigger) pdl_trigger();  // (the loop below, where the others trigger, is empty here)
    if (!idle) load_q();
    if (ns < splits) {
      if (!p.early) load_slots_of(ns, nt);
      issue_tile(0);
      next_tile();
    }
    cp_async_commit();  // (Q and) the first tile
    if (ns < splits) load_slots_of(ns, nt);
  }

  for (int split = blockIdx.x; split < splits; split += gridDim.x) {
    const int n = split_tokens(split);  // tokens of the split
    const int num_tiles = (n + C::kBK - 1) / C::kBK;

    // O (rows g, g + 8: query heads; HD / 8 n-tiles of dims), or kSwap Oᵀ (HD / 16 m-tiles of
    // dims, rows g, g + 8; columns 2 t4, 2 t4 + 1: query heads). m, l: rows g, g + 8, or kSwap
    // heads 2 t4, 2 t4 + 1 (l then a partial over this lane's tokens, summed at the merge).
    constexpr int kOT = kSwap ? HD / 16 : HD / 8;
    float o[kOT][4];
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < kOT; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;

    if constexpr (!kCarry) {
      if (!preloaded) {
        if (num_tiles > 0) {
          load_slots_of(split, 0);
          issue_tile(0);
        }
        cp_async_commit();  // (Q and) tile 0
        if (num_tiles > 1) load_slots_of(split, 1);
      }
      preloaded = false;
    }

    for (int t = 0; t < num_tiles; ++t) {
      if constexpr (kCarry) {
        // The next tile of the stream, maybe the next split's first: its copies run during this
        // tile's math and the split's merge instead of after them.
        if (ns < splits) {
          issue_tile((ct + 1) & 1);
          next_tile();
        }
        cp_async_commit();
        if (ns < splits) load_slots_of(ns, nt);
      } else {
        if (t + 1 < num_tiles) issue_tile((t + 1) & 1);
        cp_async_commit();
        if (t + 2 < num_tiles) load_slots_of(split, t + 2);
      }
      cp_async_wait<1>();  // this thread's copies of tile t (and Q) landed
      if (!kWarpPipe || t == 0) {
        __syncthreads();  // every thread's did (kWarpPipe: Q, copied by the whole block, at tile 0)
      } else {
        __syncwarp();  // kWarpPipe: every lane's of the warp's slice did (the only rows it reads)
      }
      if (!q_in_regs) {
        if constexpr (kSwap) {  // Qᵀ B fragments: head g, dims 16 kk + 2 t4 (+1) and + 8 (rows >= G zero)
#pragma unroll
          for (int kk = 0; kk < HD / 16; ++kk) {
            qf[kk][0] = *reinterpret_cast<const uint32_t*>(qs + g * C::kQPitch + 16 * kk + 2 * t4);
            qf[kk][1] = *reinterpret_cast<const uint32_t*>(qs + g * C::kQPitch + 16 * kk + 8 + 2 * t4);
          }
        } else {
          const uint32_t qs_addr = smem_addr(qs + a_off);
#pragma unroll
          for (int kk = 0; kk < HD / 16; ++kk) ldmatrix_x4(qf[kk], qs_addr + kk * 16 * 2);
        }
        q_in_regs = true;
      }
      const T* ks = kvs + (2 * ((kCarry ? ct : t) & 1)) * C::kTileElems;
      const T* vs = ks + C::kTileElems;
      const int key0 = t * C::kBK + sl * 16;  // the warp's first token in the split
      if constexpr (kSwap) {
        // (K as the A tile takes the lane addresses of the V B tiles below, and V the K ones.)
        if (key0 < n) swap_tile<T, HD>(smem_addr(ks) + v_off, v_xor, smem_addr(vs) + k_off, k_xor, qf, key0, n, g, sl2, m, l, o);
      } else if (key0 < n) {
        // S = Q · Kᵀ: 16 rows (heads) x 16 tokens, as two n-tiles of 8 tokens.
        float s[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
        const uint32_t ks_addr = smem_addr(ks) + k_off;
#pragma unroll
        for (int kk = 0; kk < HD / 16; ++kk) {
          uint32_t bf[4];
          ldmatrix_x4(bf, ks_addr + ((32u * kk) ^ k_xor));
          mma16816<T>(s[0], qf[kk], bf[0], bf[1]);
          mma16816<T>(s[1], qf[kk], bf[2], bf[3]);
        }
        if (key0 + 16 > n) {  // tokens past the split: no weight
#pragma unroll
          for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              if (key0 + 8 * j + 2 * t4 + (e & 1) >= n) s[j][e] = -INFINITY;
        }
        // Online softmax per row (i = 0: row g, 1: row g + 8; a row's 16 scores lie in a quad).
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          float mx = fmaxf(fmaxf(s[0][2 * i], s[0][2 * i + 1]), fmaxf(s[1][2 * i], s[1][2 * i + 1]));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          const float mn = fmaxf(m[i], mx * sl2);  // finite: the warp has a token of the split
          const float alpha = fast_exp2(m[i] - mn);
          m[i] = mn;
          float rs = 0.0f;
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            s[j][2 * i] = fast_exp2(fmaf(s[j][2 * i], sl2, -mn));
            s[j][2 * i + 1] = fast_exp2(fmaf(s[j][2 * i + 1], sl2, -mn));
            rs += s[j][2 * i] + s[j][2 * i + 1];
          }
          l[i] = l[i] * alpha + rs;
#pragma unroll
          for (int j = 0; j < kOT; ++j) {
            o[j][2 * i] *= alpha;
            o[j][2 * i + 1] *= alpha;
          }
        }
        // P as the A fragment of one k-step (the score layout of n-tiles 0, 1 is the A layout).
        uint32_t pf[4];
        pf[0] = pack2<T>(s[0][0], s[0][1]);
        pf[1] = pack2<T>(s[0][2], s[0][3]);
        pf[2] = pack2<T>(s[1][0], s[1][1]);
        pf[3] = pack2<T>(s[1][2], s[1][3]);
        // O += P · V: 16 rows x HD.
        const uint32_t vs_addr = smem_addr(vs) + v_off;
#pragma unroll
        for (int np = 0; np < HD / 16; ++np) {
          uint32_t bf[4];
          ldmatrix_x4_trans(bf, vs_addr + ((32u * np) ^ v_xor));
          mma16816<T>(o[2 * np], pf, bf[0], bf[1]);
          mma16816<T>(o[2 * np + 1], pf, bf[2], bf[3]);
        }
      }
      if constexpr (kWarpPipe) {
        __syncwarp();  // the warp's slice of this stage is refilled by its own next copy
      } else {
        __syncthreads();  // this stage is refilled by the next iteration's copy
      }
      ++ct;
    }
    // kCarry: the stage of the split's last tile is free (the next split's first tile, if any,
    // is in flight in the other): the warp merge goes there. Drained when nothing is in flight.
    float* merge = scratch;
    if constexpr (kCarry) {
      merge = reinterpret_cast<float*>(kvs + (2 * ((ct + 1) & 1)) * C::kTileElems);
      if (ns >= splits) cp_async_wait<0>();
    } else {
      cp_async_wait<0>();
    }
    if (!early_trigger) pdl_trigger();
    __syncthreads();  // every warp is done with the stages (also when the split had no tile)

    // Merge the 4 warps of the split (fixed order): rows < G of each warp's O to shared memory.
    if constexpr (kSwap) {
      // Head 2 t4 + c's sum over the warp's tokens: the 8 lanes of this t4 (rows g of the tiles).
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        l[c] += __shfl_xor_sync(0xffffffffu, l[c], 4);
        l[c] += __shfl_xor_sync(0xffffffffu, l[c], 8);
        l[c] += __shfl_xor_sync(0xffffffffu, l[c], 16);
      }
      if (g == 0) {
        sh_m[warp][2 * t4] = m[0];
        sh_m[warp][2 * t4 + 1] = m[1];
        sh_l[warp][2 * t4] = l[0];
        sh_l[warp][2 * t4 + 1] = l[1];
      }
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int r = 2 * t4 + c;
        if (r >= G) continue;
#pragma unroll
        for (int j = 0; j < kOT; ++j)
#pragma unroll
          for (int i = 0; i < 2; ++i) merge[(warp * 16 + r) * HD + 16 * j + 8 * i + g] = o[j][2 * i + c];
      }
    } else {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 1);
        l[i] += __shfl_xor_sync(0xffffffffu, l[i], 2);
      }
      if (t4 == 0) {
        sh_m[warp][g] = m[0];
        sh_m[warp][g + 8] = m[1];
        sh_l[warp][g] = l[0];
        sh_l[warp][g + 8] = l[1];
      }
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int r = g + 8 * i;
        if (r >= G) continue;
#pragma unroll
        for (int j = 0; j < kOT; ++j)
          *reinterpret_cast<float2*>(merge + (warp * 16 + r) * HD + 8 * j + 2 * t4) =
              make_float2(o[j][2 * i], o[j][2 * i + 1]);
      }
    }
    __syncthreads();
    // Row R of the block (query head first_head + R): row r of kv head R / G, whose warps are
    // w0 .. w0 + kWph - 1 (KH = 1: all 4, as in s5-s7).
    for (int e = tid; e < GR * (HD / 4); e += C::kThreads) {
      const int R = e / (HD / 4), d = (e % (HD / 4)) * 4;
      const int r = KH == 1 ? R : R % G, w0 = KH == 1 ? 0 : (R / G) * C::kWph;
      float mx = -INFINITY;
#pragma unroll
      for (int w = w0; w < w0 + C::kWph; ++w) mx = fmaxf(mx, sh_m[w][r]);
      float lsum = 0.0f;
      float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (mx != -INFINITY) {
#pragma unroll
        for (int w = w0; w < w0 + C::kWph; ++w) {
          const float wt = exp2f(sh_m[w][r] - mx);
          lsum = fmaf(sh_l[w][r], wt, lsum);
          acc = fma4(wt, *reinterpret_cast<const float4*>(merge + (w * 16 + r) * HD + d), acc);
        }
      }
      const float inv = lsum > 0.0f ? 1.0f / lsum : 0.0f;
      acc = make_float4(acc.x * inv, acc.y * inv, acc.z * inv, acc.w * inv);
      const int64_t bh = static_cast<int64_t>(b) * p.nq + first_head + R;
      if (splits == 1) {
        store4(out + bh * HD + d, acc);
      } else {
        const float lse = lsum > 0.0f ? mx + log2f(lsum) : -INFINITY;
        if constexpr (kCluster) {  // slot `done` of this block's keep region (KH = 1: R = r)
          *reinterpret_cast<float4*>(keep + (done * 16 + R) * HD + d) = acc;
          if (d == 0) keep_lse[done * 16 + R] = lse;
        } else {
          *reinterpret_cast<float4*>(p.part_o + (bh * p.max_splits + split) * HD + d) = acc;
          if (d == 0) p.part_lse[bh * p.max_splits + split] = lse;
        }
      }
    }
    ++done;
    __syncthreads();  // scratch and sh_m/sh_l are reused by the next split
  }
  if (splits == 1) return;

#if defined(_CG_HAS_CLUSTER_GROUP)
  if constexpr (kCluster) {
    // The splits of this (request, kv head) are the blocks of this cluster: split s lies in slot
    // s / cluster of block (rank) s % cluster. After the barrier every partial is in shared memory;
    // the cluster's threads share the output elements and merge them in split order with the
    // arithmetic of the global merge below (merged bits equal that path's, whichever block reads).
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    const int csize = static_cast<int>(gridDim.x);
    cluster.sync();
    float* sh_lse = scratch;  // [16][kDecodeMmaMaxSplits]: every split's lse, fetched once
    for (int e = tid; e < G * splits; e += C::kThreads) {
      const int r = e / splits, s2 = e % splits;
      const float* src = cluster.map_shared_rank(keep_lse, s2 % csize);
      sh_lse[r * kDecodeMmaMaxSplits + s2] = src[(s2 / csize) * 16 + r];
    }
    __syncthreads();
    for (int e = static_cast<int>(blockIdx.x) * C::kThreads + tid; e < G * (HD / 4); e += csize * C::kThreads) {
      const int r = e / (HD / 4), d = (e % (HD / 4)) * 4;
      const float* lse = sh_lse + r * kDecodeMmaMaxSplits;
      float mx = -INFINITY;
      for (int s2 = 0; s2 < splits; ++s2) mx = fmaxf(mx, lse[s2]);
      float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (mx != -INFINITY) {
        float wsum = 0.0f;
#pragma unroll 4
        for (int s2 = 0; s2 < splits; ++s2) {
          const float w = exp2f(lse[s2] - mx);
          wsum += w;
          const float* po = cluster.map_shared_rank(keep, s2 % csize) + ((s2 / csize) * 16 + r) * HD + d;
          acc = fma4(w, *reinterpret_cast<const float4*>(po), acc);
        }
        acc = make_float4(acc.x / wsum, acc.y / wsum, acc.z / wsum, acc.w / wsum);
      }
      store4(out + (static_cast<int64_t>(b) * p.nq + first_head + r) * HD + d, acc);
    }
    cluster.sync();  // no block leaves while another may still read its shared memory
    return;
  }
#else
  if constexpr (kCluster) __trap();  // clusters need sm_90 (the host only launches them there)
#endif

  // The block that completes this (request, kv head)'s count merges the partials.
  __threadfence();
  __syncthreads();
  if (tid == 0) {
    unsigned int* counter = g_mma_counters + static_cast<int64_t>(b) * p.nkv + kvh;
    const unsigned int before = atomicAdd(counter, static_cast<unsigned int>(done));
    sh_last = before + static_cast<unsigned int>(done) == static_cast<unsigned int>(splits);
    if (sh_last) atomicExch(counter, 0u);  // every split has counted: back to 0 for the next launch
  }
  __syncthreads();
  if (!sh_last) return;
  __threadfence();
  float* sh_w = scratch;  // [16][kDecodeMmaMaxSplits]
  for (int r = warp; r < GR; r += C::kWarps) {
    const int64_t bh = static_cast<int64_t>(b) * p.nq + first_head + r;
    const float* lse = p.part_lse + bh * p.max_splits;
    float mx = -INFINITY;
    for (int s2 = lane; s2 < splits; s2 += 32) mx = fmaxf(mx, __ldcg(lse + s2));
    for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
    for (int s2 = lane; s2 < splits; s2 += 32)
      sh_w[r * kDecodeMmaMaxSplits + s2] = mx == -INFINITY ? 0.0f : exp2f(__ldcg(lse + s2) - mx);
    __syncwarp();
    if (lane == 0) {
      float sum = 0.0f;
      for (int s2 = 0; s2 < splits; ++s2) sum += sh_w[r * kDecodeMmaMaxSplits + s2];
      sh_wsum[r] = mx == -INFINITY ? 0.0f : sum;
    }
  }
  __syncthreads();
  for (int e = tid; e < GR * (HD / 4); e += C::kThreads) {
    const int r = e / (HD / 4), d = (e % (HD / 4)) * 4;
    const int64_t bh = static_cast<int64_t>(b) * p.nq + first_head + r;
    const float* po = p.part_o + bh * p.max_splits * HD + d;
    const float* w = sh_w + r * kDecodeMmaMaxSplits;
    const float wsum = sh_wsum[r];
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (wsum > 0.0f) {
#pragma unroll 4
      for (int s2 = 0; s2 < splits; ++s2)
        acc = fma4(w[s2], __ldcg(reinterpret_cast<const float4*>(po + static_cast<int64_t>(s2) * HD)), acc);
      acc = make_float4(acc.x / wsum, acc.y / wsum, acc.z / wsum, acc.w / wsum);
    }
    store4(out + bh * HD + d, acc);
  }
}

// The kernel instance for p's switches (checked in launch_decode_mma) and the dynamic shared memory
// it launches with; kOptIn: the instances that carry the opt-in switches' code (decode_mma_kernel).
struct PickedKernel {
  void (*kernel)(DecodeMmaParams);
  size_t smem;
};
template <typename T, int HD, bool kOptIn>
PickedKernel pick_kernel(const DecodeMmaParams& p, bool cluster) {
  constexpr bool O = kOptIn;
  const size_t smem = cluster ? MmaCfg<HD>::smem_bytes(p.cluster_slots) : MmaCfg<HD>::kSmem;
  if (p.preload && p.fuse_prepare) {  // bf16 only (fuse_prepare_fits)
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      return {cluster ? (p.carry ? decode_mma_kernel<T, HD, true, true, 1, false, false, true, true, O>
                                 : decode_mma_kernel<T, HD, true, false, 1, false, false, true, true, O>)
                      : (p.carry ? decode_mma_kernel<T, HD, false, true, 1, false, false, true, true, O>
                                 : decode_mma_kernel<T, HD, false, false, 1, false, false, true, true, O>),
              smem};
    } else {
      GRT_FAIL("attention_decode mma: the fused prepare (GRAPHRT_DECODE_FUSE_PREPARE=1) takes bf16 only, this launch "
               "is f16 (fuse_prepare_fits should have left it to prepare_qkv_)");
    }
  }
  if (p.preload)  // one kv head a block, no swap (checked in launch_decode_mma)
    return {cluster ? (p.carry ? decode_mma_kernel<T, HD, true, true, 1, false, false, true, false, O>
                               : decode_mma_kernel<T, HD, true, false, 1, false, false, true, false, O>)
                    : (p.carry ? decode_mma_kernel<T, HD, false, true, 1, false, false, true, false, O>
                               : decode_mma_kernel<T, HD, false, false, 1, false, false, true, false, O>),
            smem};
  if (p.swap)  // global merge, no carry, one kv head a block (checked in launch_decode_mma)
    return {p.warp_pipe ? decode_mma_kernel<T, HD, false, false, 1, true, true, false, false, O>
                        : decode_mma_kernel<T, HD, false, false, 1, true, false, false, false, O>,
            smem};
  if (p.kv_per_block == 2)  // kv groups: global merge, no carry (checked in launch_decode_mma)
    return {decode_mma_kernel<T, HD, false, false, 2, false, false, false, false, O>, MmaCfg<HD, 2>::kSmem};
  if (p.kv_per_block == 4)
    return {decode_mma_kernel<T, HD, false, false, 4, false, false, false, false, O>, MmaCfg<HD, 4>::kSmem};
  return {cluster ? (p.carry ? decode_mma_kernel<T, HD, true, true, 1, false, false, false, false, O>
                             : decode_mma_kernel<T, HD, true, false, 1, false, false, false, false, O>)
                  : (p.carry ? decode_mma_kernel<T, HD, false, true, 1, false, false, false, false, O>
                             : decode_mma_kernel<T, HD, false, false, 1, false, false, false, false, O>),
          smem};
}

template <typename T, int HD>
void launch_typed(int dev, cudaStream_t st, const DecodeMmaParams& p, dim3 grid, int carveout) {
  using C = MmaCfg<HD>;
  const bool cluster = p.cluster > 1;
  const PickedKernel picked = p.early_trigger || p.kv_evict_first ? pick_kernel<T, HD, true>(p, cluster)
                                                                  : pick_kernel<T, HD, false>(p, cluster);
  const auto kernel = picked.kernel;
  const size_t smem = picked.smem;
  GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
                 "allowing {} bytes of shared memory for attention_decode mma (head_dim {})", smem, HD);
  // carveout -2 (default), by instance, as measured (bench/results/h100_2026-11-23_s5_dattn2):
  // the global-merge kernel prefers the whole carveout as shared memory (kOcc blocks of ~73 KB at
  // head_dim 128 fit only in it; its large-batch points were measured so); the cluster kernel
  // (small batch, 1-2 blocks a SM) leaves the choice to the driver, which then can run it beside
  // the neighbouring kernels' blocks instead of draining SMs to change their carveout (llama-3.1-8b
  // bs 1 4.971 -> 4.584 ms, H200). -1: no preference for both; 0..100: that preference for both.
  const int prefer = carveout == -2 ? (cluster ? -1 : 100) : carveout;
  if (prefer >= 0)
    GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, prefer),
                   "preferring the shared-memory carveout {} for attention_decode mma (head_dim {})", prefer, HD);
  if (cluster)
    GRT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                   "allowing clusters of {} blocks for attention_decode mma (head_dim {})", p.cluster, HD);
  const dim3 clusters = cluster ? dim3(static_cast<unsigned>(p.cluster), 1, 1)
                                : dim3(1, p.head_cluster > 1 ? static_cast<unsigned>(p.head_cluster) : 1u, 1);
  (void)launch_pdl_clusters(dev, kernel, grid, dim3(C::kThreads), smem, st, clusters, p);
}

template <typename T>
void launch_hd(int dev, cudaStream_t st, const DecodeMmaParams& p, dim3 grid, int carveout) {
  if (p.hd == 64) launch_typed<T, 64>(dev, st, p, grid, carveout);
  else launch_typed<T, 128>(dev, st, p, grid, carveout);
}

// Clusters of `size` blocks of `smem` bytes that can be resident at once (0: the size cannot launch).
template <typename T, int HD>
int active_clusters(int size, int slots) {
  using C = MmaCfg<HD>;
  // (Both kernels of the carry switch use the same resources: the carry one is checked.)
  auto kernel = decode_mma_kernel<T, HD, true, true>;
  const size_t smem = C::smem_bytes(slots);
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) != cudaSuccess ||
      cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return max_active_clusters(kernel, static_cast<unsigned>(size), dim3(C::kThreads), smem);
}

// Clusters of `size` kv-head blocks of the global-merge kernel resident at once (0: cannot launch).
template <typename T, int HD>
int active_head_clusters(int size) {
  using C = MmaCfg<HD>;
  auto kernel = decode_mma_kernel<T, HD, false, true>;  // (the other variant uses the same resources)
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(C::kSmem)) !=
          cudaSuccess ||
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 100) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return max_active_clusters(kernel, dim3(1, static_cast<unsigned>(size), 1), dim3(C::kThreads), C::kSmem);
}

}  // namespace

int decode_mma_head_cluster_fits(int dev, DType dtype, int head_dim, int size) {
  if (size < 2 || size > 8) return 0;
  static std::mutex mu;
  static std::map<std::tuple<int, int, int, int>, int> known;  // (device, dtype, head_dim, size)
  const auto key = std::make_tuple(dev, static_cast<int>(dtype), head_dim, size);
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(key);
  if (it != known.end()) return it->second;
  int n = 0;
  if (dtype == DType::BF16) n = head_dim == 64 ? active_head_clusters<__nv_bfloat16, 64>(size)
                                               : active_head_clusters<__nv_bfloat16, 128>(size);
  else n = head_dim == 64 ? active_head_clusters<__half, 64>(size) : active_head_clusters<__half, 128>(size);
  known.emplace(key, n);
  return n;
}

bool decode_mma_supports(DType dtype, int head_dim, int group, int batch, int num_kv_heads, const void* q,
                         int64_t q_row_stride, const void* k_cache, const void* v_cache, const void* out) {
  const auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  return (dtype == DType::BF16 || dtype == DType::F16) && (head_dim == 64 || head_dim == 128) && group >= 2 &&
         group <= 16 && static_cast<int64_t>(batch) * num_kv_heads <= kDecodeMmaCounters && batch <= 65535 &&
         num_kv_heads <= 65535 && aligned(q) && aligned(k_cache) && aligned(v_cache) && aligned(out) &&
         (q_row_stride * 2) % 16 == 0;
}

int decode_mma_blocks_per_sm(int head_dim) { return head_dim == 64 ? MmaCfg<64>::kOcc : MmaCfg<128>::kOcc; }

int decode_mma_cluster_fits(int dev, DType dtype, int head_dim, int size, int slots) {
  if (size < 2 || size > kDecodeMmaMaxCluster || slots < 1 || static_cast<int64_t>(size) * slots > kDecodeMmaMaxSplits)
    return 0;
  static std::mutex mu;
  static std::map<std::tuple<int, int, int, int, int>, int> known;  // (device, dtype, head_dim, size, slots)
  const auto key = std::make_tuple(dev, static_cast<int>(dtype), head_dim, size, slots);
  std::lock_guard<std::mutex> lock(mu);
  auto it = known.find(key);
  if (it != known.end()) return it->second;
  int n = 0;
  if (dtype == DType::BF16) n = head_dim == 64 ? active_clusters<__nv_bfloat16, 64>(size, slots)
                                               : active_clusters<__nv_bfloat16, 128>(size, slots);
  else n = head_dim == 64 ? active_clusters<__half, 64>(size, slots) : active_clusters<__half, 128>(size, slots);
  known.emplace(key, n);
  return n;
}

void launch_decode_mma(int dev, cudaStream_t stream, const DecodeMmaParams& p, DType dtype, dim3 grid, int carveout) {
  GRT_CHECK(p.max_splits >= 1 && p.max_splits <= kDecodeMmaMaxSplits && p.chunk >= 1,
            "attention_decode mma: {} splits at most (allowed 1..{}), chunk {} (>= 1)", p.max_splits,
            kDecodeMmaMaxSplits, p.chunk);
  if (p.cluster > 1)
    GRT_CHECK(p.cluster <= kDecodeMmaMaxCluster && grid.x == static_cast<unsigned>(p.cluster) &&
                  static_cast<int64_t>(p.cluster) * p.cluster_slots >= p.max_splits &&
                  static_cast<int64_t>(p.cluster) * p.cluster_slots <= kDecodeMmaMaxSplits,
              "attention_decode mma: a cluster of {} blocks (allowed 2..{}, = grid x {}) with {} slots each must hold "
              "the {} splits",
              p.cluster, kDecodeMmaMaxCluster, grid.x, p.cluster_slots, p.max_splits);
  const int kvpb = p.kv_per_block <= 1 ? 1 : p.kv_per_block;
  GRT_CHECK((kvpb == 1 || kvpb == 2 || kvpb == 4) && p.nkv % kvpb == 0 && kvpb * p.group <= 16 &&
                grid.y == static_cast<unsigned>(p.nkv / kvpb) &&
                (kvpb == 1 || (p.cluster <= 1 && !p.carry && !p.early && p.head_cluster <= 1)),
            "attention_decode mma: {} kv heads per block (allowed 1, 2, 4 dividing the {} kv heads, with {} query heads "
            "each at most 16 a block, grid y {} = kv heads / it; above 1 only with the global merge, no carry, no early "
            "read, no head clusters: cluster {}, carry {}, early {}, head cluster {})",
            p.kv_per_block, p.nkv, kvpb * p.group, grid.y, p.cluster, p.carry ? 1 : 0, p.early ? 1 : 0, p.head_cluster);
  GRT_CHECK(!p.swap || (kvpb == 1 && p.group <= 8 && p.cluster <= 1 && !p.carry && !p.early),
            "attention_decode mma: the transposed (swap) kernel takes groups of at most 8 query heads (here {}), one "
            "kv head a block (here {}), the global merge and no carry or early read (cluster {}, carry {}, early {})",
            p.group, kvpb, p.cluster, p.carry ? 1 : 0, p.early ? 1 : 0);
  GRT_CHECK(!p.preload || (kvpb == 1 && !p.swap),
            "attention_decode mma: the K/V preload runs only with one kv head a block (here {}) and the untransposed "
            "tile math (swap {})",
            kvpb, p.swap ? 1 : 0);
  GRT_CHECK(!p.warp_pipe || p.swap, "attention_decode mma: the per-warp copy pipeline (warp_pipe) runs only with the "
            "transposed (swap) kernel");
  GRT_CHECK(carveout >= -2 && carveout <= 100,
            "attention_decode mma: carveout {} (allowed -2: by kernel, -1: no preference, 0..100)", carveout);
  if (dtype == DType::BF16) launch_hd<__nv_bfloat16>(dev, stream, p, grid, carveout);
  else launch_hd<__half>(dev, stream, p, grid, carveout);
}

}  // namespace grt::cuda
