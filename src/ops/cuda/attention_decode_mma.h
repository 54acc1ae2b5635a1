// The tensor-core decode attention for grouped-query models (attention_decode_mma.cu): one block
// per (request, kv head, split), the group's query heads are the rows of an m16n8k16 tile. Host
// side of it; attention_decode.cu decides when it runs (GRAPHRT_DECODE_ATTENTION=mma or the auto
// rule there).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/dtype.h"

namespace grt::cuda {

constexpr int kDecodeMmaMaxSplits = 64;            // most splits one request may use
constexpr int64_t kDecodeMmaCounters = 1 << 16;    // one per (request, kv head)
constexpr int kDecodeMmaMaxCluster = 16;           // most blocks of one cluster (non-portable above 8)

struct DecodeMmaParams {
  const void* q;
  int64_t q_stride;  // elements between the q rows of two requests
  const void* k_cache;
  const void* v_cache;
  int64_t num_slots, max_reqs, max_context;
  const int32_t* req_to_token;
  const int32_t* req_pool_indices;
  const int32_t* seq_lens;
  void* out;         // [B, nq * hd]
  float* part_o;     // [B, nq, max_splits, hd] (max_splits > 1)
  float* part_lse;   // [B, nq, max_splits]
  int nq, nkv, hd, group;
  // A request of live length len uses min(max_splits, ceil(len / chunk)) splits (at least 1): a
  // function of its own length and of these two launch values, whatever the grid or the other
  // rows, so padding rows never change its bits. Blocks loop over splits when the grid has fewer.
  int max_splits, chunk;
  float scale_log2;  // scale * log2(e)
  // cluster > 1: the splits of one (request, kv head) are one thread-block cluster of `cluster`
  // blocks (grid x = cluster), each doing splits x, x + cluster, ... (cluster_slots of them at
  // most), merging through distributed shared memory in split order: no part_o / part_lse, fence
  // or counter, and the same output bits as the global merge (cluster <= 1) for the same
  // max_splits and chunk.
  int cluster, cluster_slots;
  // Whether a block doing several splits streams their tiles without draining the stages between
  // them (see "Carry" in attention_decode_mma.cu). Same output bits either way.
  bool carry;
  // With carry: read the lengths, request slots and the first tile's table entries before
  // pdl_wait (no kernel writes them; see "Early" in attention_decode_mma.cu).
  bool early;
  // > 1 (global merge only): blocks of head_cluster consecutive kv heads (grid y) of one
  // (request, split) launch as one thread-block cluster (scheduling only; the kernel ignores it).
  int head_cluster;
  // Kv heads per block ("kv groups"; 0 or 1: one, the s5-s7 kernel; 2 or 4: that many consecutive
  // kv heads of one (request, split) per block, grid y = nkv / it). A tile row is then one token's
  // K (V) of those heads, KH x HD contiguous elements of the cache instead of HD at an nkv x HD
  // stride; warps split as kv head x 16-token slice, tiles of 64 / KH tokens, the warp merge over
  // a head's 4 / KH warps (so bits differ from 1 beyond rounding order). Needs cluster <= 1, no
  // carry, no early read, nkv divisible by it and it x group <= 16.
  int kv_per_block;
  // The transposed tile math (tokens as the mma's 16 rows, the group's heads as its 8 columns;
  // "Swap" in attention_decode_mma.cu): groups of 2..8, kv_per_block 1, the global merge, no carry
  // or early read. Bits differ from false (summation order), a function of the shape only.
  bool swap;
  // With swap: each warp copies, waits for and frees its own 16-token slice of every tile, with no
  // block barrier in the tile loop ("Warp pipe" in attention_decode_mma.cu). The same bits as swap.
  bool warp_pipe;
  // pdl_trigger right after pdl_wait instead of after the main loop ("Early trigger" in
  // attention_decode_mma.cu), so the next kernel's blocks land and read weights during this one.
  // The same bits either way.
  bool early_trigger;
  // One kv head a block, no swap (the small-batch kernels: cluster merge, carry, global merge):
  // the block's first tile of K/V rows is copied before pdl_wait, except the request's last
  // position (the new token) and rows on the padding sink slot 0, copied after it ("Preload" in
  // attention_decode_mma.cu). The same bits either way.
  bool preload;
  // With preload: per row, the first position of its request that this step writes
  // (ops::DecodeAttentionMeta::kv_new_from: an extend's tokens as rows); every position from it on
  // is copied after the wait. Null: the row's last position (seq_lens - 1) only, a decode.
  const int32_t* kv_new_from;
  // Blocks with no split of their request (blockIdx.x >= its splits; most of the grid where the
  // graph's grid is sized for the longest context and the live lengths are short) return before
  // pdl_wait instead of after it, freeing their slot at once (pdl.cuh point 2: block 0 of every
  // request and kv head always works and waits). Decided from the host-written lengths only; the
  // same bits either way.
  bool idle_exit;
  // K/V rows copied under an L2 evict-first policy (read once a step), meant to keep the block
  // tables and metadata every block reads first in the L2 across layers. Same data: same bits.
  // Off by default (attention_decode.cu, knobs: mixed results, premise refuted).
  bool kv_evict_first;
  // Fused prepare (with preload, kv_new_from null (the host passes null for a one-row batch too), bf16;
  // "Fused prepare" in attention_decode_mma.cu):
  // q is the raw q of the qkv projection (prepare_qkv_ has not run), and the kernel does
  // prepare_qkv_'s work for its rows itself with prepare's arithmetic: q's per-head norm and rope
  // into its shared Q tile (q in memory stays raw), and in the block whose split holds the new
  // token (position seq_lens - 1) k's norm and rope and v, stored to the caches at out_cache_loc
  // and used from shared memory. That slot must be the one req_to_token gives the position (as the
  // runtime writes them). Same output and cache bits as prepare_qkv_ followed by this kernel.
  // It runs in kernel instances of its own (kFusePrepare): the default preload kernels carry none
  // of its code (session 33, call I: llama-3.1-8b bs 1 / 2 / 4 -0.02 / -0.06 / -0.05 ms).
  bool fuse_prepare;
  const void* k_new;  // the raw k and v rows of the step (column slices of the qkv output)
  const void* v_new;
  int64_t k_stride, v_stride;  // elements between two requests' rows
  const void* q_norm;          // [hd] or null (no norm), as prepare_qkv_'s
  const void* k_norm;
  float norm_eps;
  const int32_t* positions;      // [B]: the new token's position (rope); outside [0, max_positions): no rope
  const float* cos_sin;          // [max_positions, hd] f32
  int64_t max_positions;
  const int32_t* out_cache_loc;  // [B]: the new token's cache slot; outside [0, num_slots): not stored
};

// Whether the kernel covers this case: bf16/f16, head_dim 64 or 128, 2..16 query heads per kv
// head, (request, kv head) pairs within the counters, 16-byte aligned q rows, caches and output.
bool decode_mma_supports(DType dtype, int head_dim, int group, int batch, int num_kv_heads, const void* q,
                         int64_t q_row_stride, const void* k_cache, const void* v_cache, const void* out);

// Blocks of the kernel resident per multiprocessor (shared memory bound).
int decode_mma_blocks_per_sm(int head_dim);

// Clusters of `size` blocks with `slots` splits each that can be resident at once on device `dev`
// (current), 0 where that size cannot launch (size 2..kDecodeMmaMaxCluster; cached per shape).
int decode_mma_cluster_fits(int dev, DType dtype, int head_dim, int size, int slots);

// Clusters of `size` kv-head blocks (along grid y) of the global-merge kernel resident at once on
// device `dev` (current); 0 where they cannot launch (size 2..8; cached per shape).
int decode_mma_head_cluster_fits(int dev, DType dtype, int head_dim, int size);

// Launches on `stream` (device `dev` current) with the PDL attribute; grid (splits, nkv, B), or
// (p.cluster, nkv, B) as clusters along x, or (splits, nkv / p.kv_per_block, B). carveout: the preferred shared-memory carveout in
// percent; -1 none (the driver's choice); -2 by kernel (global merge 100, cluster merge none).
void launch_decode_mma(int dev, cudaStream_t stream, const DecodeMmaParams& p, DType dtype, dim3 grid,
                       int carveout = -2);

// The mma path's cluster mode (defined in attention_decode.cu, which decides): -2 the
// environment's GRAPHRT_DECODE_MMA_CLUSTER, -1 by batch, 0 the global merge, 2..16 that cluster
// size (an Error at launch where it cannot run). For tests and A/B; process-wide.
void set_decode_mma_cluster(int mode);
int decode_mma_cluster();  // the mode in force (-1, 0 or 2..16)

// Whether the mma kernel carries its tile stream across the splits of a block (attention_decode_mma.cu,
// "Carry"): -1 the environment's GRAPHRT_DECODE_MMA_CARRY (default 1), 0 off, 1 on; it runs where
// a block may do several splits (or GRAPHRT_DECODE_MMA_EARLY=1). The same output bits either way.
// For tests and A/B; process-wide (defined in attention_decode.cu).
void set_decode_mma_carry(int mode);
bool decode_mma_carry();  // in force

// The mma path's large-batch geometry (attention_decode.cu, launch_mma): -1 the environment's
// GRAPHRT_DECODE_MMA_WIDE (default 1), 1 from SMs (request, kv head) pairs on 512-token splits
// with one block each, 0 256-token splits on blocks that loop over them. Changes the split counts
// (so the bits) of those batches. For tests and A/B; process-wide.
void set_decode_mma_wide(int mode);
bool decode_mma_wide();  // in force

// Kv heads per block in the wide geometry (attention_decode.cu, mma_kv_group): -1 the environment's
// GRAPHRT_DECODE_MMA_KV_GROUP (default 1), 0 auto (the largest of 4, 2 that fits the shape), 1, 2
// or 4 (where it fits, else 1). Changes the bits of those batches. For tests and A/B; process-wide.
void set_decode_mma_kv_group(int mode);
int decode_mma_kv_group();  // in force (0 auto, 1, 2, 4)

// The transposed tile math in the wide geometry (attention_decode.cu, mma_swap): -1 the environment's
// GRAPHRT_DECODE_MMA_SWAP (0, 1, auto; default auto), 0 off, 1 on where it applies (wide geometry's
// plain kernel, one kv head a block, groups 2..8), 2 auto (the measured rule: today = 1). Changes
// the bits of those batches. For tests and A/B; process-wide.
void set_decode_mma_swap(int mode);
int decode_mma_swap();  // in force (0, 1, 2 auto)

// The swapped kernel's per-warp copy pipeline (attention_decode.cu; DecodeMmaParams::warp_pipe): -1
// the environment's GRAPHRT_DECODE_MMA_WARP_PIPE (0, 1; default 1), 0 off, 1 on where swap runs.
// The same bits either way. For tests and A/B; process-wide.
void set_decode_mma_warp_pipe(int mode);
bool decode_mma_warp_pipe();  // in force

// Whether the mma kernel triggers its dependents right after pdl_wait (DecodeMmaParams::early_trigger):
// -1 the environment's GRAPHRT_DECODE_MMA_EARLY_TRIGGER (0, 1; default 0: after its main loop), 0
// off, 1 on. The same bits either way. For tests and A/B; process-wide.
void set_decode_mma_early_trigger(int mode);
bool decode_mma_early_trigger();  // in force

// Whether idle blocks leave before pdl_wait (DecodeMmaParams::idle_exit): -1 the environment's
// GRAPHRT_DECODE_MMA_IDLE_EXIT (0, 1; default 1), 0 off, 1 on. The same bits either way. For tests
// and A/B; process-wide.
void set_decode_mma_idle_exit(int mode);
bool decode_mma_idle_exit();  // in force
// Whether the K/V copies carry the L2 evict-first policy (DecodeMmaParams::kv_evict_first): -1 the
// environment's GRAPHRT_DECODE_MMA_KV_EVICT_FIRST (default 0), 0 off, 1 on. For tests and A/B.
void set_decode_mma_kv_evict_first(int mode);
bool decode_mma_kv_evict_first();  // in force

// Whether the small-batch mma kernels (batch x kv heads below the SM count) copy their first K/V
// tile before pdl_wait (DecodeMmaParams::preload): -1 the environment's GRAPHRT_DECODE_MMA_PRELOAD
// (0, 1, auto; default auto), 0 off, 1 on wherever it applies, 2 auto (where the grid is one wave:
// the measured rule, attention_decode.cu launch_mma). The same bits either way. For tests and A/B;
// process-wide.
void set_decode_mma_preload(int mode);
int decode_mma_preload();  // in force (0, 1, 2 auto)

// Whether the decode attention does prepare_qkv_'s work itself where it can (DecodeMmaParams::
// fuse_prepare; ops::attention_decode_prepare): -1 the environment's GRAPHRT_DECODE_FUSE_PREPARE
// (0, 1; default 0: measured slower), 0 off (prepare_qkv_'s kernel, then the attention), 1 on. The
// same bits either way. For tests and A/B; process-wide.
void set_decode_fuse_prepare(int mode);
bool decode_fuse_prepare();  // in force

}  // namespace grt::cuda
