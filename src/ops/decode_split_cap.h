// The wide decode-attention geometry's split cap (ops/cuda/attention_decode.cu, launch_mma): how many
// blocks a (request, kv head) pair gets in the grid at most, which a decode graph then carries for
// every replay. A host rule without a device, so it is CPU-tested.
//
// Why a rule of the grid and not of the lengths: a graph serves every length up to the table
// width, so its grid is pairs x cap blocks whatever the live lengths; a request uses min(cap,
// ceil(len / chunk)) of its blocks and the rest leave at once. The kernel streams K/V, and what
// the grid's shape costs was measured on the H100 (bench/results/h100_2026-11-26_session27, calls
// C-D: qwen3-0.6b bs 17..256 at ctx 1024 / 4096, llama-3.1-8b bs 17..128 at ctx 2048, caps 1..4):
//  - a grid of one wave (pairs x cap <= slots, the blocks resident at once) streams at the full
//    rate once it has ~2 blocks an SM: bs 32 (256 pairs) at cap 1 beat cap 4 by 0.08-0.11 ms;
//  - a grid just past a whole number of waves leaves its last blocks streaming alone: 1.13-1.45
//    waves lost up to 1.4 ms (qwen bs 56 ctx 4096 at cap 1), 2.26 waves 0.27 ms;
//  - past that, more splits cost merges and idle blocks: llama bs 96 / 128 at cap 1 (1.9 / 2.6
//    waves) beat cap 4 by 0.40 / 0.43 ms.
// So: the fewest splits whose grid is either one wave of >= ~1.9 blocks an SM, or uses >= 80% of
// the slots its whole number of waves offers.
#pragma once
#include <cstdint>

namespace grt::ops {

// The default decode capture sizes' step from 16 to 256 rows (graph/capture_schedule.h): the rule
// reads a batch's rows rounded up to it, so a batch and the decode graph it pads to get the same
// cap, and padding never changes a real row's bits. (Past 256 rows the sizes step by 16: with 8
// kv heads the cap is 1 there anyway, >= 5 waves at cap 1; with fewer kv heads a batch and its
// graph may differ.)
inline constexpr int64_t kWideSplitRowStep = 8;

// The cap for a batch of `rows` decode rows of `kv_heads` kv heads each (pairs = rows rounded up to
// kWideSplitRowStep, times kv_heads) on a GPU of `sms` SMs holding `slots` blocks of the kernel at
// once (blocks an SM x sms), at most `most`: the smallest c in 1..most whose grid of pairs x c
// blocks is one wave (<= slots) of at least 1.9 x sms blocks, or more than one wave using >= 80%
// of its waves' slots (blocks >= 0.8 x ceil(blocks / slots) x slots); `most` if none is. 1 where
// rows, kv_heads, slots or sms is not positive, or most <= 1.
int wide_split_cap(int64_t rows, int64_t kv_heads, int64_t slots, int64_t sms, int most);

}  // namespace grt::ops
