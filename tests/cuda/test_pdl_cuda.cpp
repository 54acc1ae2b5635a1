// Programmatic dependent launch (ops/cuda/pdl.h) on the decode path: a captured decode forward
// has programmatic edges between its kernels when PDL is on and none when it is off, and it
// replays bit for bit what the same forward computes eagerly; decode graphs of the runner replay
// bit for bit what an eager runner computes at their captured batch sizes.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "decode_graph_model_checks.h"
#include "core/error.h"
#include "device/cuda/cuda_graph.h"
#include "device/graph.h"
#include "device/device.h"
#include "device/stream.h"
#include "memory/graph_pool.h"
#include "memory/tensor_alloc.h"
#include "ops/cuda/pdl.h"
#include "ops/cuda/pdl_probe.h"
#include "runtime/forward_batch.h"
#include "runtime_test_util.h"

namespace grt {
namespace {

const Device kGpu = Device::cuda(0);
#define REQUIRE_GPU() \
  if (!cuda_available()) GTEST_SKIP() << "no GPU"

// Restores the environment's PDL setting when a test ends, passing or not.
struct PdlOverride {
  explicit PdlOverride(int mode) { cuda::set_pdl_override(mode); }
  ~PdlOverride() { cuda::set_pdl_override(-1); }
};

std::string kernel_name(cudaGraphNode_t node) {
  cudaGraphNodeType type{};
  if (cudaGraphNodeGetType(node, &type) != cudaSuccess || type != cudaGraphNodeTypeKernel) return "(not a kernel)";
  cudaKernelNodeParams params{};
  const char* name = nullptr;
  if (cudaGraphKernelNodeGetParams(node, &params) != cudaSuccess ||
      cudaFuncGetName(&name, params.func) != cudaSuccess || name == nullptr)
    return "(unnamed kernel)";
  return name;
}

bool is_kernel(cudaGraphNode_t node) {
  cudaGraphNodeType type{};
  return cudaGraphNodeGetType(node, &type) == cudaSuccess && type == cudaGraphNodeTypeKernel;
}

struct EdgeCounts {
  int kernel_edges = 0;  // edges from a kernel node to a kernel node
  int programmatic = 0;  // of those, programmatic ones
  std::vector<std::string> plain;  // "from -> to" of the kernel edges that are not programmatic
};

EdgeCounts count_edges(cudaGraph_t g) {
  size_t n = 0;
  EXPECT_EQ(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &n), cudaSuccess);
  std::vector<cudaGraphNode_t> from(n), to(n);
  std::vector<cudaGraphEdgeData> data(n);
  EXPECT_EQ(cudaGraphGetEdges(g, from.data(), to.data(), data.data(), &n), cudaSuccess);
  EdgeCounts c;
  for (size_t i = 0; i < n; ++i) {
    if (!is_kernel(from[i]) || !is_kernel(to[i])) continue;
    ++c.kernel_edges;
    if (data[i].type == cudaGraphDependencyTypeProgrammatic) ++c.programmatic;
    else c.plain.push_back(kernel_name(from[i]) + " -> " + kernel_name(to[i]));
  }
  return c;
}

bool pdl_hardware() {
  int major = 0;
  return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, kGpu.index) == cudaSuccess && major >= 9;
}

// Prefills two requests of the tiny model eagerly, then captures one decode forward of both
// (embedding, every layer, the logits GEMV) by hand; checks its edges and that its replay
// equals the eager forward of the same batch bit for bit.
void check_captured_decode_forward(bool pdl) {
  PdlOverride o(pdl ? 1 : 0);
  auto r = testing::decode_test_runner(kGpu, false, 4);
  std::vector<testing::HeldRequest> held{testing::hold(*r, 16), testing::hold(*r, 16)};
  const int vocab = static_cast<int>(r->model().config().vocab_size);
  std::vector<testing::ExtendPart> parts;
  for (int i = 0; i < 2; ++i) {
    std::vector<int32_t> prompt;
    for (int j = 0; j < 5 + 3 * i; ++j) prompt.push_back((i * 37 + j * 11) % vocab);
    parts.push_back({&held[static_cast<size_t>(i)], prompt, 0});
  }
  (void)testing::extend_all_logits(*r, parts);
  const ForwardBatch b = testing::decode_batch({{&held[0], 7 % vocab, 5}, {&held[1], 19 % vocab, 8}});
  const ForwardInputs in = upload_inputs(b, r->req_pool().table(), r->kv_pool().layers(), kGpu);
  const DecoderModel& m = r->model();
  const std::vector<float> eager = to_host_floats(m.logits(m.forward(in)));

  auto stream = new_stream(kGpu);
  StreamGuard guard(*stream);
  auto pool = GraphPool::create(kGpu);
  std::unique_ptr<Graph> graph;
  Tensor out;
  stream->begin_capture();
  {
    PoolCaptureScope scope(pool, *stream);
    out = m.logits(m.forward(in));
    graph = stream->end_capture();
  }
  auto* cg = dynamic_cast<cuda::CudaGraph*>(graph.get());
  ASSERT_NE(cg, nullptr);
  const EdgeCounts e = count_edges(cg->native());
  ASSERT_GT(e.kernel_edges, 10) << "a decode forward of two layers has more kernels than that";
  if (pdl && pdl_hardware()) {
    EXPECT_EQ(e.programmatic, e.kernel_edges) << "first plain edge: " << (e.plain.empty() ? "" : e.plain.front());
  } else {
    EXPECT_EQ(e.programmatic, 0);
  }
  auto exec = graph->instantiate();
  for (int replay = 0; replay < 3; ++replay) {
    exec->launch(*stream);
    const std::vector<float> got = to_host_floats(out);
    ASSERT_EQ(got, eager) << "replay " << replay << (pdl ? " with" : " without") << " PDL";
  }
}

TEST(PdlCuda, CapturedDecodeForwardHasProgrammaticEdgesAndReplaysBitwise) {
  REQUIRE_GPU();
  check_captured_decode_forward(true);
}

TEST(PdlCuda, DisabledLeavesOnlyPlainEdges) {
  REQUIRE_GPU();
  check_captured_decode_forward(false);
}

// Decode graphs of the runner (captured at 1, 2, 4, 8) against an eager runner, PDL on, at exactly
// the captured sizes: same kernels with the same launch shapes, so the logits and KV caches are
// the same bits.
TEST(PdlCuda, DecodeGraphReplayEqualsEagerBitwise) {
  REQUIRE_GPU();
  PdlOverride o(1);
  const int n = 8;
  auto g = testing::decode_test_runner(kGpu, true, n, {1, 2, 4, 8});
  auto e = testing::decode_test_runner(kGpu, false, n);
  ASSERT_NE(g->decode_graphs(), nullptr);
  const int vocab = static_cast<int>(g->model().config().vocab_size);
  std::vector<testing::HeldRequest> hg, he;
  std::vector<int> next_pos(n);
  std::vector<testing::ExtendPart> pg, pe;
  hg.reserve(n);
  he.reserve(n);
  for (int i = 0; i < n; ++i) {
    hg.push_back(testing::hold(*g, 48));
    he.push_back(testing::hold(*e, 48));
    next_pos[static_cast<size_t>(i)] = 3 + i % 5;
  }
  for (int i = 0; i < n; ++i) {
    std::vector<int32_t> prompt;
    for (int j = 0; j < next_pos[static_cast<size_t>(i)]; ++j) prompt.push_back((i * 29 + j * 5) % vocab);
    pg.push_back({&hg[static_cast<size_t>(i)], prompt, 0});
    pe.push_back({&he[static_cast<size_t>(i)], prompt, 0});
  }
  testing::expect_logits_match(testing::extend_all_logits(*g, pg), testing::extend_all_logits(*e, pe), 0, "prefill");
  const std::vector<int> sizes{1, 2, 4, 8, 8, 1, 4};
  for (size_t step = 0; step < sizes.size(); ++step) {
    const int bs = sizes[step];
    std::vector<testing::DecodePart> dg, de;
    for (int k = 0; k < bs; ++k) {
      const int i = static_cast<int>((k + step) % n);
      const int32_t tok = static_cast<int32_t>((step * 97 + static_cast<size_t>(i) * 13) % static_cast<size_t>(vocab));
      dg.push_back({&hg[static_cast<size_t>(i)], tok, next_pos[static_cast<size_t>(i)]});
      de.push_back({&he[static_cast<size_t>(i)], tok, next_pos[static_cast<size_t>(i)]});
      next_pos[static_cast<size_t>(i)]++;
    }
    const uint64_t before = g->decode_graphs()->replay_count();
    const std::vector<float> lg = testing::decode_logits(*g, dg);
    ASSERT_EQ(g->decode_graphs()->replay_count(), before + 1) << "step " << step << " ran eagerly";
    testing::expect_logits_match(lg, testing::decode_logits(*e, de), 0, "decode step " + std::to_string(step));
  }
}

}  // namespace
}  // namespace grt

namespace grt {
namespace {

// The PDL-edge probe behind `graphrt bench pdl` (ops/cuda/pdl_probe.h): the bench's shapes run
// eagerly and as a captured chain, with PDL on and off; each block's trips store the trip count
// into its own word 2 (the words they read stay zero), so a probe that skipped its work, or wrote
// another block's word, fails. Arguments it does not take are refused, naming them.
TEST(PdlCuda, ProbeRunsTheBenchShapes) {
  REQUIRE_GPU();
  const int sms = cuda::pdl_probe_sms(kGpu);
  ASSERT_GT(sms, 0);
  auto stream = new_stream(kGpu);
  StreamGuard guard(*stream);
  struct Shape5 {
    int blocks, cluster, trips;
    bool barrier, after;
    int smem;
  };
  const int words_n = (2 * sms + 256) * 32;
  for (int pdl : {1, 0}) {
    PdlOverride over(pdl);
    for (Shape5 s : {Shape5{1, 1, 0, false, false, 0}, Shape5{2 * sms, 1, 3, false, false, 0},
                     Shape5{128, 4, 2, true, false, 0}, Shape5{256, 2, 2, true, false, 100 * 1024},
                     Shape5{2, 1, 5, false, true, 0}, Shape5{128, 8, 1, false, false, 0}}) {
      SCOPED_TRACE("pdl " + std::to_string(pdl) + " blocks " + std::to_string(s.blocks) + " cluster " +
                   std::to_string(s.cluster) + " trips " + std::to_string(s.trips));
      Tensor words = zeros(Shape{words_n}, DType::I32, kGpu);
      cuda::PdlProbeArgs a;
      a.blocks = s.blocks;
      a.cluster = s.cluster;
      a.trips = s.trips;
      a.cluster_barrier = s.barrier;
      a.trigger_after = s.after;
      a.smem = s.smem;
      a.words = static_cast<uint32_t*>(words.data());
      const auto check = [&] {
        const std::vector<int32_t> w = to_host_vector<int32_t>(words);
        for (int i = 0; i < words_n; ++i) {
          const bool mine = i % 32 == 2 && i / 32 < s.blocks;
          ASSERT_EQ(w[static_cast<size_t>(i)], mine ? s.trips : 0) << "word " << i;
        }
      };
      cuda::pdl_probe(kGpu, a);
      stream->synchronize();
      check();
      stream->begin_capture();
      for (int i = 0; i < 3; ++i) cuda::pdl_probe(kGpu, a);
      auto exec = stream->end_capture()->instantiate();
      exec->launch(*stream);
      stream->synchronize();
      check();
    }
  }
  cuda::PdlProbeArgs bad;
  bad.blocks = 6;
  bad.cluster = 4;
  EXPECT_THROW(cuda::pdl_probe(kGpu, bad), Error) << "blocks not whole clusters";
  bad.blocks = 8;
  bad.cluster = 3;
  EXPECT_THROW(cuda::pdl_probe(kGpu, bad), Error) << "cluster 3";
  bad.cluster = 1;
  bad.cluster_barrier = true;
  EXPECT_THROW(cuda::pdl_probe(kGpu, bad), Error) << "a barrier without clusters";
  bad.cluster_barrier = false;
  bad.trips = 2;
  EXPECT_THROW(cuda::pdl_probe(kGpu, bad), Error) << "trips without words";
}

}  // namespace
}  // namespace grt
