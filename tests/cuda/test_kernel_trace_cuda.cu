// The kernel tracer (device/kernel_trace.h, CUPTI) on a real GPU: a captured graph of three
// known kernels, replayed under the tracer, gives three records a replay, in launch order, with
// graph node ids, real timestamps and the kernels' short names; the timeline reduces them to
// three slots. An unusable GPU or CUPTI fails these tests (no skip): they exist to say whether
// tracing works on the machine.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/kernel_timeline.h"
#include "device/device.h"
#include "device/kernel_trace.h"
#include "error_of.h"

namespace grt {
namespace {

using grt::testing::error_of;

const Device kGpu = Device::cuda(0);
constexpr int kN = 1 << 16;

__global__ void trace_probe_a(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = static_cast<float>(i);
}
__global__ void trace_probe_b(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 2.0f + 1.0f;
}
__global__ void trace_probe_c(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = sqrtf(x[i]);
}

// A captured and instantiated graph of a, b, c on one stream, and the buffer they work on.
struct ProbeGraph {
  float* x = nullptr;
  cudaStream_t stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ProbeGraph() {
    EXPECT_EQ(cudaMalloc(&x, kN * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    trace_probe_a<<<kN / 256, 256, 0, stream>>>(x, kN);
    trace_probe_b<<<kN / 128, 128, 0, stream>>>(x, kN);
    trace_probe_c<<<kN / 512, 512, 0, stream>>>(x, kN);
    EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    EXPECT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  }
  ~ProbeGraph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (stream) cudaStreamDestroy(stream);
    if (x) cudaFree(x);
  }
};

TEST(KernelTraceCuda, GraphReplaysGiveEveryKernelNodeInOrder) {
  check_device(kGpu);  // throws (fails the test) where no GPU is usable
  ProbeGraph g;
  ASSERT_NE(g.exec, nullptr);
  ASSERT_EQ(cudaGraphLaunch(g.exec, g.stream), cudaSuccess);  // warm (upload) outside the trace
  ASSERT_EQ(cudaStreamSynchronize(g.stream), cudaSuccess);
  constexpr int kRuns = 5;
  KernelTrace trace(kGpu);
  std::vector<StepWindow> windows;
  for (int r = 0; r < kRuns; ++r) {
    const uint64_t begin = trace.mark();
    ASSERT_EQ(cudaGraphLaunch(g.exec, g.stream), cudaSuccess);
    windows.push_back({begin, trace.mark()});
  }
  const std::vector<KernelRecord> recs = trace.stop();
  ASSERT_EQ(recs.size(), 3u * kRuns);
  const char* names[] = {"trace_probe_a", "trace_probe_b", "trace_probe_c"};
  const int grids[] = {kN / 256, kN / 128, kN / 512};
  const int blocks[] = {256, 128, 512};
  for (size_t i = 0; i < recs.size(); ++i) {
    const KernelRecord& k = recs[i];
    SCOPED_TRACE(::testing::Message() << "record " << i << " " << k.function);
    EXPECT_EQ(k.name, names[i % 3]);
    EXPECT_NE(k.function.find(names[i % 3]), std::string::npos);
    EXPECT_EQ(k.grid[0], grids[i % 3]);
    EXPECT_EQ(k.block[0], blocks[i % 3]);
    EXPECT_LT(k.start_ns, k.end_ns);
    EXPECT_NE(k.graph_node_id, 0u);
    EXPECT_GE(k.start_ns, windows[i / 3].begin_ns);
    EXPECT_LE(k.end_ns, windows[i / 3].end_ns);
    if (i % 3) EXPECT_LE(recs[i - 1].end_ns, k.start_ns);  // one stream, no PDL: in order
  }
  const StepTimeline t = step_timeline(recs, windows);
  EXPECT_EQ(t.steps, kRuns);
  ASSERT_EQ(t.slots.size(), 3u);
  for (int p = 0; p < 3; ++p) {
    EXPECT_EQ(t.slots[p].name, names[p]);
    EXPECT_TRUE(t.slots[p].in_graph);
    EXPECT_GT(t.slots[p].dur_us, 0.0);
  }
  EXPECT_GE(t.span_us, t.busy_us);  // serial kernels: the span holds every duration
}

TEST(KernelTraceCuda, OneTraceAtATimeAndCudaDevicesOnly) {
  check_device(kGpu);
  EXPECT_NE(error_of([] { KernelTrace t(Device::cpu()); }).find("needs a CUDA device"), std::string::npos);
  KernelTrace first(kGpu);
  EXPECT_NE(error_of([] { KernelTrace second(kGpu); }).find("one at a time"), std::string::npos);
  EXPECT_TRUE(first.stop().empty());  // nothing ran
  EXPECT_NE(error_of([&] { first.stop(); }).find("called twice"), std::string::npos);
  // Once stopped, the process may trace again.
  KernelTrace again(kGpu);
  EXPECT_NO_THROW(again.stop());
}

}  // namespace
}  // namespace grt
