// VmmSpaces on a GPU (cuMem* through the driver): bytes shared between spaces, lazy mapping,
// allocation (chunk creation, mapping, even a new space) during a stream capture, and release of
// every mapping and chunk on destruction (device free memory and the driver's view).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "device/capture_state.h"
#include "device/cuda/driver_api.h"
#include "device/device.h"
#include "device/graph.h"
#include "device/stream.h"
#include "memory/vmm_spaces.h"

namespace grt {
namespace {

const Device kGpu = Device::cuda(0);
constexpr size_t MiB = size_t{1} << 20;

class VmmSpacesCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device";
  }
  void TearDown() override { EXPECT_EQ(this_thread_capture_stream(), nullptr); }
};

// True when the driver knows an allocation at `addr` (something is mapped there).
bool driver_sees_mapping(const void* addr) {
  CUdeviceptr base = 0;
  size_t size = 0;
  return cuda::driver_api().mem_get_address_range(&base, &size, reinterpret_cast<CUdeviceptr>(addr)) == CUDA_SUCCESS;
}

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
  std::vector<unsigned char> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = static_cast<unsigned char>(i * 13 + seed);
  return h;
}

std::vector<unsigned char> read_back(const void* p, size_t n) {
  std::vector<unsigned char> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), p, n, cudaMemcpyDeviceToHost), cudaSuccess);
  return h;
}

size_t device_free_bytes() {
  size_t free_bytes = 0, total = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  return free_bytes;
}

TEST_F(VmmSpacesCuda, BytesWrittenThroughOneSpaceShowInAnother) {
  auto s = new_stream(kGpu);
  VmmSpaces spaces(kGpu, 64 * MiB);
  const size_t g = spaces.granularity();
  const size_t n = g + g / 2;  // one chunk of two granules
  spaces.switch_to_new_virtual_space();
  void* a = spaces.allocate(n, *s);
  const std::vector<unsigned char> h = pattern(n, 5);
  ASSERT_EQ(cudaMemcpy(a, h.data(), n, cudaMemcpyHostToDevice), cudaSuccess);

  spaces.switch_to_new_virtual_space();
  void* b = spaces.allocate(n, *s);
  EXPECT_NE(a, b);
  EXPECT_EQ(static_cast<char*>(b) - static_cast<char*>(spaces.space_stats(2).base),
            static_cast<char*>(a) - static_cast<char*>(spaces.space_stats(1).base));
  EXPECT_EQ(read_back(b, n), h);

  // A stream memset through the second space, across the chunk boundary, shows through the first.
  s->memset_async(static_cast<char*>(b) + g - 16, 0xAB, 32);
  s->synchronize();
  std::vector<unsigned char> via_a = read_back(a, n);
  for (size_t i = g - 16; i < g + 16; ++i) EXPECT_EQ(via_a[i], 0xAB) << i;
  EXPECT_EQ(via_a[g - 17], h[g - 17]);
  EXPECT_EQ(via_a[g + 16], h[g + 16]);
  EXPECT_EQ(spaces.stats().physical_bytes, 2 * g);
  spaces.free(a);
  spaces.free(b);
}

TEST_F(VmmSpacesCuda, ANewSpaceMapsOnlyTheChunksItsAllocationsReach) {
  auto s = new_stream(kGpu);
  VmmSpaces spaces(kGpu, 64 * MiB);
  const size_t g = spaces.granularity();
  spaces.switch_to_new_virtual_space();
  // Each growth creates one chunk covering the shortfall: [0, g), [g, 2g), [2g, 5g).
  void* first = spaces.allocate(g / 2, *s);
  void* second = spaces.allocate(g, *s);
  void* third = spaces.allocate(3 * g, *s);
  EXPECT_EQ(spaces.chunk_bytes(), (std::vector<size_t>{g, g, 3 * g}));
  EXPECT_EQ(spaces.stats().physical_bytes, 5 * g);

  const uint64_t id = spaces.switch_to_new_virtual_space();
  auto* base = static_cast<char*>(spaces.space_stats(id).base);
  EXPECT_FALSE(driver_sees_mapping(base));
  void* small = spaces.allocate(1000, *s);
  EXPECT_EQ(small, base);
  EXPECT_TRUE(driver_sees_mapping(base));
  EXPECT_FALSE(driver_sees_mapping(base + g));
  EXPECT_FALSE(driver_sees_mapping(base + 4 * g));
  EXPECT_EQ(spaces.space_stats(id).mapped_bytes, g);
  EXPECT_EQ(spaces.stats().mapped_bytes, 6 * g);
  EXPECT_EQ(spaces.stats().physical_bytes, 5 * g);
  // The mapped chunk is usable.
  s->memset_async(small, 0x11, 1000);
  s->synchronize();
  EXPECT_EQ(read_back(small, 1000), std::vector<unsigned char>(1000, 0x11));
  for (void* p : {first, second, third, small}) spaces.free(p);
}

// Creating chunks, mapping them (cuMemCreate, cuMemMap, cuMemSetAccess) and reserving a new space
// (cuMemAddressReserve) while this thread captures (thread-local mode): the capture must stay
// valid and the graph must write the new memory on replay.
TEST_F(VmmSpacesCuda, AllocatesMapsAndReservesDuringACapture) {
  auto s = new_stream(kGpu);
  VmmSpaces spaces(kGpu, 64 * MiB);
  const size_t g = spaces.granularity();
  const size_t n = 2 * g + 4096;  // one chunk of 3 granules, created during the capture
  spaces.switch_to_new_virtual_space();
  void* p = nullptr;
  void* q = nullptr;
  std::string error;
  std::unique_ptr<Graph> graph;
  s->begin_capture();
  try {
    p = spaces.allocate(n, *s);
    s->memset_async(p, 0x3D, n);
    spaces.switch_to_new_virtual_space();  // a reservation during the capture
    q = spaces.allocate(4096, *s);         // maps chunk 0 into the new space
    s->memset_async(static_cast<char*>(q) + 1024, 0x42, 16);
  } catch (const Error& e) {
    error = e.what();
  }
  try {
    graph = s->end_capture();
  } catch (const Error& e) {
    error += std::string(error.empty() ? "" : "; ") + "end_capture: " + e.what();
  }
  ASSERT_EQ(error, "") << "VMM calls during a stream capture";
  EXPECT_EQ(spaces.stats().physical_bytes, 3 * g);
  auto exec = graph->instantiate();
  ASSERT_EQ(cudaMemset(p, 0, n), cudaSuccess);  // the capture ran nothing; the replay must write
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  exec->launch(*s);
  s->synchronize();
  std::vector<unsigned char> h = read_back(p, n);
  std::vector<unsigned char> expect(n, 0x3D);
  for (size_t i = 1024; i < 1040; ++i) expect[i] = 0x42;  // q shares chunk 0 with p
  EXPECT_EQ(h, expect);
  spaces.free(p);
  spaces.free(q);
}

TEST_F(VmmSpacesCuda, DestructionUnmapsAndReleasesDeviceMemory) {
  auto s = new_stream(kGpu);
  {
    // One-time growth of the context (the stream's first work, the driver's VMM bookkeeping)
    // must not count against the spaces below.
    VmmSpaces warm(kGpu, 64 * MiB);
    warm.switch_to_new_virtual_space();
    void* p = warm.allocate(MiB, *s);
    s->memset_async(p, 0, MiB);
    s->synchronize();
    warm.free(p);
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const size_t free_before = device_free_bytes();
  // Several create/destroy cycles: the driver may keep some bookkeeping after the first, but a
  // leak would grow with every cycle. (cudaMemGetInfo is device-wide: ctest runs this test alone.)
  std::vector<size_t> used_after;
  for (int cycle = 0; cycle < 4; ++cycle) {
    std::vector<char*> bases;
    size_t physical = 0, free_during = 0;
    {
      VmmSpaces spaces(kGpu, 512 * MiB);
      for (int k = 0; k < 4; ++k) {
        spaces.switch_to_new_virtual_space();
        bases.push_back(static_cast<char*>(spaces.allocate(static_cast<size_t>(k + 1) * 64 * MiB, *s)));
        s->memset_async(bases.back(), k, 64 * MiB);  // queued work: the destructor waits for it
      }
      physical = spaces.stats().physical_bytes;
      EXPECT_EQ(physical, 256 * MiB);  // the largest space, not the sum (640 MiB)
      free_during = device_free_bytes();
      if (cycle == 0) EXPECT_LE(free_during + physical - 16 * MiB, free_before) << "the chunks did not take device memory";
      for (char* b : bases) EXPECT_TRUE(driver_sees_mapping(b));
      for (char* b : bases) spaces.free(b);
    }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const size_t free_after = device_free_bytes();
    used_after.push_back(free_before > free_after ? free_before - free_after : 0);
    std::printf("cycle %d: device memory used during %zu MiB (chunks %zu MiB), after destruction %zu MiB\n", cycle,
                (free_before - free_during) / MiB, physical / MiB, used_after.back() / MiB);
    for (char* b : bases) EXPECT_FALSE(driver_sees_mapping(b)) << "cycle " << cycle;
  }
  // What the first cycle left is not left again: nothing grows per cycle.
  EXPECT_LE(used_after.back(), used_after[1] + 2 * MiB) << "device memory grows with every create/destroy cycle";
  EXPECT_LT(used_after.back(), 256 * MiB) << "the chunks were not released";
  RecordProperty("device_bytes_used_after_first_cycle", std::to_string(used_after.front()));
  RecordProperty("device_bytes_used_after_last_cycle", std::to_string(used_after.back()));
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(VmmSpacesCuda, ExhaustingTheBudgetIsAClearError) {
  auto s = new_stream(kGpu);
  VmmSpaces spaces(kGpu, 8 * MiB, 64 * MiB);
  const size_t g = spaces.granularity();
  if (g > 4 * MiB) GTEST_SKIP() << "granularity " << g;
  spaces.switch_to_new_virtual_space();
  void* a = spaces.allocate(4 * MiB, *s);
  ASSERT_EQ(cudaMemset(a, 0x7E, 4 * MiB), cudaSuccess);
  std::string msg;
  try {
    spaces.allocate(8 * MiB, *s);
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("out of graph memory on cuda:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("budget 8388608 bytes"), std::string::npos) << msg;
  EXPECT_EQ(read_back(a, 4 * MiB), std::vector<unsigned char>(4 * MiB, 0x7E));
  spaces.free(a);
}

}  // namespace
}  // namespace grt
