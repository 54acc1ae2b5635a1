// The split rules of decode attention's mma path (ops/decode_split_cap.h). The wide geometry's
// split cap: the fewest splits whose grid is one wave of ~2 blocks an SM, or uses >= 80% of the
// slots of its whole waves, for the batch's rows rounded up to the capture sizes' step (H100
// points measured in bench/results/h100_2026-11-26_session27, calls C-D). Below SMs pairs, the
// split chunk by pairs (sessions 19 and 33).
#include <gtest/gtest.h>

#include "ops/decode_split_cap.h"

namespace grt {
namespace {

constexpr int64_t kSms = 132;
constexpr int64_t kSlots128 = 3 * kSms;  // head_dim 128: 3 blocks an SM
constexpr int64_t kSlots64 = 4 * kSms;   // head_dim 64: 4

int cap_for(int64_t rows, int64_t kv_heads = 8, int64_t slots = kSlots128, int most = 4) {
  return ops::wide_split_cap(rows, kv_heads, slots, kSms, most);
}

TEST(DecodeSplitCap, H100PointsTakeTheMeasuredBestCap) {
  // rows (8 kv heads) -> the cap that measured best or within noise of it.
  EXPECT_EQ(cap_for(17), 2);   // 24 rows as the graph: 384 blocks, one wave (cap 1: 192, one an SM or two)
  EXPECT_EQ(cap_for(24), 2);
  EXPECT_EQ(cap_for(32), 1);   // 256 (cap 2: 512 = 1.29 waves, the worst)
  EXPECT_EQ(cap_for(40), 1);
  EXPECT_EQ(cap_for(48), 1);   // 384
  EXPECT_EQ(cap_for(56), 3);   // 448 and 896 blocks use 57% / 75% of their waves' slots, 1344 85%
  EXPECT_EQ(cap_for(64), 2);   // 1024 = 2.59 waves (cap 1: 1.29)
  EXPECT_EQ(cap_for(80), 1);   // 640 = 1.62 waves (81% of two waves' slots)
  EXPECT_EQ(cap_for(96), 1);   // 768 = 1.94
  EXPECT_EQ(cap_for(128), 1);  // 1024 = 2.59
  EXPECT_EQ(cap_for(256), 1);
}

TEST(DecodeSplitCap, ABatchAndTheGraphItPadsToShareTheCap) {
  // Rows are read rounded up to 8 (the capture sizes' step from 16 to 256): 17..24 as 24, 25..32 as 32.
  for (int64_t rows = 17; rows <= 24; ++rows) EXPECT_EQ(cap_for(rows), cap_for(24)) << rows;
  for (int64_t rows = 25; rows <= 32; ++rows) EXPECT_EQ(cap_for(rows), cap_for(32)) << rows;
  EXPECT_NE(cap_for(24), cap_for(25));  // a bound between two capture sizes
}

TEST(DecodeSplitCap, OneWaveNeedsAboutTwoBlocksAnSm) {
  // 1.9 x 132 = 250.8 blocks (one kv head, so rows are the pairs): 256 at cap 1 is enough, 248 is
  // not (SMs with one block); then cap 2 (496 blocks, 63% of two waves' slots) is not either, cap 3
  // (744, 94%) is.
  EXPECT_EQ(cap_for(256, 1), 1);
  EXPECT_EQ(cap_for(248, 1), 3);
  EXPECT_EQ(cap_for(248, 1, kSlots128, 2), 2);  // neither 1 nor 2 qualifies: the most
}

TEST(DecodeSplitCap, WholeWavesSlotsUsed) {
  // Two waves offer 792 slots; 80% of them is 633.6 blocks.
  EXPECT_EQ(cap_for(640, 1), 1);
  EXPECT_EQ(cap_for(632, 1), 3);  // cap 2: 1264 of 1584 (79.8%); cap 3: 1896 of 1980
  EXPECT_EQ(cap_for(792, 1), 1);  // exactly 2 waves
}

TEST(DecodeSplitCap, HeadDim64KvHeadsAndMost) {
  // head_dim 64: 528 slots. 64 rows x 8 kv heads = 512 blocks: one wave at cap 1.
  EXPECT_EQ(cap_for(64, 8, kSlots64), 1);
  EXPECT_EQ(cap_for(72, 8, kSlots64), 3);  // 576: 55% of 2 waves; 1152: 73% of 3; 1728: 82% of 4
  // qwen3-30b-a3b: 4 kv heads. bs 64 = 256 pairs: one wave at cap 1.
  EXPECT_EQ(cap_for(64, 4), 1);
  // `most` bounds it (a short table: that many splits at most) and is the answer when nothing fits.
  EXPECT_EQ(cap_for(56, 8, kSlots128, 2), 2);
  EXPECT_EQ(cap_for(17, 8, kSlots128, 1), 1);
}

TEST(DecodeSplitCap, DegenerateInputsGiveOne) {
  EXPECT_EQ(ops::wide_split_cap(0, 8, kSlots128, kSms, 4), 1);
  EXPECT_EQ(ops::wide_split_cap(64, 0, kSlots128, kSms, 4), 1);
  EXPECT_EQ(ops::wide_split_cap(64, 8, 0, kSms, 4), 1);
  EXPECT_EQ(ops::wide_split_cap(64, 8, kSlots128, 0, 4), 1);
  EXPECT_EQ(ops::wide_split_cap(64, 8, kSlots128, kSms, 0), 1);
}

// Below SMs pairs: the chunk each pairs bucket measured best at (H100, ctx 1024; the buckets from
// 8 pairs on re-measured in bench/results/h100_2026-11-26_session33 call H, 128 / 256 / 512 at
// qwen3-0.6b, llama-3.1-8b and qwen3-30b-a3b bs 2..16).
TEST(DecodeMmaChunkByPairs, H100PointsTakeTheMeasuredBestChunk) {
  EXPECT_EQ(ops::decode_mma_chunk_by_pairs(4), 64);    // qwen3-30b-a3b bs 1 (4 kv heads): 128 slower
  EXPECT_EQ(ops::decode_mma_chunk_by_pairs(8), 128);   // qwen3-0.6b bs 1: 128 faster than 64; llama even
  EXPECT_EQ(ops::decode_mma_chunk_by_pairs(16), 128);  // bs 2 of 8 kv heads, qwen3-30b-a3b bs 4
  EXPECT_EQ(ops::decode_mma_chunk_by_pairs(32), 256);  // bs 4 of 8 kv heads, qwen3-30b-a3b bs 8
  EXPECT_EQ(ops::decode_mma_chunk_by_pairs(64), 512);  // bs 8 of 8 kv heads
  EXPECT_EQ(ops::decode_mma_chunk_by_pairs(128), 512); // bs 16
}

TEST(DecodeMmaChunkByPairs, BucketBoundsAndDegenerateInputs) {
  EXPECT_EQ(ops::decode_mma_chunk_by_pairs(1), 64);
  EXPECT_EQ(ops::decode_mma_chunk_by_pairs(5), 128);
  EXPECT_EQ(ops::decode_mma_chunk_by_pairs(17), 256);
  EXPECT_EQ(ops::decode_mma_chunk_by_pairs(33), 512);
  EXPECT_EQ(ops::decode_mma_chunk_by_pairs(0), 64);
  EXPECT_EQ(ops::decode_mma_chunk_by_pairs(-3), 64);
}

}  // namespace
}  // namespace grt
