// The weight-streaming probe behind `graphrt bench stream` (bench/bench_stream.cpp): one kernel
// reads a buffer once and XORs its 32-bit words (so nothing is optimised away, and every method
// must give the same value), by one of three ways of moving the bytes. It tells the decode
// kernels, which stream their weights once, what rate a single kernel can reach at 4-256 MB.
// H100 (bench/results/h100_2026-11-23_s5_stream): ~1.7 us + bytes / 3.1 TB/s in a graph for any
// of the three once an SM keeps >= 32 KB in flight; the shared-memory ones start ~0.5-1 us later.
#pragma once
#include <cstdint>

#include "core/device_id.h"

namespace grt::cuda {

enum class StreamMethod {
  kLdg,      // 16-byte ld.global.nc.L1::no_allocate, `depth` loads in flight per lane (1, 2, 4, 8)
  kCpAsync,  // cp.async 16-byte into `depth` shared stages of 16 KB a block (2..8)
  kBulk,     // cp.async.bulk (TMA, 1-D) into a ring of `depth` shared stages of 16 KB, mbarriers (2..12)
};

// Where the 16 KB tiles of the cp.async method lie (the paged KV cache's read pattern, issue 18):
// kContiguous, 16 KB each; kKvNear / kKvFar, the buffer read as rows of kKvHeads x 256 bytes (a
// token's K of 8 kv heads at head_dim 128, bf16) and a tile = 64 rows' 256-byte piece of one head,
// as the decode attention's block of one (request, kv head) reads them. Near: tile u is head
// u % 8 of row block u / 8, so neighbouring blocks read the 8 heads of the same rows at about the
// same time (the attention's launch order); far: head u / blocks of row block u % blocks, so the 8
// pieces of a row are read at 8 distant times. Every byte is read once in each pattern.
// H100, 256 MB (bench/results/h100_2026-11-25_session20, call B): near 2.99-3.10 TB/s against
// contiguous 3.01-3.11 for the same depth and blocks; far 2.76-3.01. So the decode attention's
// gathered 256-byte pieces do not cap its ~2.6 TB/s.
//
// kPiecesSeq / kPiecesMix (the MoE experts' pattern, issue 17): the launch reads `pieces` pieces of
// bytes / pieces each, piece i at src + piece_offsets[i] (device memory, bytes, 16 KB aligned), as
// a one-token MoE layer reads its 8 experts' gate_up (6 MiB) or down (3 MiB) rows out of a pool of
// ~58 GB. Seq: the grid-strided tiles walk piece after piece; mix: tile t is tile t / pieces of
// piece t % pieces, so all pieces stream at once (the expert kernels' blocks cover all 8 experts).
enum class StreamPattern { kContiguous, kKvNear, kKvFar, kPiecesSeq, kPiecesMix };
constexpr int kStreamKvHeads = 8;
// The KV patterns read whole row blocks of every head: their sizes are multiples of this (128 KB).
constexpr int64_t kStreamKvPatternBytes = int64_t{16 << 10} * kStreamKvHeads;

struct StreamProbeArgs {
  const void* src = nullptr;  // 16-byte aligned
  int64_t bytes = 0;          // a positive multiple of 16
  StreamMethod method = StreamMethod::kLdg;
  int depth = 4;                // see StreamMethod
  int blocks_per_sm = 1;        // 1 or 2
  bool max_shared_carveout = false;  // kLdg only: ask for the largest shared carveout (less L1)
  // KV patterns: kCpAsync only, bytes % kStreamKvPatternBytes == 0. Pieces: kCpAsync or kBulk,
  // bytes / pieces a multiple of 16 KB, piece_offsets set.
  StreamPattern pattern = StreamPattern::kContiguous;
  const int64_t* piece_offsets = nullptr;  // pieces patterns: device array of `pieces` byte offsets from src
  int pieces = 0;
  uint32_t* partials = nullptr;      // stream_probe_blocks() words: each block's XOR
};

// Blocks the probe launches on device `index` (blocks_per_sm x the SM count).
int stream_probe_blocks(int index, int blocks_per_sm);

// Launches the probe on the device's current stream. Throws on arguments it does not take
// (depth, blocks per SM, alignment, a method the device lacks, shared memory that does not fit).
void stream_probe(Device d, const StreamProbeArgs& a);

}  // namespace grt::cuda
