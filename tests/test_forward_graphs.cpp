// ForwardGraphs (the one binding of decode and piecewise graphs) on the CPU: the replay domain,
// VMM faults, graph memory holding nothing between replays, --debug-cuda-graph for piecewise
// prefill, --verify-cuda-graph and lazy capture. Every comparison with the eager forward is bitwise.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>

#include "piecewise_model_checks.h"
#include "device/cpu/cpu_vmm.h"
#include "device/stream.h"
#include "error_of.h"
#include "runtime/forward_graphs.h"
#include "scoped_env.h"

namespace grt {
namespace {

const Device kCpu = Device::cpu();

ModelRunnerOptions both_modes(GraphMemoryMode memory = GraphMemoryMode::kPool) {
  return testing::small_graph_options(memory);
}

std::unique_ptr<ModelRunner> make(const ModelRunnerOptions& o) {
  return std::make_unique<ModelRunner>(load_model("builtin:tiny", kCpu, DType::F32, 0, o.max_context), o);
}

std::unique_ptr<ModelRunner> eager_runner(ModelRunnerOptions o) {
  o.disable_cuda_graph = true;
  o.disable_piecewise_cuda_graph = true;
  return make(o);
}

// Six requests prefilled in two extend batches (piecewise sizes), then decode steps over 6, 5,
// 3 and 1 of them (padded decode sizes); `between` runs before every forward. Returns every
// step's logits.
std::vector<std::vector<float>> scenario(ModelRunner& r, const std::function<void()>& between = {}) {
  using namespace testing;
  std::vector<HeldRequest> held;
  for (int i = 0; i < 6; ++i) held.push_back(hold(r, 32));
  std::vector<std::vector<float>> out;
  for (int half = 0; half < 2; ++half) {
    std::vector<ExtendPart> parts;
    for (int i = 3 * half; i < 3 * half + 3; ++i)
      parts.push_back({&held[static_cast<size_t>(i)], toy_tokens(2 + i, i, 512), 0});
    if (between) between();
    out.push_back(extend_last_logits(r, parts));
  }
  int step = 0;
  for (int n : {6, 5, 3, 1}) {
    std::vector<DecodePart> parts;
    for (int i = 0; i < n; ++i)
      parts.push_back({&held[static_cast<size_t>(i)], static_cast<int32_t>(40 + 3 * i + step), 2 + i + step});
    if (between) between();
    out.push_back(decode_logits(r, parts));
    ++step;
  }
  return out;
}

ForwardBatch one_decode(ModelRunner& r, testing::HeldRequest& h) { return testing::decode_batch({{&h, 5, 0}}); }

using grt::testing::ScopedEnv;

TEST(ForwardGraphsDefaults, InstantiateWorkersAreOffUnderNsightComputeUnlessSet) {
  constexpr const char* kThreads = "GRAPHRT_CAPTURE_INSTANTIATE_THREADS";
  {
    ScopedEnv unset(kThreads, nullptr);
    EXPECT_EQ(instantiate_threads_default(false), 2);
    EXPECT_EQ(instantiate_threads_default(true), 0);  // ncu aborts in malloc with workers
  }
  {
    ScopedEnv empty(kThreads, "");
    EXPECT_EQ(instantiate_threads_default(true), 0);
  }
  {
    ScopedEnv set(kThreads, "3");  // an explicit count wins under ncu too
    EXPECT_EQ(instantiate_threads_default(true), 3);
    EXPECT_EQ(instantiate_threads_default(false), 3);
  }
  {
    ScopedEnv zero(kThreads, "0");
    EXPECT_EQ(instantiate_threads_default(false), 0);
  }
  ScopedEnv bad(kThreads, "65");
  EXPECT_NE(testing::error_of([] { instantiate_threads_default(true); })
                .find("GRAPHRT_CAPTURE_INSTANTIATE_THREADS=65: expected an integer from 0 to 64"),
            std::string::npos);
}

TEST(ForwardGraphsDefaults, NsightComputeIsSeenThroughTheVariablesItSets) {
  // As ncu 2025.3.1 sets them in the profiled process (bench/results/h100_2026-11-26_session35).
  constexpr const char* kPerfworks = "NV_COMPUTE_PROFILER_PERFWORKS_DIR";
  constexpr const char* kTransport = "NV_NSIGHT_INJECTION_TRANSPORT_TYPE";
  ScopedEnv no_perfworks(kPerfworks, nullptr);
  ScopedEnv no_transport(kTransport, nullptr);
  ScopedEnv sanitizer("NV_SANITIZER_INJECTION_TRANSPORT_TYPE", "uds");  // compute-sanitizer: not ncu
  EXPECT_FALSE(nsight_compute_attached());
  {
    ScopedEnv empty(kPerfworks, "");
    EXPECT_FALSE(nsight_compute_attached());
  }
  {
    ScopedEnv perfworks(kPerfworks, "/opt/nvidia/nsight-compute/2025.3.1/target/linux-desktop-glibc_2_11_3-x64/.");
    EXPECT_TRUE(nsight_compute_attached());
  }
  ScopedEnv transport(kTransport, "uds");
  EXPECT_TRUE(nsight_compute_attached());
}

TEST(ForwardGraphs, ReplayOnASecondStreamIsAnErrorNamingBothStreams) {
  auto g = make(both_modes());
  auto h = testing::hold(*g, 4);
  const ForwardBatch b = one_decode(*g, h);
  g->forward(b);  // claims the current stream
  const uint64_t owner = current_stream(kCpu).id();
  EXPECT_EQ(g->graph_memory()->replay_domain().owner(), owner);
  auto second = new_stream(kCpu);
  std::string err;
  {
    StreamGuard guard(*second);
    err = testing::error_of([&] { g->forward(b); });
  }
  EXPECT_NE(err.find("on stream " + std::to_string(second->id())), std::string::npos) << err;
  EXPECT_NE(err.find("belongs to stream " + std::to_string(owner)), std::string::npos) << err;
  const uint64_t before = g->decode_graphs()->replay_count();
  g->forward(b);  // the owner still replays
  EXPECT_EQ(g->decode_graphs()->replay_count(), before + 1);
}

TEST(ForwardGraphs, ConcurrentReplayFromAnotherThreadIsAnError) {
  auto g = make(both_modes());
  auto h = testing::hold(*g, 4);
  const ForwardBatch b = one_decode(*g, h);
  g->forward(b);
  Stream& owner = current_stream(kCpu);
  std::string err;
  {
    // This thread is issuing a replay (holding its turn) while another one tries.
    ReplayDomain::Turn turn = g->graph_memory()->replay_domain().enter(owner);
    std::thread other([&] { err = testing::error_of([&] { g->forward(b); }); });
    other.join();
  }
  const std::string s = std::to_string(owner.id());
  EXPECT_NE(err.find("while a replay on stream " + s + " is being issued"), std::string::npos) << err;
  EXPECT_NE(err.find("replaying graphs of one graph memory on stream " + s), std::string::npos) << err;
  g->forward(b);  // free again once the turn ended
}

// A VMM remap that fails while the piecewise capture consolidates the chunks (the decode spaces
// are remapped then) retires every shape it unmapped, one warning each; decode and extend then
// run eagerly and give the eager result, and no replay touches the unmapped spaces.
TEST(ForwardGraphs, InjectedRemapFailureRetiresTheShapesItUnmapped) {
  ModelRunnerOptions o = both_modes(GraphMemoryMode::kVmm);
  o.max_running_requests = 32;
  o.max_context = 160;
  o.max_total_tokens = 32 * 160;
  o.piecewise_cuda_graph_tokens = {16, 4096};  // 4096 tokens grow a second chunk: consolidation follows
  cpu::vmm_fail_remaps_for_testing(true);
  std::unique_ptr<ModelRunner> g;
  try {
    g = make(o);
  } catch (...) {
    cpu::vmm_fail_remaps_for_testing(false);
    throw;
  }
  cpu::vmm_fail_remaps_for_testing(false);
  ASSERT_GE(g->graph_memory()->vmm()->stats().consolidations, 1u);
  EXPECT_GT(g->graph_memory()->fault_count(), 0u);
  for (const ForwardGraphs* fg : {g->decode_graphs(), g->piecewise_graphs()}) {
    for (const CapturedShape& s : fg->runner().stats()) {
      const bool lost = !g->graph_memory()->fault(s.memory_tag).empty();
      EXPECT_EQ(!s.retired.empty(), lost) << fg->schema().label() << " " << s.shape << ": " << s.retired;
    }
  }
  // The decode spaces were all captured before the consolidation: every decode shape is retired.
  for (const CapturedShape& s : g->decode_graphs()->runner().stats())
    EXPECT_NE(s.retired.find("unmapped"), std::string::npos) << s.shape;
  auto e = eager_runner(o);
  const auto want = scenario(*e);
  EXPECT_EQ(scenario(*g), want);
  EXPECT_EQ(g->decode_graphs()->replay_count(), 0u);
}

// Every physical byte of graph memory overwritten with 0xFF before every step: graphs still give
// the eager result (graph memory holds nothing a later replay reads).
TEST(ForwardGraphs, ChunksFilledWith0xFFBetweenReplaysGiveTheEagerResult) {
  auto g = make(both_modes(GraphMemoryMode::kVmm));
  auto e = eager_runner(both_modes());
  const GraphMemory* m = g->graph_memory();
  ASSERT_GT(m->physical_bytes(), 0u);
  EXPECT_EQ(scenario(*g, [m] { m->fill_physical_for_testing(0xFF); }), scenario(*e));
  EXPECT_EQ(g->piecewise_graphs()->replay_count(), 2u);
  EXPECT_EQ(g->decode_graphs()->replay_count(), 4u);
}

TEST(ForwardGraphs, DebugCudaGraphRunsPiecewisePrefillEagerlyThroughReplay) {
  ModelRunnerOptions o = both_modes();
  o.debug_cuda_graph = true;
  auto g = make(o);
  for (const CapturedShape& s : g->piecewise_graphs()->runner().stats()) EXPECT_EQ(s.segments, 0u) << s.shape;
  EXPECT_EQ(scenario(*g), scenario(*eager_runner(o)));
  EXPECT_EQ(g->piecewise_graphs()->replay_count(), 2u);
  EXPECT_EQ(g->decode_graphs()->replay_count(), 4u);
}

TEST(ForwardGraphs, VerifyMarksEveryShapeAndRetiresABrokenOne) {
  ModelRunnerOptions o = both_modes();
  auto g = make(o);
  g->graphs(ForwardMode::DECODE)->runner().corrupt_for_testing(4);
  g->graphs(ForwardMode::EXTEND)->runner().corrupt_for_testing(16);
  g->verify_cuda_graphs();
  for (const ForwardGraphs* fg : {g->decode_graphs(), g->piecewise_graphs()}) {
    for (const CapturedShape& s : fg->runner().stats()) {
      const bool broken = s.shape == (fg == g->decode_graphs() ? 4 : 16);
      EXPECT_EQ(s.verified, !broken) << fg->schema().label() << " " << s.shape;
      if (broken) {
        EXPECT_GT(s.max_abs_diff, 0.0);
        EXPECT_NE(s.retired.find("differs from the eager forward"), std::string::npos) << s.retired;
      } else {
        EXPECT_EQ(s.max_abs_diff, 0.0);
        EXPECT_EQ(s.retired, "");
      }
    }
  }
  // The broken shapes' batches (3 decode requests, 9..16 tokens) run eagerly and correctly.
  const uint64_t decode_before = g->decode_graphs()->replay_count();
  const uint64_t piecewise_before = g->piecewise_graphs()->replay_count();
  EXPECT_EQ(scenario(*g), scenario(*eager_runner(o)));
  EXPECT_EQ(g->decode_graphs()->replay_count(), decode_before + 3);        // 6, 5, 1 requests; 3 eagerly
  EXPECT_EQ(g->piecewise_graphs()->replay_count(), piecewise_before + 1);  // 18 tokens; 9 (pads to 16) eagerly
}

TEST(ForwardGraphs, LazyCaptureGivesTheSameLogitsAsCaptureAtStart) {
  for (GraphMemoryMode memory : {GraphMemoryMode::kPool, GraphMemoryMode::kVmm}) {
    ModelRunnerOptions o = both_modes(memory);
    // Room beside the scenario's 6 requests for a verification batch of 8 (a lazy shape is
    // verified while requests hold their slots; one that does not fit stays unverified).
    o.max_running_requests = 16;
    o.max_total_tokens = 16 * 64;
    auto at_start = make(o);
    o.cuda_graph_lazy = true;
    o.verify_cuda_graph = true;  // each shape verified as it is captured
    auto lazy = make(o);
    EXPECT_TRUE(lazy->decode_graphs()->runner().shapes().empty());
    EXPECT_TRUE(lazy->piecewise_graphs()->runner().shapes().empty());
    EXPECT_EQ(scenario(*lazy), scenario(*at_start));
    // 6 and 5 requests pad to 8, 3 to 4, 1 to 1; 9 tokens to 16, 18 to 32.
    EXPECT_EQ(lazy->decode_graphs()->runner().shapes(), (std::vector<int>{1, 4, 8}));
    EXPECT_EQ(lazy->piecewise_graphs()->runner().shapes(), (std::vector<int>{16, 32}));
    for (const ForwardGraphs* fg : {lazy->decode_graphs(), lazy->piecewise_graphs()})
      for (const CapturedShape& s : fg->runner().stats()) {
        EXPECT_TRUE(s.lazy) << s.shape;
        EXPECT_TRUE(s.verified) << s.shape;
        EXPECT_GT(s.captured_at, 0.0) << s.shape;
      }
    EXPECT_EQ(lazy->decode_graphs()->replay_count(), 4u + 3u);     // and one verification replay per shape
    EXPECT_EQ(lazy->piecewise_graphs()->replay_count(), 2u + 2u);
  }
}

}  // namespace
}  // namespace grt
