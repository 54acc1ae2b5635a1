// The kernel timeline (core/kernel_timeline.h) and its layer view (core/kernel_layers.h) on
// synthetic records: slots matched across runs, medians, overlaps (negative gaps, as PDL gives),
// the repeating layer block with head and tail apart, and clear errors on bad input.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/kernel_layers.h"
#include "core/kernel_timeline.h"
#include "error_of.h"

namespace grt {
namespace {

using grt::testing::error_of;

// A run of kernels laid out on one stream from `begin`: each (name, duration ns, gap ns before it).
struct K {
  std::string name;
  uint64_t dur;
  int64_t gap;
  int grid = 1;
  uint64_t node = 0;
};

void lay_out(std::vector<KernelRecord>& out, uint64_t begin, const std::vector<K>& ks) {
  uint64_t end = begin;
  for (const K& k : ks) {
    KernelRecord r;
    r.name = k.name;
    r.function = "void ns::" + k.name + "<1>(int)";
    r.start_ns = static_cast<uint64_t>(static_cast<int64_t>(end) + k.gap);
    r.end_ns = r.start_ns + k.dur;
    r.grid = {k.grid, 1, 1};
    r.graph_id = k.node ? 7 : 0;
    r.graph_node_id = k.node;
    end = r.end_ns;
    out.push_back(r);
  }
}

TEST(KernelTimeline, MediansOverRunsWithOverlapAndGaps) {
  std::vector<KernelRecord> recs;
  std::vector<StepWindow> win;
  // Three runs: b overlaps a by 1 us (PDL), c waits 2 us; run 1 is slower everywhere.
  const uint64_t dur_a[] = {10000, 30000, 12000};
  for (int s = 0; s < 3; ++s) {
    const uint64_t t0 = 1000000 * static_cast<uint64_t>(s + 1);
    lay_out(recs, t0 + 5000, {{"a", dur_a[s], 0}, {"b", 4000, -1000}, {"c", 6000, 2000}});
    win.push_back({t0, t0 + 500000});
  }
  const StepTimeline t = step_timeline(recs, win);
  ASSERT_EQ(t.steps, 3);
  ASSERT_EQ(t.slots.size(), 3u);
  EXPECT_EQ(t.slots[0].name, "a");
  EXPECT_EQ(t.slots[2].name, "c");
  EXPECT_DOUBLE_EQ(t.slots[0].dur_us, 12.0);  // median of 10, 30, 12
  EXPECT_DOUBLE_EQ(t.slots[0].gap_us, 0.0);
  EXPECT_DOUBLE_EQ(t.slots[0].advance_us, 12.0);
  EXPECT_DOUBLE_EQ(t.slots[1].gap_us, -1.0);
  EXPECT_DOUBLE_EQ(t.slots[1].advance_us, 3.0);  // 4 us long, 1 us of it under a
  EXPECT_DOUBLE_EQ(t.slots[2].gap_us, 2.0);
  EXPECT_DOUBLE_EQ(t.slots[2].advance_us, 8.0);
  EXPECT_DOUBLE_EQ(t.span_us, 12.0 + 3.0 + 8.0);
  EXPECT_DOUBLE_EQ(t.busy_us, 12.0 + 4.0 + 6.0);
  EXPECT_DOUBLE_EQ(t.lead_us, 5.0);
}

// Kernels back to back with no gap: the busy time is exactly the span. Summed in microseconds,
// 0.001 + 0.014 + 3.825 came out one rounding step above 3.84 (an H100 trace test failed so).
TEST(KernelTimeline, BackToBackKernelsAreBusyForExactlyTheSpan) {
  std::vector<KernelRecord> recs;
  lay_out(recs, 1000, {{"a", 1, 0}, {"b", 14, 0}, {"c", 3825, 0}});
  const StepTimeline t = step_timeline(recs, {{0, 10000}});
  EXPECT_DOUBLE_EQ(t.span_us, 3.84);
  EXPECT_LE(t.busy_us, t.span_us);
  EXPECT_EQ(t.busy_us, t.span_us);
}

TEST(KernelTimeline, GraphNodesMatchAcrossRunsByNodeNotByStartOrder) {
  std::vector<KernelRecord> recs;
  // Run 0 starts x then y; run 1 starts y first (two branches of a graph): x stays slot 0.
  lay_out(recs, 1000, {{"x", 100, 0, 1, 11}, {"y", 100, 0, 1, 12}});
  lay_out(recs, 5000, {{"y", 300, 0, 1, 12}, {"x", 100, 0, 1, 11}});
  const StepTimeline t = step_timeline(recs, {{0, 4000}, {4000, 9000}});
  ASSERT_EQ(t.slots.size(), 2u);
  EXPECT_EQ(t.slots[0].name, "x");
  EXPECT_TRUE(t.slots[0].in_graph);
  EXPECT_DOUBLE_EQ(t.slots[1].dur_us, 0.2);  // median of 0.1 and 0.3
}

TEST(KernelTimeline, BadInputIsAClearError) {
  std::vector<KernelRecord> one;
  lay_out(one, 1000, {{"a", 100, 0}});
  EXPECT_NE(error_of([&] { step_timeline(one, {}); }).find("no step windows"), std::string::npos);
  EXPECT_NE(error_of([&] { step_timeline(one, {{5000, 5000}}); }).find("not after its begin"), std::string::npos);
  EXPECT_NE(error_of([&] { step_timeline(one, {{0, 3000}, {2000, 4000}}); }).find("must not overlap"),
            std::string::npos);
  EXPECT_NE(error_of([&] { step_timeline(one, {{2000, 3000}}); }).find("outside every step window"),
            std::string::npos);
  EXPECT_NE(error_of([&] { step_timeline({}, {{0, 10}}); }).find("run 0 has no kernels"), std::string::npos);
  std::vector<KernelRecord> backwards = one;
  backwards[0].end_ns = backwards[0].start_ns - 1;
  EXPECT_NE(error_of([&] { step_timeline(backwards, {{0, 3000}}); }).find("before its start"), std::string::npos);
  std::vector<KernelRecord> untimed = one;
  untimed[0].start_ns = untimed[0].end_ns = 0;
  EXPECT_NE(error_of([&] { step_timeline(untimed, {{0, 3000}}); }).find("no timestamps"), std::string::npos);
  // Runs that differ: a kernel missing, or another kernel at a position.
  std::vector<KernelRecord> differ;
  lay_out(differ, 1000, {{"a", 100, 0}, {"b", 100, 0}});
  lay_out(differ, 5000, {{"a", 100, 0}});
  EXPECT_NE(error_of([&] { step_timeline(differ, {{0, 4000}, {4000, 9000}}); }).find("the runs differ"),
            std::string::npos);
  std::vector<KernelRecord> renamed;
  lay_out(renamed, 1000, {{"a", 100, 0}});
  lay_out(renamed, 5000, {{"z", 100, 0}});
  EXPECT_NE(error_of([&] { step_timeline(renamed, {{0, 4000}, {4000, 9000}}); }).find("where run 0 has 'a'"),
            std::string::npos);
}

// A step of `layers` layers of {norm, gemm, attn, gemm}, after a head {embed, norm} and before a
// tail {norm, lm_head, sample}; the first layer's attention takes 10 us, the others 5.
StepTimeline model_step(int layers) {
  std::vector<K> ks = {{"embed", 2000, 0}};
  for (int l = 0; l < layers; ++l) {
    ks.push_back({"norm", 1000, l == 0 ? 500 : -200});
    ks.push_back({"gemm", 3000, -300, 64});
    ks.push_back({"attn", l == 0 ? 10000u : 5000u, 100});
    ks.push_back({"gemm", 2000, -300, 32});
  }
  ks.push_back({"norm", 1000, -200});
  ks.push_back({"lm_head", 8000, 0});
  ks.push_back({"sample", 1500, 1000});
  std::vector<KernelRecord> recs;
  lay_out(recs, 10000, ks);
  return step_timeline(recs, {{0, 10000000}});
}

TEST(KernelLayers, FindsTheRepeatingBlockWithHeadAndTailApart) {
  const StepTimeline t = model_step(4);
  const LayerView v = layer_view(t, 4);
  EXPECT_EQ(v.period, 4);
  // "norm" runs 5 times (the final norm too), "gemm" grid 64 exactly 4: the block starts there.
  EXPECT_EQ(v.anchor, "gemm");
  EXPECT_EQ(v.first_slot, 2);
  ASSERT_EQ(v.head.size(), 2u);
  EXPECT_EQ(v.head[0].name, "embed");
  EXPECT_EQ(v.head[1].name, "norm");
  ASSERT_EQ(v.tail.size(), 2u);
  EXPECT_EQ(v.tail[0].name, "lm_head");
  EXPECT_EQ(v.tail[1].name, "sample");
  ASSERT_EQ(v.positions.size(), 4u);
  EXPECT_EQ(v.positions[1].name, "attn");
  EXPECT_DOUBLE_EQ(v.positions[1].dur_us, 5.0);  // median over the layers: the slow first one is out
  EXPECT_NEAR(v.positions[1].advance_sum_us, 10.1 + 3 * 5.1, 1e-9);
  EXPECT_DOUBLE_EQ(v.positions[3].name == "norm" ? v.positions[3].gap_us : -1, -0.2);
  EXPECT_FALSE(v.positions[0].varies);
  // The parts add up to the step's span: head + layers + tail.
  EXPECT_NEAR(v.head_us + v.layers_us + v.tail_us, t.span_us, 1e-9);
  const std::string text = layer_table_text(t, v);
  EXPECT_NE(text.find("| 1 | attn | 1 | 5.00 |"), std::string::npos) << text;
  EXPECT_NE(text.find("head"), std::string::npos);
}

TEST(KernelLayers, OneLayerIsTheWholeRestOfTheStep) {
  const StepTimeline t = model_step(1);
  // With one layer every kernel but "norm" (twice) runs once: "embed" is the first that does.
  const LayerView v = layer_view(t, 1);
  EXPECT_EQ(v.first_slot, 0);
  EXPECT_EQ(v.period, static_cast<int>(t.slots.size()));
  EXPECT_TRUE(v.head.empty());
  EXPECT_TRUE(v.tail.empty());
}

TEST(KernelLayers, NoRepeatingBlockIsAClearError) {
  const StepTimeline t = model_step(4);
  EXPECT_NE(error_of([&] { layer_view(t, 3); }).find("no repeating layer block"), std::string::npos);
  EXPECT_NE(error_of([&] { layer_view(t, 0); }).find("layers must be >= 1"), std::string::npos);
  EXPECT_NE(error_of([&] { layer_view(t, 100); }).find("cannot fit"), std::string::npos);
}

TEST(KernelTimeline, ShortKernelNames) {
  EXPECT_EQ(short_kernel_name("void grt::ops::(anonymous namespace)::rms_norm_kernel<128, __nv_bfloat16>(int, "
                              "float const*)"),
            "rms_norm_kernel");
  EXPECT_EQ(short_kernel_name("(anonymous namespace)::trace_probe_a(float*)"), "trace_probe_a");
  EXPECT_EQ(short_kernel_name("void kern<(int)4>(std::array<char*, 2ul>)"), "kern");
  EXPECT_EQ(short_kernel_name("nvjet_tst_128x64_64x4_2x1_v_bz_coopA_NNT"), "nvjet_tst_128x64_64x4_2x1_v_bz_coopA_NNT");
  EXPECT_EQ(short_kernel_name("ns::Outer<int>::inner(int)"), "inner");
}

}  // namespace
}  // namespace grt
