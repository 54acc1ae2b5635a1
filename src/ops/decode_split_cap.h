// The split rules of decode attention's mma path (ops/cuda/attention_decode.cu, launch_mma), host
// rules without a device, so they are CPU-tested:
//  - wide_split_cap, from SMs (request, kv head) pairs on: how many blocks a pair gets in the grid
//    at most, which a decode graph then carries for every replay;
//  - decode_mma_chunk_by_pairs, below SMs pairs: how many tokens a split takes at least.
//
// The cap:
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

// Tokens a split takes at least below SMs pairs (batch x kv heads): 64 up to 4 pairs, 128 up to 16,
// 256 up to 32, 512 above (64 where pairs is not positive). A request's split count, and so its
// bits, follows its length and this bucket of its batch's pairs, never other rows' contents.
// Why: few pairs need short splits to spread one request's K/V over the GPU; with more pairs the
// same short splits only add merges and block start-ups (qwen3-0.6b bs 16, 128 pairs: 67 MB of
// K/V a layer at 1.7 TB/s in 64-token splits). Measured on the H100 (graph ms, ctx 1024):
//  - bench/results/h100_2026-11-25_session19 call M (64 against the bucket's chunk): qwen3-0.6b
//    bs 4 1.302 / 1.310 -> 1.191 (256), bs 8 1.545 / 1.555 -> 1.399 (512), bs 12 1.876 / 1.897 ->
//    1.718, bs 16 2.057 / 2.076 -> 1.856; ctx 4096 bs 16 3.99 -> 3.89; llama-3.1-8b bs 8 6.709 ->
//    6.324, bs 16 7.517 -> 7.158; qwen3-30b-a3b bs 8 (32 pairs) 12.75 / 12.87 -> 12.28;
//  - bench/results/h100_2026-11-26_session33 call C (bs 1, fresh processes ABBA x 3, 64 against
//    128): qwen3-0.6b (8 pairs) 0.858-0.879 -> 0.843-0.853, llama-3.1-8b (8) 5.766-5.812 against
//    5.771-5.812 (even), qwen3-30b-a3b (4 pairs) 3.537-3.566 -> 3.563-3.601 (slower: stays 64).
//    Session 19 had measured 64 best at qwen bs 1; the preload of the first tile (s11) and the
//    prepare kernel's trigger at entry (s12) have since moved the attention's blocks under the
//    qkv GEMV, where fewer of them (72 against 128 at 8 pairs) land sooner;
//  - the same session's call H: 128 / 256 / 512 at bs 2..16 of the three models; each bucket's
//    chunk best or within the runs' spread of it.
int decode_mma_chunk_by_pairs(int64_t pairs);

}  // namespace grt::ops
