// The CUDA device backend on a real GPU: device queries and allocation, stream ordering and
// cross-stream events with real kernels, capture/replay (changed inputs, host code, forbidden
// operations, nesting, fork/join, update) and virtual memory through the driver API.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "device/capture_state.h"
#include "device/cuda/cuda_stream.h"
#include "device/cuda/driver_api.h"
#include "device/device.h"
#include "device/event.h"
#include "device/graph.h"
#include "device/stream.h"
#include "device/vmm.h"

namespace grt {
namespace {

const Device kGpu = Device::cuda(0);
constexpr int kThreads = 256;

// ---- kernels ---------------------------------------------------------------------------------

__global__ void fill_iota(float* x, int n, float base) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = base + static_cast<float>(i);
}

__global__ void affine(const float* x, float* y, int n, float a, float b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}

__global__ void square_plus_one(const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = y[i] * y[i] + 1.0f;
}

__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void increment(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

// Busy-waits `cycles` clock ticks, then writes v: makes a missing dependency show as a wrong value.
__global__ void spin_then_fill(float* x, int n, float v, long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

// Waits until the host sets *flag (bounded, so a broken test cannot hang the GPU); *out = 1 when
// the flag was seen, 2 on timeout.
__global__ void wait_for_host_flag(const volatile int* flag, int* out, long long max_cycles) {
  long long start = clock64();
  while (*flag == 0 && clock64() - start < max_cycles) {
  }
  *out = *flag != 0 ? 1 : 2;
}

int blocks(int n) { return (n + kThreads - 1) / kThreads; }

#define CHECK_LAUNCH() ASSERT_EQ(cudaGetLastError(), cudaSuccess)

// ---- helpers ---------------------------------------------------------------------------------

// Raw device memory through the device layer (the backend's malloc/free).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n), p_(static_cast<float*>(device_malloc(kGpu, n * sizeof(float)))) {}
  ~DeviceBuffer() { device_free(kGpu, p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  float* get() const { return p_; }
  size_t bytes() const { return n_ * sizeof(float); }

 private:
  size_t n_;
  float* p_;
};

std::vector<float> to_host(Stream& s, const float* p, size_t n) {
  std::vector<float> h(n);
  s.copy_to_host(h.data(), p, n * sizeof(float));
  return h;
}

std::vector<float> iota_host(size_t n, float base) {
  std::vector<float> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = base + static_cast<float>(i);
  return h;
}

// The reference of the captured sequence: z = (a*x + b)^2 + 1.
std::vector<float> expected_affine_square(const std::vector<float>& x, float a, float b) {
  std::vector<float> z(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    float y = a * x[i] + b;
    z[i] = y * y + 1.0f;
  }
  return z;
}

void expect_error_containing(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an Error containing \"" << needle << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  }
  void TearDown() override {
    // A failed test must not leave this thread "capturing" for the next one.
    EXPECT_EQ(this_thread_capture_stream(), nullptr);
  }
};
using CudaDeviceStreams = CudaDevice;
using CudaDeviceEvents = CudaDevice;
using CudaDeviceCapture = CudaDevice;
using CudaDeviceVmm = CudaDevice;

// ---- devices and allocation ------------------------------------------------------------------

TEST_F(CudaDevice, QueriesDescribeTheGpu) {
  int n = device_count(DeviceType::CUDA);
  ASSERT_GE(n, 1);
  EXPECT_EQ(default_device(), kGpu);
  EXPECT_FALSE(device_name(kGpu).empty());
  EXPECT_GT(device_total_memory(kGpu), size_t(1) << 30);
  EXPECT_NO_THROW(check_device(Device::cuda(n - 1)));
  expect_error_containing([&] { check_device(Device::cuda(n)); }, fmt::format("{} CUDA device", n));
  EXPECT_NO_THROW(device_synchronize(kGpu));
}

TEST_F(CudaDevice, AllocationIsAlignedAndOomIsAClearError) {
  void* p = device_malloc(kGpu, 1000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, p), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attr.device, 0);
  device_free(kGpu, p);

  const size_t huge = size_t(1) << 50;  // 1 PiB
  try {
    device_malloc(kGpu, huge);
    FAIL() << "a 1 PiB allocation succeeded";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("out of memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(huge)), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda:0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("free of"), std::string::npos) << msg;
  }
  // The failure left no pending error behind for the next launch check.
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(CudaDevice, NativeStreamRejectsNonCudaStreams) {
  auto gpu = new_stream(kGpu);
  EXPECT_NE(cuda::native_stream(*gpu), nullptr);
  auto cpu = new_stream(Device::cpu());
  expect_error_containing([&] { cuda::native_stream(*cpu); }, "not a CUDA stream");
}

// ---- streams ---------------------------------------------------------------------------------

TEST_F(CudaDeviceStreams, WorkOnOneStreamRunsInOrder) {
  const int n = 4096;
  auto s = new_stream(kGpu);
  EXPECT_NE(s->id(), new_stream(kGpu)->id());
  cudaStream_t cs = cuda::native_stream(*s);
  DeviceBuffer x(n), y(n);
  std::vector<float> h = iota_host(n, 3.0f);
  s->copy_async(x.get(), h.data(), x.bytes());
  // A slow kernel, then work that depends on its result: only FIFO order gives the right values.
  spin_then_fill<<<blocks(n), kThreads, 0, cs>>>(x.get(), n, 5.0f, 20'000'000);
  CHECK_LAUNCH();
  for (int k = 0; k < 50; ++k) increment<<<blocks(n), kThreads, 0, cs>>>(x.get(), n);
  CHECK_LAUNCH();
  s->copy_async(y.get(), x.get(), x.bytes());
  s->memset_async(x.get(), 0, x.bytes());
  increment<<<blocks(n), kThreads, 0, cs>>>(x.get(), n);
  CHECK_LAUNCH();
  std::vector<float> hy = to_host(*s, y.get(), n);
  std::vector<float> hx = to_host(*s, x.get(), n);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(hy[i], 55.0f) << i;
    ASSERT_EQ(hx[i], 1.0f) << i;
  }
}

TEST_F(CudaDeviceStreams, EventWaitOrdersAcrossStreams) {
  const int n = 1 << 16;
  auto producer = new_stream(kGpu);
  auto consumer = new_stream(kGpu);
  DeviceBuffer x(n), y(n);
  producer->memset_async(x.get(), 0, x.bytes());
  producer->synchronize();
  auto ready = new_event(kGpu);
  for (int round = 1; round <= 3; ++round) {
    // The producer is slow; without the wait the consumer would read the previous round's x.
    spin_then_fill<<<blocks(n), kThreads, 0, cuda::native_stream(*producer)>>>(x.get(), n, float(round * 10),
                                                                               100'000'000);
    CHECK_LAUNCH();
    ready->record(*producer);
    consumer->wait(*ready);
    affine<<<blocks(n), kThreads, 0, cuda::native_stream(*consumer)>>>(x.get(), y.get(), n, 1.0f, 1.0f);
    CHECK_LAUNCH();
    std::vector<float> hy = to_host(*consumer, y.get(), n);
    for (int i = 0; i < n; i += 997) ASSERT_EQ(hy[i], float(round * 10 + 1)) << "round " << round << " i " << i;
    ASSERT_EQ(hy[n - 1], float(round * 10 + 1));
  }
}

TEST_F(CudaDeviceStreams, HostReturnsBeforeTheWorkRuns) {
  int* flag = nullptr;  // mapped pinned host memory the kernel polls
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&flag), sizeof(int), cudaHostAllocMapped), cudaSuccess);
  *flag = 0;
  int* dflag = nullptr;
  ASSERT_EQ(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dflag), flag, 0), cudaSuccess);
  DeviceBuffer out_buf(1);
  int* out = reinterpret_cast<int*>(out_buf.get());
  auto s = new_stream(kGpu);
  s->memset_async(out, 0, sizeof(int));
  auto done = new_event(kGpu);
  // Bounded to ~10 s so a broken test fails rather than hangs.
  wait_for_host_flag<<<1, 1, 0, cuda::native_stream(*s)>>>(dflag, out, 20'000'000'000LL);
  CHECK_LAUNCH();
  done->record(*s);
  EXPECT_FALSE(done->query()) << "the kernel finished before the host released it";
  __atomic_store_n(flag, 1, __ATOMIC_SEQ_CST);
  done->synchronize();
  EXPECT_TRUE(done->query());
  int seen = 0;
  s->copy_to_host(&seen, out, sizeof(int));
  EXPECT_EQ(seen, 1) << "the kernel timed out waiting for the flag";
  cudaFreeHost(flag);
}

// Small copies to the host go through the stream's page-locked buffer (up to 64 KiB), larger
// ones straight into the caller's memory: both exact at and across the boundary, and the shared
// buffer safe when two threads read back on the same stream.
TEST_F(CudaDeviceStreams, CopyToHostIsExactAcrossTheReadbackSizeAndFromTwoThreads) {
  auto s = new_stream(kGpu);
  for (size_t n : {size_t{1}, size_t{16384}, size_t{16385}, size_t{40000}}) {  // floats: 4 B .. 160 KB
    const std::vector<float> want = iota_host(n, static_cast<float>(n));
    DeviceBuffer d(n);
    s->copy_async(d.get(), want.data(), d.bytes());
    s->synchronize();
    EXPECT_EQ(to_host(*s, d.get(), n), want) << n << " floats";
  }
  DeviceBuffer a(1000), b(1000);
  const std::vector<float> wa = iota_host(1000, 1.0f), wb = iota_host(1000, -5000.0f);
  s->copy_async(a.get(), wa.data(), a.bytes());
  s->copy_async(b.get(), wb.data(), b.bytes());
  s->synchronize();
  int bad_a = 0, bad_b = 0;
  std::thread t([&] {
    for (int i = 0; i < 300; ++i) bad_a += to_host(*s, a.get(), 1000) != wa;
  });
  for (int i = 0; i < 300; ++i) bad_b += to_host(*s, b.get(), 1000) != wb;
  t.join();
  EXPECT_EQ(bad_a, 0);
  EXPECT_EQ(bad_b, 0);
}

// ---- events ----------------------------------------------------------------------------------

TEST_F(CudaDeviceEvents, TimingEventsMeasureElapsedTime) {
  auto s = new_stream(kGpu);
  auto start = new_event(kGpu, true);
  auto end = new_event(kGpu, true);
  DeviceBuffer x(256);
  start->record(*s);
  spin_then_fill<<<1, kThreads, 0, cuda::native_stream(*s)>>>(x.get(), 256, 1.0f, 10'000'000);
  CHECK_LAUNCH();
  end->record(*s);
  end->synchronize();
  EXPECT_TRUE(end->query());
  EXPECT_GT(start->elapsed_ms(*end), 0.0f);

  auto plain = new_event(kGpu);  // no timing
  plain->record(*s);
  plain->synchronize();
  expect_error_containing([&] { start->elapsed_ms(*plain); }, "timing");
}

// ---- capture ---------------------------------------------------------------------------------

// Captures z = (a*x + b)^2 + 1 on `s`, with a host-side counter bumped inside the region.
std::unique_ptr<Graph> capture_affine_square(Stream& s, const DeviceBuffer& x, DeviceBuffer& y, DeviceBuffer& z, int n,
                                             float a, float b, int* host_counter) {
  s.begin_capture();
  cudaStream_t cs = cuda::native_stream(s);
  affine<<<blocks(n), kThreads, 0, cs>>>(x.get(), y.get(), n, a, b);
  square_plus_one<<<blocks(n), kThreads, 0, cs>>>(y.get(), z.get(), n);
  if (host_counter) ++*host_counter;  // host code: runs once, now, never at replay
  return s.end_capture();
}

TEST_F(CudaDeviceCapture, ReplayOnChangedInputsEqualsEager) {
  const int n = 3000;
  auto s = new_stream(kGpu);
  cudaStream_t cs = cuda::native_stream(*s);
  DeviceBuffer x(n), y(n), z(n), ez(n), ey(n);
  std::vector<float> capture_input = iota_host(n, 0.0f);
  s->copy_async(x.get(), capture_input.data(), x.bytes());
  s->memset_async(z.get(), 0xFF, z.bytes());  // NaN sentinel
  s->synchronize();

  int host_counter = 0;
  std::unique_ptr<Graph> graph = capture_affine_square(*s, x, y, z, n, 0.5f, -2.0f, &host_counter);
  EXPECT_FALSE(s->is_capturing());
  EXPECT_EQ(s->capture_id(), 0u);
  EXPECT_EQ(graph->device(), kGpu);
  EXPECT_EQ(graph->node_count(), 2u);
  EXPECT_EQ(host_counter, 1);
  // Capture records; it does not run.
  std::vector<float> untouched = to_host(*s, z.get(), n);
  for (int i = 0; i < n; i += 101) ASSERT_TRUE(std::isnan(untouched[i])) << i;

  std::unique_ptr<GraphExec> exec = graph->instantiate();
  EXPECT_EQ(exec->node_count(), 2u);
  for (float base : {7.0f, -100.0f, 0.25f}) {
    std::vector<float> input = iota_host(n, base);  // values never seen at capture
    s->copy_async(x.get(), input.data(), x.bytes());
    exec->launch(*s);
    std::vector<float> replayed = to_host(*s, z.get(), n);
    // Eager, same kernels, same input, other buffers.
    affine<<<blocks(n), kThreads, 0, cs>>>(x.get(), ey.get(), n, 0.5f, -2.0f);
    square_plus_one<<<blocks(n), kThreads, 0, cs>>>(ey.get(), ez.get(), n);
    CHECK_LAUNCH();
    std::vector<float> eager = to_host(*s, ez.get(), n);
    std::vector<float> ref = expected_affine_square(input, 0.5f, -2.0f);
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(replayed[i], eager[i]) << "base " << base << " i " << i;
      ASSERT_FLOAT_EQ(replayed[i], ref[i]) << "base " << base << " i " << i;
    }
  }
  EXPECT_EQ(host_counter, 1) << "host code of the captured region ran again at replay";

  // Replays on another stream see the same graph.
  auto other = new_stream(kGpu);
  std::vector<float> last_input = iota_host(n, 1.0f);
  s->copy_async(x.get(), last_input.data(), x.bytes());
  s->synchronize();
  exec->launch(*other);
  std::vector<float> on_other = to_host(*other, z.get(), n);
  std::vector<float> ref = expected_affine_square(last_input, 0.5f, -2.0f);
  for (int i = 0; i < n; ++i) ASSERT_FLOAT_EQ(on_other[i], ref[i]) << i;
}

TEST_F(CudaDeviceCapture, ForbiddenOperationsThrowAndCaptureStillEnds) {
  const int n = 512;
  auto s = new_stream(kGpu);
  auto bystander = new_stream(kGpu);
  DeviceBuffer x(n), spare(n);
  auto ev = new_event(kGpu);
  ev->record(*bystander);
  float host[4];

  s->begin_capture();
  EXPECT_TRUE(s->is_capturing());
  EXPECT_NE(s->capture_id(), 0u);
  EXPECT_EQ(this_thread_capture_stream(), s.get());
  fill_iota<<<blocks(n), kThreads, 0, cuda::native_stream(*s)>>>(x.get(), n, 42.0f);
  CHECK_LAUNCH();

  const std::string refused = "not allowed during stream capture";
  expect_error_containing([&] { s->synchronize(); }, "stream synchronize");
  expect_error_containing([&] { s->synchronize(); }, refused);
  expect_error_containing([&] { bystander->synchronize(); }, refused);
  expect_error_containing([&] { s->copy_to_host(host, x.get(), sizeof(host)); }, "copy_to_host");
  expect_error_containing([&] { bystander->copy_to_host(host, spare.get(), sizeof(host)); }, refused);
  expect_error_containing([&] { ev->synchronize(); }, "event synchronize");
  expect_error_containing([&] { ev->query(); }, "event query");
  expect_error_containing([&] { device_synchronize(kGpu); }, refused);
  expect_error_containing([&] { device_free(kGpu, spare.get()); }, refused);
  // Allocation does not touch the captured stream: allowed, and it does not break the capture.
  void* during = device_malloc(kGpu, 4096);
  EXPECT_NE(during, nullptr);

  ASSERT_TRUE(s->is_capturing()) << "a refused operation broke the capture";
  std::unique_ptr<Graph> graph = s->end_capture();
  EXPECT_EQ(this_thread_capture_stream(), nullptr);
  EXPECT_FALSE(s->is_capturing());
  device_free(kGpu, during);
  EXPECT_EQ(graph->node_count(), 1u);

  s->memset_async(x.get(), 0, x.bytes());
  graph->instantiate()->launch(*s);
  std::vector<float> hx = to_host(*s, x.get(), n);
  for (int i = 0; i < n; ++i) ASSERT_EQ(hx[i], 42.0f + i) << i;
  EXPECT_NO_THROW(device_synchronize(kGpu));
}

TEST_F(CudaDeviceCapture, NestedOrUnmatchedCaptureIsAnError) {
  auto s = new_stream(kGpu);
  auto t = new_stream(kGpu);
  DeviceBuffer x(256);
  expect_error_containing([&] { s->end_capture(); }, "no capture was begun");

  s->begin_capture();
  expect_error_containing([&] { s->begin_capture(); }, "nested capture");
  expect_error_containing([&] { t->begin_capture(); }, "nested capture");
  expect_error_containing([&] { t->end_capture(); }, "no capture was begun");
  EXPECT_FALSE(t->is_capturing());
  fill_iota<<<1, 256, 0, cuda::native_stream(*s)>>>(x.get(), 256, 1.0f);
  CHECK_LAUNCH();
  std::unique_ptr<Graph> g = s->end_capture();
  EXPECT_EQ(g->node_count(), 1u);
  EXPECT_EQ(this_thread_capture_stream(), nullptr);
  expect_error_containing([&] { s->end_capture(); }, "no capture was begun");

  // Both streams can capture again afterwards.
  t->begin_capture();
  fill_iota<<<1, 256, 0, cuda::native_stream(*t)>>>(x.get(), 256, 2.0f);
  EXPECT_EQ(t->end_capture()->node_count(), 1u);
}

TEST_F(CudaDeviceCapture, UnjoinedForkIsAnErrorAndClearsTheState) {
  auto s = new_stream(kGpu);
  auto side = new_stream(kGpu);
  DeviceBuffer x(256), y(256);
  auto fork = new_event(kGpu);

  s->begin_capture();
  fill_iota<<<1, 256, 0, cuda::native_stream(*s)>>>(x.get(), 256, 1.0f);
  fork->record(*s);
  side->wait(*fork);
  EXPECT_TRUE(side->is_capturing());
  affine<<<1, 256, 0, cuda::native_stream(*side)>>>(x.get(), y.get(), 256, 2.0f, 0.0f);
  CHECK_LAUNCH();
  expect_error_containing([&] { s->end_capture(); }, "not joined");
  EXPECT_EQ(this_thread_capture_stream(), nullptr);
  EXPECT_FALSE(s->is_capturing());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  // The stream captures normally afterwards.
  s->begin_capture();
  fill_iota<<<1, 256, 0, cuda::native_stream(*s)>>>(x.get(), 256, 3.0f);
  std::unique_ptr<Graph> g = s->end_capture();
  s->memset_async(x.get(), 0, x.bytes());
  g->instantiate()->launch(*s);
  std::vector<float> hx = to_host(*s, x.get(), 256);
  EXPECT_EQ(hx[0], 3.0f);
  EXPECT_EQ(hx[255], 258.0f);
}

TEST_F(CudaDeviceCapture, ForkJoinWithASideStream) {
  const int n = 2048;
  auto s = new_stream(kGpu);
  auto side = new_stream(kGpu);
  DeviceBuffer x(n), y(n), z(n), out(n);
  auto fork = new_event(kGpu);
  auto join = new_event(kGpu);

  s->begin_capture();
  cudaStream_t cs = cuda::native_stream(*s), ss = cuda::native_stream(*side);
  fill_iota<<<blocks(n), kThreads, 0, cs>>>(x.get(), n, 0.0f);  // re-run at every replay
  fork->record(*s);
  side->wait(*fork);
  EXPECT_TRUE(side->is_capturing());
  EXPECT_EQ(side->capture_id(), s->capture_id());
  EXPECT_NE(side->capture_id(), 0u);
  expect_error_containing([&] { side->end_capture(); }, "joined a capture begun on another stream");
  // The side branch is slow: a missing join would let `add` read stale y.
  spin_then_fill<<<blocks(n), kThreads, 0, ss>>>(y.get(), n, 0.0f, 20'000'000);
  affine<<<blocks(n), kThreads, 0, ss>>>(x.get(), y.get(), n, 3.0f, 0.0f);
  affine<<<blocks(n), kThreads, 0, cs>>>(x.get(), z.get(), n, 1.0f, 10.0f);
  join->record(*side);
  s->wait(*join);
  add<<<blocks(n), kThreads, 0, cs>>>(y.get(), z.get(), out.get(), n);
  CHECK_LAUNCH();
  std::unique_ptr<Graph> g = s->end_capture();
  EXPECT_FALSE(side->is_capturing());
  EXPECT_EQ(side->capture_id(), 0u);
  EXPECT_EQ(g->node_count(), 5u);  // kernels only: event record/wait become edges

  std::unique_ptr<GraphExec> exec = g->instantiate();
  for (int replay = 0; replay < 3; ++replay) {
    s->memset_async(y.get(), 0, y.bytes());
    s->memset_async(out.get(), 0, out.bytes());
    exec->launch(*s);
    std::vector<float> h = to_host(*s, out.get(), n);
    for (int i = 0; i < n; ++i) ASSERT_EQ(h[i], 4.0f * i + 10.0f) << "replay " << replay << " i " << i;
  }
}

TEST_F(CudaDeviceCapture, UpdateTakesParametersOfTheSameTopology) {
  const int n = 1024;
  auto s = new_stream(kGpu);
  DeviceBuffer x(n), y(n), z(n);
  std::vector<float> input = iota_host(n, -3.0f);
  s->copy_async(x.get(), input.data(), x.bytes());
  s->synchronize();

  std::unique_ptr<Graph> g1 = capture_affine_square(*s, x, y, z, n, 2.0f, 1.0f, nullptr);
  std::unique_ptr<GraphExec> exec = g1->instantiate();
  exec->launch(*s);
  std::vector<float> r1 = to_host(*s, z.get(), n);
  std::vector<float> e1 = expected_affine_square(input, 2.0f, 1.0f);
  for (int i = 0; i < n; ++i) ASSERT_FLOAT_EQ(r1[i], e1[i]) << i;

  // Same topology, other scalars: updated in place.
  std::unique_ptr<Graph> g2 = capture_affine_square(*s, x, y, z, n, -1.0f, 4.0f, nullptr);
  ASSERT_TRUE(exec->update(*g2));
  exec->launch(*s);
  std::vector<float> r2 = to_host(*s, z.get(), n);
  std::vector<float> e2 = expected_affine_square(input, -1.0f, 4.0f);
  for (int i = 0; i < n; ++i) ASSERT_FLOAT_EQ(r2[i], e2[i]) << i;

  // Another topology (one node more): refused, the exec keeps g2's parameters.
  s->begin_capture();
  cudaStream_t cs = cuda::native_stream(*s);
  affine<<<blocks(n), kThreads, 0, cs>>>(x.get(), y.get(), n, 5.0f, 5.0f);
  square_plus_one<<<blocks(n), kThreads, 0, cs>>>(y.get(), z.get(), n);
  increment<<<blocks(n), kThreads, 0, cs>>>(z.get(), n);
  std::unique_ptr<Graph> g3 = s->end_capture();
  EXPECT_EQ(g3->node_count(), 3u);
  EXPECT_FALSE(exec->update(*g3));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  s->memset_async(z.get(), 0, z.bytes());
  exec->launch(*s);
  std::vector<float> r3 = to_host(*s, z.get(), n);
  for (int i = 0; i < n; ++i) ASSERT_FLOAT_EQ(r3[i], e2[i]) << i;
}

// ---- virtual memory --------------------------------------------------------------------------

// True when the driver knows an allocation at `addr` (something is mapped there).
bool driver_sees_mapping(void* addr) {
  CUdeviceptr base = 0;
  size_t size = 0;
  return cuda::driver_api().mem_get_address_range(&base, &size, reinterpret_cast<CUdeviceptr>(addr)) == CUDA_SUCCESS;
}

// True when the runtime treats `addr` as device memory of cuda:0.
bool runtime_sees_device_memory(void* addr) {
  cudaPointerAttributes attr{};
  cudaError_t err = cudaPointerGetAttributes(&attr, addr);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attr.type == cudaMemoryTypeDevice && attr.device == 0;
}

TEST_F(CudaDeviceVmm, OneChunkAtTwoAddressesShowsTheSameBytes) {
  const size_t g = vmm_granularity(kGpu);
  ASSERT_GT(g, 0u);
  EXPECT_EQ(g & (g - 1), 0u) << "granularity " << g << " is not a power of two";
  EXPECT_EQ(vmm_round_up(kGpu, 1), g);
  EXPECT_EQ(vmm_round_up(kGpu, g + 1), 2 * g);
  const int n = static_cast<int>(g / sizeof(float));
  auto s = new_stream(kGpu);
  cudaStream_t cs = cuda::native_stream(*s);

  void* first_addr = nullptr;
  void* second_addr = nullptr;
  {
    VirtualRange a(kGpu, g);
    VirtualRange b(kGpu, 2 * g);
    EXPECT_EQ(a.size(), g);
    EXPECT_EQ(b.size(), 2 * g);
    PhysicalChunk chunk(kGpu, g);
    EXPECT_EQ(chunk.size(), g);
    ChunkMapping at_a(a, 0, chunk);
    ChunkMapping at_b(b, g, chunk);  // second half of b
    first_addr = at_a.address();
    second_addr = at_b.address();
    EXPECT_EQ(second_addr, b.base() + g);
    EXPECT_TRUE(runtime_sees_device_memory(first_addr));
    EXPECT_TRUE(runtime_sees_device_memory(second_addr));
    EXPECT_TRUE(driver_sees_mapping(first_addr));

    auto* pa = static_cast<float*>(first_addr);
    auto* pb = static_cast<float*>(second_addr);
    // A kernel writes through a; the bytes show through b.
    fill_iota<<<blocks(n), kThreads, 0, cs>>>(pa, n, 11.0f);
    CHECK_LAUNCH();
    std::vector<float> via_b = to_host(*s, pb, n);
    for (int i = 0; i < n; ++i) ASSERT_EQ(via_b[i], 11.0f + i) << i;
    // A kernel writes through b (in place); the bytes show through a.
    affine<<<blocks(n), kThreads, 0, cs>>>(pb, pb, n, 2.0f, 1.0f);
    CHECK_LAUNCH();
    std::vector<float> via_a = to_host(*s, pa, n);
    for (int i = 0; i < n; ++i) ASSERT_EQ(via_a[i], 2.0f * (11.0f + i) + 1.0f) << i;
    // Copies and memsets go through the mapping too.
    s->memset_async(pa, 0, g / 2);
    std::vector<float> again = to_host(*s, pb, n);
    EXPECT_EQ(again[0], 0.0f);
    EXPECT_EQ(again[n / 2 - 1], 0.0f);
    EXPECT_EQ(again[n / 2], 2.0f * (11.0f + n / 2) + 1.0f);
    s->synchronize();  // no work may use the mappings once they are gone
  }
  // Unmapped, chunk released, ranges released: nothing is left at those addresses.
  EXPECT_FALSE(driver_sees_mapping(first_addr));
  EXPECT_FALSE(driver_sees_mapping(second_addr));
  EXPECT_FALSE(runtime_sees_device_memory(first_addr));
  EXPECT_FALSE(runtime_sees_device_memory(second_addr));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(CudaDeviceVmm, UnmapThenMapAnotherChunkShowsOnlyTheNewBytes) {
  const size_t g = vmm_granularity(kGpu);
  const int n = static_cast<int>(g / sizeof(float));
  auto s = new_stream(kGpu);
  cudaStream_t cs = cuda::native_stream(*s);
  VirtualRange range(kGpu, g);
  auto* p = reinterpret_cast<float*>(range.base());
  PhysicalChunk first(kGpu, g), second(kGpu, g);
  {
    ChunkMapping m(range, 0, first);
    fill_iota<<<blocks(n), kThreads, 0, cs>>>(p, n, 1.0f);
    CHECK_LAUNCH();
    s->synchronize();
  }
  {
    ChunkMapping m(range, 0, second);
    fill_iota<<<blocks(n), kThreads, 0, cs>>>(p, n, -5.0f);
    CHECK_LAUNCH();
    std::vector<float> h = to_host(*s, p, n);
    EXPECT_EQ(h[0], -5.0f);
    EXPECT_EQ(h[n - 1], -5.0f + (n - 1));
  }
  {
    // The first chunk kept its bytes while unmapped.
    ChunkMapping m(range, 0, first);
    std::vector<float> h = to_host(*s, p, n);
    EXPECT_EQ(h[0], 1.0f);
    EXPECT_EQ(h[n - 1], 1.0f + (n - 1));
  }
}

TEST_F(CudaDeviceVmm, BadMappingsAreClearErrors) {
  const size_t g = vmm_granularity(kGpu);
  VirtualRange range(kGpu, g);
  PhysicalChunk big(kGpu, 2 * g);
  expect_error_containing([&] { ChunkMapping m(range, 0, big); }, "overruns");
  PhysicalChunk chunk(kGpu, g);
  ChunkMapping m(range, 0, chunk);
  // Mapping over a live mapping is refused by the driver, with the call and sizes named.
  expect_error_containing([&] { ChunkMapping again(range, 0, chunk); }, "cuMemMap");
}

}  // namespace
}  // namespace grt
