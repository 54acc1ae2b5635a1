// VmmSpaces on the CPU backend (memfd chunks): max(shape) not sum(shape) over many captures,
// shared pages between spaces, lazy mapping, block reuse within a space, the physical budget,
// use from a capturing stream, and release of every mapping (checked in /proc/self/maps).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"
#include "device/device.h"
#include "device/event.h"
#include "device/graph.h"
#include "device/stream.h"
#include "memory/caching_allocator.h"
#include "memory/vmm_spaces.h"
#include "proc_maps.h"
#include "vmm_checks.h"

namespace grt {
namespace {

using testing::maps_line;
using testing::open_fds;
using testing::shows_chunk;
using testing::vmm_map_lines;

const Device kCpu = Device::cpu();
constexpr size_t KiB = 1024;
constexpr size_t MiB = 1024 * KiB;

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(text, needle) EXPECT_NE(std::string(text).find(needle), std::string::npos) << (text)

// A "forward pass" of scale s: a hidden state of s bytes, and for each layer an intermediate of
// 2s that replaces the hidden state. Its peak (and with reuse, its footprint) is 3s; without
// reuse it would cost the sum of its intermediates. Keeps the last hidden state as the output.
void* fake_forward(VmmSpaces& spaces, Stream& s, size_t scale, int layers) {
  void* hidden = spaces.allocate(scale, s);
  std::memset(hidden, 1, scale);
  for (int l = 0; l < layers; ++l) {
    void* inter = spaces.allocate(2 * scale, s);
    std::memset(inter, 2, 2 * scale);
    spaces.free(hidden);
    hidden = spaces.allocate(scale, s);
    std::memset(hidden, 3, scale);
    spaces.free(inter);
  }
  return hidden;
}

// ---- max(shape), not sum(shape) -------------------------------------------------------------

TEST(VmmSpaces, TwentyCapturesHoldTheLargestNotTheSum) {
  const size_t lines_before = vmm_map_lines();
  auto s = new_stream(kCpu);
  std::vector<std::pair<char*, size_t>> ranges;
  {
    VmmSpaces spaces(kCpu, 64 * MiB);
    const size_t g = spaces.granularity();
    ASSERT_EQ(g, 2 * MiB);
    EXPECT_EQ(spaces.space_bytes(), 64 * MiB + VmmSpaces::kSlackGranules * g);
    EXPECT_EQ(spaces.stats().physical_bytes, 0u);

    size_t largest_need = 0, sum_need = 0, sum_mapped = 0;
    std::vector<void*> outputs;
    for (int k = 0; k < 20; ++k) {
      const size_t scale = static_cast<size_t>(k < 10 ? k + 1 : 20 - k) * 700 * KiB;  // up, then down
      const uint64_t id = spaces.switch_to_new_virtual_space();
      EXPECT_EQ(id, static_cast<uint64_t>(k + 1));
      EXPECT_EQ(spaces.current_space(), id);
      outputs.push_back(fake_forward(spaces, *s, scale, 4));
      const VmmSpaceStats st = spaces.space_stats(id);
      EXPECT_EQ(st.high_water_bytes, 3 * scale) << "capture " << k << ": reuse failed";
      EXPECT_EQ(st.mapped_bytes, testing::covering_prefix_end(spaces.chunk_bytes(), 3 * scale))
          << "capture " << k << ": not lazily mapped";
      EXPECT_EQ(st.live_blocks, 1u);
      EXPECT_EQ(st.live_bytes, scale);
      largest_need = std::max(largest_need, 3 * scale);
      sum_need += 3 * scale;
      sum_mapped += st.mapped_bytes;
      ranges.emplace_back(static_cast<char*>(st.base), st.reserved_bytes);
    }
    const VmmStats st = spaces.stats();
    EXPECT_EQ(st.physical_bytes, round_up(largest_need, g));
    EXPECT_EQ(st.largest_space_bytes, largest_need);
    EXPECT_LT(st.physical_bytes * 5, sum_need);  // nowhere near the sum
    EXPECT_EQ(st.spaces, 20u);
    EXPECT_EQ(st.reserved_virtual_bytes, 20 * spaces.space_bytes());
    EXPECT_EQ(st.mapped_bytes, sum_mapped);
    EXPECT_EQ(st.live_blocks, 20u);
    EXPECT_EQ(vmm_map_lines() - lines_before, st.mappings);  // one line per chunk mapping

    // Distinct, disjoint virtual ranges.
    std::vector<std::pair<char*, size_t>> sorted = ranges;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 1; i < sorted.size(); ++i)
      EXPECT_LE(sorted[i - 1].first + sorted[i - 1].second, sorted[i].first) << "ranges " << i - 1 << " and " << i;
    for (void* p : outputs) spaces.free(p);
    EXPECT_EQ(spaces.stats().live_bytes, 0u);
    EXPECT_EQ(spaces.stats().physical_bytes, round_up(largest_need, g));  // frees keep the chunks
  }
  EXPECT_EQ(vmm_map_lines(), lines_before);
  for (auto& [base, size] : ranges) {
    EXPECT_EQ(maps_line(base), "") << "range at " << static_cast<void*>(base) << " still reserved";
    EXPECT_EQ(maps_line(base + size - 1), "");
  }
}

// ---- shared pages ---------------------------------------------------------------------------

TEST(VmmSpaces, BytesWrittenThroughOneSpaceShowInAnother) {
  auto s = new_stream(kCpu);
  VmmSpaces spaces(kCpu, 16 * MiB);
  const size_t g = spaces.granularity();
  spaces.switch_to_new_virtual_space();
  const size_t n = 3 * MiB;  // spans chunks 0 and 1
  auto* a = static_cast<unsigned char*>(spaces.allocate(n, *s));
  for (size_t i = 0; i < n; ++i) a[i] = static_cast<unsigned char>(i * 7 + 3);

  spaces.switch_to_new_virtual_space();
  auto* b = static_cast<unsigned char*>(spaces.allocate(n, *s));
  EXPECT_NE(a, b);
  EXPECT_EQ(b - static_cast<unsigned char*>(spaces.space_stats(2).base),
            a - static_cast<unsigned char*>(spaces.space_stats(1).base));  // same offset
  EXPECT_EQ(std::memcmp(a, b, n), 0);
  EXPECT_EQ(b[g - 1], static_cast<unsigned char>((g - 1) * 7 + 3));  // across the chunk boundary
  EXPECT_EQ(b[g], static_cast<unsigned char>(g * 7 + 3));
  // And back: a write through the second space shows through the first.
  std::memset(b + g - 8, 0xAB, 16);
  for (size_t i = g - 8; i < g + 8; ++i) EXPECT_EQ(a[i], 0xAB) << i;
  // Through stream work as well.
  s->memset_async(b, 0x5C, 4096);
  s->synchronize();
  EXPECT_EQ(a[0], 0x5C);
  EXPECT_EQ(a[4095], 0x5C);
  EXPECT_EQ(spaces.stats().physical_bytes, 2 * g);
  spaces.free(a);
  spaces.free(b);
}

// ---- lazy mapping ---------------------------------------------------------------------------

TEST(VmmSpaces, ANewSpaceMapsOnlyTheChunksItsAllocationsReach) {
  const size_t lines_before = vmm_map_lines();
  auto s = new_stream(kCpu);
  VmmSpaces spaces(kCpu, 32 * MiB);
  const size_t g = spaces.granularity();
  ASSERT_EQ(g, 2 * MiB);
  spaces.switch_to_new_virtual_space();
  // Each growth creates one chunk covering the shortfall: [0, 2), [2, 4), [4, 10) MiB.
  void* first = spaces.allocate(1 * MiB, *s);
  void* second = spaces.allocate(3 * MiB, *s);
  void* third_block = spaces.allocate(5 * MiB, *s);
  EXPECT_EQ(spaces.chunk_bytes(), (std::vector<size_t>{g, g, 3 * g}));
  EXPECT_EQ(spaces.stats().physical_bytes, 5 * g);
  EXPECT_EQ(spaces.space_stats(1).mapped_bytes, 5 * g);
  EXPECT_EQ(spaces.space_stats(1).mappings, 3u);

  const uint64_t small_id = spaces.switch_to_new_virtual_space();
  auto* base = static_cast<char*>(spaces.space_stats(small_id).base);
  EXPECT_EQ(spaces.space_stats(small_id).mapped_bytes, 0u);  // nothing mapped up front
  EXPECT_FALSE(shows_chunk(base));
  void* small = spaces.allocate(1000, *s);
  EXPECT_EQ(small, base);
  EXPECT_EQ(spaces.space_stats(small_id).mapped_bytes, g);
  EXPECT_TRUE(shows_chunk(base));
  EXPECT_FALSE(shows_chunk(base + g));  // still the PROT_NONE reservation
  EXPECT_NE(maps_line(base + g), "");
  EXPECT_EQ(spaces.stats().physical_bytes, 5 * g);  // no new chunk
  EXPECT_EQ(vmm_map_lines() - lines_before, 4u);

  // Growing the small space maps the chunks it reaches, whole; past the last chunk, one new
  // chunk covers the shortfall; the first space does not get it.
  void* more = spaces.allocate(5 * MiB, *s);  // [1024, 1024 + 5 MiB): chunks 0..2
  EXPECT_EQ(spaces.space_stats(small_id).mapped_bytes, 5 * g);
  EXPECT_TRUE(shows_chunk(base + 10 * MiB - 1));
  EXPECT_FALSE(shows_chunk(base + 10 * MiB));
  void* huge = spaces.allocate(8 * MiB, *s);  // reaches offset 13 MiB + 1024: chunk [10, 14) MiB
  const size_t end = spaces.space_stats(small_id).high_water_bytes;
  EXPECT_EQ(end, 1024 + 5 * MiB + 8 * MiB);
  EXPECT_EQ(spaces.chunk_bytes(), (std::vector<size_t>{g, g, 3 * g, 2 * g}));
  EXPECT_EQ(spaces.stats().physical_bytes, round_up(end, g));
  EXPECT_EQ(spaces.space_stats(small_id).mapped_bytes, round_up(end, g));
  EXPECT_EQ(spaces.space_stats(1).mapped_bytes, 5 * g);
  EXPECT_EQ(spaces.stats().largest_space_bytes, end);
  EXPECT_EQ(testing::lazy_mapping_error(spaces), "");

  // extend_mapping maps existing chunks into the current space ahead of its allocations.
  const uint64_t third = spaces.switch_to_new_virtual_space();
  spaces.extend_mapping(spaces.stats().physical_bytes);
  EXPECT_EQ(spaces.space_stats(third).mapped_bytes, spaces.stats().physical_bytes);
  EXPECT_EQ(spaces.space_stats(third).high_water_bytes, 0u);
  EXPECT_EQ(spaces.stats().mappings, 3u + 4u + 4u);
  EXPECT_EQ(vmm_map_lines() - lines_before, spaces.stats().mappings);
  for (void* p : {first, second, third_block, small, more, huge}) spaces.free(p);
}

// The first capture leaves several chunks; with none of its blocks live, the next space begins
// by merging them into one, remapped at the same addresses: the first space's memory stays
// usable (same bytes seen through both spaces), later spaces map one chunk.
TEST(VmmSpaces, ChunksOfAFinishedCaptureAreConsolidatedIntoOne) {
  const size_t lines_before = vmm_map_lines(), fds_before = open_fds();
  auto s = new_stream(kCpu);
  VmmSpaces spaces(kCpu, 32 * MiB);
  const size_t g = spaces.granularity();
  spaces.switch_to_new_virtual_space();
  auto* base1 = static_cast<char*>(spaces.space_stats(1).base);
  std::vector<void*> blocks;
  for (size_t n : {MiB, 3 * MiB, 5 * MiB}) blocks.push_back(spaces.allocate(n, *s));  // chunks of g, g, 3g
  EXPECT_EQ(spaces.stats().chunks, 3u);
  for (void* p : blocks) spaces.free(p);
  spaces.switch_to_new_virtual_space();
  VmmStats st = spaces.stats();
  EXPECT_EQ(st.consolidations, 1u);
  EXPECT_EQ(spaces.chunk_bytes(), (std::vector<size_t>{5 * g}));
  EXPECT_EQ(st.physical_bytes, 5 * g);
  EXPECT_EQ(spaces.space_stats(1).mapped_bytes, 5 * g);
  EXPECT_EQ(spaces.space_stats(1).mappings, 1u);
  EXPECT_EQ(spaces.space_stats(2).mapped_bytes, 0u);
  EXPECT_EQ(open_fds() - fds_before, 1u);
  EXPECT_TRUE(shows_chunk(base1 + 9 * MiB));
  char* b = static_cast<char*>(spaces.allocate(9 * MiB, *s));  // maps the one chunk
  EXPECT_EQ(spaces.space_stats(2).mappings, 1u);
  std::memset(b + 8 * MiB, 0x3C, 64);
  EXPECT_EQ(base1[8 * MiB + 5], 0x3C);  // the first space's addresses show the same new chunk
  EXPECT_EQ(vmm_map_lines() - lines_before, spaces.stats().mappings);
  EXPECT_EQ(testing::lazy_mapping_error(spaces), "");
  // A live block keeps the chunks as they are (its bytes must survive).
  void* more = spaces.allocate(4 * MiB, *s);  // a second chunk
  ASSERT_EQ(spaces.stats().chunks, 2u);
  spaces.switch_to_new_virtual_space();
  EXPECT_EQ(spaces.stats().consolidations, 1u);
  EXPECT_EQ(spaces.stats().chunks, 2u);
  spaces.free(b);
  spaces.free(more);
}

// ---- reuse within a space ---------------------------------------------------------------------

TEST(VmmSpaces, BlocksAreAlignedReusedAndMerged) {
  auto s = new_stream(kCpu);
  VmmSpaces spaces(kCpu, 8 * MiB);
  spaces.switch_to_new_virtual_space();
  auto* base = static_cast<char*>(spaces.space_stats(1).base);
  auto* a = static_cast<char*>(spaces.allocate(1000, *s));  // 1024
  auto* b = static_cast<char*>(spaces.allocate(0, *s));     // 512: a real, distinct block
  auto* c = static_cast<char*>(spaces.allocate(4096, *s));
  EXPECT_EQ(a, base);
  EXPECT_EQ(b, base + 1024);
  EXPECT_EQ(c, base + 1536);
  for (void* p : {a, b, c}) EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % VmmSpaces::kAlignment, 0u);
  EXPECT_EQ(spaces.block_size(a), 1024u);
  EXPECT_EQ(spaces.block_size(b), 512u);
  EXPECT_TRUE(spaces.owns(c));
  EXPECT_FALSE(spaces.owns(c + 512));

  spaces.free(b);
  EXPECT_FALSE(spaces.owns(b));
  auto* d = static_cast<char*>(spaces.allocate(100, *s));
  EXPECT_EQ(d, b);  // best fit: the freed 512-byte hole
  spaces.free(a);
  spaces.free(d);  // merges with a's block: [0, 1536) free
  auto* e = static_cast<char*>(spaces.allocate(1536, *s));
  EXPECT_EQ(e, base);
  EXPECT_EQ(spaces.space_stats(1).high_water_bytes, 1536u + 4096u);

  // A free block at the top grows into a larger request instead of leaving a hole.
  spaces.free(c);
  auto* f = static_cast<char*>(spaces.allocate(64 * KiB, *s));
  EXPECT_EQ(f, c);
  EXPECT_EQ(spaces.space_stats(1).high_water_bytes, 1536u + 64 * KiB);
  spaces.free(e);
  spaces.free(f);
  // Everything free and merged: the whole high-water region is one block again.
  auto* g = static_cast<char*>(spaces.allocate(1536 + 64 * KiB, *s));
  EXPECT_EQ(g, base);
  spaces.free(g);

  EXPECT_HAS(error_of([&] { spaces.free(g); }), "not a live block");  // double free
  int local = 0;
  EXPECT_HAS(error_of([&] { spaces.free(&local); }), "not a live block");
  EXPECT_HAS(error_of([&] { spaces.block_size(&local); }), "not a live block");
  EXPECT_EQ(spaces.stats().live_blocks, 0u);
  EXPECT_EQ(spaces.stats().live_bytes, 0u);
}

TEST(VmmSpaces, AFreedBlockIsReusedOnlyByItsOwnStream) {
  auto s1 = new_stream(kCpu), s2 = new_stream(kCpu);
  VmmSpaces spaces(kCpu, 8 * MiB);
  spaces.switch_to_new_virtual_space();
  void* x = spaces.allocate(4096, *s1);
  void* y = spaces.allocate(4096, *s1);  // x is not the top block
  spaces.free(x);
  void* z = spaces.allocate(4096, *s2);  // another stream of the same graph may still race with x's users
  EXPECT_NE(z, x);
  void* w = spaces.allocate(4096, *s1);
  EXPECT_EQ(w, x);
  spaces.free(y);  // a hole of s1 between w and z: not for s2 either
  void* v = spaces.allocate(4096, *s2);
  EXPECT_NE(v, y);
  for (void* p : {z, w, v}) spaces.free(p);
}

TEST(VmmSpaces, RandomSequenceKeepsBlocksDisjointAndStatsExact) {
  auto s = new_stream(kCpu);
  VmmSpaces spaces(kCpu, 64 * MiB);
  std::mt19937 rng(7);
  std::vector<std::pair<char*, size_t>> live;
  size_t live_bytes = 0;
  for (int space = 0; space < 5; ++space) {
    spaces.switch_to_new_virtual_space();
    for (int step = 0; step < 400; ++step) {
      if (!live.empty() && rng() % 3 == 0) {
        size_t i = rng() % live.size();
        live_bytes -= spaces.block_size(live[i].first);
        spaces.free(live[i].first);
        live.erase(live.begin() + static_cast<long>(i));
      } else {
        size_t n = rng() % 3 == 0 ? rng() % (256 * KiB) : rng() % 4096;
        auto* p = static_cast<char*>(spaces.allocate(n, *s));
        EXPECT_EQ(spaces.block_size(p), round_up(std::max<size_t>(n, 1), VmmSpaces::kAlignment));
        live_bytes += spaces.block_size(p);
        live.emplace_back(p, n);
      }
    }
    // Blocks of this space are disjoint (blocks of different spaces are at different addresses).
    std::vector<std::pair<char*, size_t>> sorted;
    for (auto& [p, n] : live) sorted.emplace_back(p, spaces.block_size(p));
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 1; i < sorted.size(); ++i) ASSERT_LE(sorted[i - 1].first + sorted[i - 1].second, sorted[i].first);
    EXPECT_EQ(spaces.stats().live_bytes, live_bytes);
    EXPECT_EQ(spaces.stats().live_blocks, live.size());
  }
  for (auto& [p, n] : live) spaces.free(p);
  EXPECT_EQ(spaces.stats().live_bytes, 0u);
  EXPECT_EQ(spaces.stats().physical_bytes, round_up(spaces.stats().largest_space_bytes, spaces.granularity()));
}

// ---- many captures --------------------------------------------------------------------------

TEST(VmmSpaces, AThousandSpacesOfSmallAllocationsLeakNothing) {
  const size_t lines_before = vmm_map_lines();
  const size_t fds_before = open_fds();
  auto s = new_stream(kCpu);
  {
    VmmSpaces spaces(kCpu, 4 * MiB);
    const size_t g = spaces.granularity();
    std::vector<void*> outputs;
    for (int k = 0; k < 1000; ++k) {
      spaces.switch_to_new_virtual_space();
      void* a = spaces.allocate(100 + k, *s);
      void* b = spaces.allocate(3000, *s);
      spaces.free(a);
      void* c = spaces.allocate(64 * KiB, *s);
      spaces.free(b);
      spaces.free(c);
      outputs.push_back(spaces.allocate(512, *s));  // the capture's output stays live
    }
    VmmStats st = spaces.stats();
    EXPECT_EQ(st.spaces, 1000u);
    EXPECT_EQ(st.physical_bytes, g);  // every space fits in chunk 0
    EXPECT_EQ(st.mapped_bytes, 1000 * g);
    EXPECT_EQ(st.reserved_virtual_bytes, 1000 * spaces.space_bytes());
    EXPECT_EQ(st.live_blocks, 1000u);
    EXPECT_EQ(st.live_bytes, 1000 * 512u);
    EXPECT_EQ(st.largest_space_bytes, 1536u + 3072u + 64 * KiB);  // the first block peaks at 1536
    EXPECT_EQ(vmm_map_lines() - lines_before, 1000u);
    EXPECT_EQ(open_fds() - fds_before, 1u);  // one memfd: the one chunk
    for (void* p : outputs) spaces.free(p);
    EXPECT_EQ(spaces.stats().live_bytes, 0u);
  }
  EXPECT_EQ(vmm_map_lines(), lines_before);
  EXPECT_EQ(open_fds(), fds_before);
}

// ---- budget and errors ----------------------------------------------------------------------

TEST(VmmSpaces, ExhaustingTheBudgetIsAClearErrorAndEarlierBlocksStayValid) {
  auto s = new_stream(kCpu);
  VmmSpaces spaces(kCpu, 6 * MiB + 12345, 32 * MiB);  // 3 chunks
  EXPECT_EQ(spaces.budget(), 6 * MiB);
  spaces.switch_to_new_virtual_space();
  auto* a = static_cast<uint32_t*>(spaces.allocate(3 * MiB, *s));
  for (size_t i = 0; i < 3 * MiB / 4; ++i) a[i] = static_cast<uint32_t>(i);
  const VmmStats before = spaces.stats();
  EXPECT_EQ(before.physical_bytes, 4 * MiB);

  const std::string msg = error_of([&] { spaces.allocate(4 * MiB, *s); });  // would end at 7 MiB
  EXPECT_HAS(msg, "out of graph memory on cpu");
  EXPECT_HAS(msg, "asked 4194304 bytes");
  EXPECT_HAS(msg, "need 8388608 bytes");
  EXPECT_HAS(msg, "holding 4194304 bytes");
  EXPECT_HAS(msg, "budget 6291456 bytes");
  EXPECT_EQ(spaces.stats(), before);  // nothing changed
  EXPECT_HAS(error_of([&] { spaces.extend_mapping(8 * MiB); }), "budget 6291456 bytes");

  // Earlier blocks stay readable and writable; what fits still allocates.
  for (size_t i = 0; i < 3 * MiB / 4; ++i) ASSERT_EQ(a[i], static_cast<uint32_t>(i));
  a[0] = 42;
  EXPECT_EQ(a[0], 42u);
  void* fits = spaces.allocate(2 * MiB, *s);  // ends at 5 MiB: chunk 2
  EXPECT_EQ(spaces.stats().physical_bytes, 6 * MiB);
  EXPECT_HAS(error_of([&] { spaces.allocate(2 * MiB, *s); }), "out of graph memory");

  // A new space may use what exists; past it the same error; the first space's block still works.
  spaces.switch_to_new_virtual_space();
  void* b = spaces.allocate(6 * MiB, *s);
  EXPECT_HAS(error_of([&] { spaces.allocate(1, *s); }), "out of graph memory");
  EXPECT_EQ(a[0], 42u);  // nothing wrote through the second space yet
  a[1] = 7;
  EXPECT_EQ(static_cast<uint32_t*>(b)[1], 7u);
  for (void* p : {static_cast<void*>(a), fits, b}) spaces.free(p);
}

TEST(VmmSpaces, MisuseIsAClearError) {
  auto s = new_stream(kCpu);
  EXPECT_HAS(error_of([&] { VmmSpaces bad(kCpu, 1000); }), "less than one chunk");
  VmmSpaces spaces(kCpu, 0, 4 * MiB);
  EXPECT_EQ(spaces.space_bytes(), 4 * MiB);
  EXPECT_EQ(spaces.current_space(), VmmSpaces::kNoSpace);
  EXPECT_HAS(error_of([&] { spaces.allocate(10, *s); }), "no current space");
  EXPECT_HAS(error_of([&] { spaces.extend_mapping(10); }), "no current space");
  spaces.switch_to_new_virtual_space();
  std::string full = error_of([&] { spaces.allocate(5 * MiB, *s); });
  EXPECT_HAS(full, "virtual range is full");
  EXPECT_HAS(full, "allocating 5242880 bytes in VMM space 1");
  EXPECT_HAS(error_of([&] { spaces.allocate(SIZE_MAX, *s); }), "virtual range is full");
  void* p = spaces.allocate(3 * MiB, *s);
  EXPECT_HAS(error_of([&] { spaces.allocate(2 * MiB, *s); }), "virtual range is full");
  EXPECT_HAS(error_of([&] { spaces.space_stats(2); }), "does not exist");
  EXPECT_EQ(spaces.stats().live_blocks, 1u);
  spaces.free(p);
  spaces.free(nullptr);  // like free(3)

  // The default space size: the budget rounded up plus a few granules.
  VmmSpaces with_budget(kCpu, 5 * MiB);
  EXPECT_EQ(with_budget.budget(), 4 * MiB);
  EXPECT_EQ(with_budget.space_bytes(), 4 * MiB + VmmSpaces::kSlackGranules * with_budget.granularity());
}

// ---- capture --------------------------------------------------------------------------------

TEST(VmmSpaces, AllocatesAndMapsOnACapturingStream) {
  auto s = new_stream(kCpu);
  VmmSpaces spaces(kCpu, 16 * MiB);
  spaces.switch_to_new_virtual_space();
  s->begin_capture();
  auto* p = static_cast<unsigned char*>(spaces.allocate(3 * MiB, *s));  // creates and maps 2 chunks
  s->memset_async(p, 0x3D, 3 * MiB);
  std::unique_ptr<Graph> graph = s->end_capture();
  EXPECT_EQ(spaces.stats().physical_bytes, 4 * MiB);
  auto exec = graph->instantiate();
  exec->launch(*s);
  s->synchronize();
  EXPECT_EQ(p[0], 0x3D);
  EXPECT_EQ(p[3 * MiB - 1], 0x3D);
  spaces.free(p);
}

TEST(VmmSpaces, ServesACaptureRoutedThroughTheCachingAllocator) {
  auto s = new_stream(kCpu);
  auto spaces = std::make_shared<VmmSpaces>(kCpu, 16 * MiB);
  CachingAllocator& alloc = CachingAllocator::get(kCpu);
  spaces->switch_to_new_virtual_space();
  s->begin_capture();
  alloc.route_capture(s->capture_id(), std::static_pointer_cast<CaptureArena>(spaces));
  void* p = alloc.allocate(5000, *s);
  EXPECT_TRUE(spaces->owns(p));
  EXPECT_EQ(spaces->stats().live_bytes, round_up(5000, VmmSpaces::kAlignment));
  s->memset_async(p, 1, 5000);
  alloc.free(p);  // back to the arena
  EXPECT_EQ(spaces->stats().live_blocks, 0u);
  alloc.unroute_capture(s->capture_id());
  auto graph = s->end_capture();
}

// ---- threads --------------------------------------------------------------------------------

TEST(VmmSpaces, ThreadsAllocatingConcurrentlyKeepExactStats) {
  VmmSpaces spaces(kCpu, 64 * MiB);
  spaces.switch_to_new_virtual_space();
  std::vector<std::thread> threads;
  std::vector<std::vector<void*>> kept(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto s = new_stream(kCpu);
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int i = 0; i < 500; ++i) {
        void* p = spaces.allocate(512 * (1 + rng() % 64), *s);
        std::memset(p, t, 512);
        if (i % 5 == 0) {
          kept[t].push_back(p);
        } else {
          spaces.free(p);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  size_t bytes = 0, blocks = 0;
  for (auto& v : kept) {
    blocks += v.size();
    for (void* p : v) bytes += spaces.block_size(p);
  }
  EXPECT_EQ(spaces.stats().live_blocks, blocks);
  EXPECT_EQ(spaces.stats().live_bytes, bytes);
  for (auto& v : kept)
    for (void* p : v) spaces.free(p);
  EXPECT_EQ(spaces.stats().live_bytes, 0u);
}

// ---- release --------------------------------------------------------------------------------

TEST(VmmSpaces, DestructionReleasesEveryMappingRangeAndChunk) {
  const size_t lines_before = vmm_map_lines();
  const size_t fds_before = open_fds();
  std::vector<char*> bases;
  auto s = new_stream(kCpu);
  {
    VmmSpaces spaces(kCpu, 32 * MiB);
    for (int k = 0; k < 6; ++k) {
      spaces.switch_to_new_virtual_space();
      bases.push_back(static_cast<char*>(spaces.allocate((k + 1) * 1536 * KiB, *s)));
      s->memset_async(bases.back(), k, 4096);  // queued work: the destructor waits for it
    }
    EXPECT_EQ(vmm_map_lines() - lines_before, spaces.stats().mappings);
    EXPECT_EQ(open_fds() - fds_before, spaces.stats().chunks);
    // Blocks left live: the destructor warns, and still releases everything.
  }
  EXPECT_EQ(vmm_map_lines(), lines_before);
  EXPECT_EQ(open_fds(), fds_before);
  for (char* b : bases) EXPECT_EQ(maps_line(b), "") << static_cast<void*>(b);
}

}  // namespace
}  // namespace grt
