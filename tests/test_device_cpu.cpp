// The CPU device backend: asynchronous streams, events, capture/replay with fork/join, the
// errors capture must raise, and memfd-based virtual memory.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <latch>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "device/backend.h"
#include "device/capture_state.h"
#include "device/cpu/cpu_launch.h"
#include "device/device.h"
#include "device/event.h"
#include "device/graph.h"
#include "device/stream.h"
#include "device/vmm.h"
#include "error_of.h"

namespace grt {
namespace {

const Device kCpu = Device::cpu();

using testing::error_of;

#define EXPECT_ERROR_HAS(stmt, text)                                   \
  do {                                                                 \
    std::string msg_ = error_of([&] { stmt; });                        \
    EXPECT_NE(msg_.find(text), std::string::npos) << "error: " << msg_; \
  } while (0)

// ---- backend and streams --------------------------------------------------------------------

TEST(CpuDeviceBackend, BasicsAndAlignedMemory) {
  EXPECT_EQ(device_count(DeviceType::CPU), 1);
  EXPECT_EQ(device_name(kCpu), "cpu");
  EXPECT_GT(device_total_memory(kCpu), size_t{1} << 20);
  for (size_t bytes : {size_t{1}, size_t{100}, size_t{4096}, size_t{1000000}}) {
    void* p = device_malloc(kCpu, bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u) << bytes;
    std::memset(p, 1, bytes);
    device_free(kCpu, p);
  }
}

TEST(CpuDeviceStream, RunsWorkInOrder) {
  auto s = new_stream(kCpu);
  std::vector<int> seen;
  for (int i = 0; i < 500; ++i) cpu::launch(*s, [&seen, i] { seen.push_back(i); });
  s->synchronize();
  ASSERT_EQ(seen.size(), 500u);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(seen[i], i);

  std::vector<uint8_t> a(64, 7), b(64, 0), host(64, 0);
  s->memset_async(b.data(), 3, 64);
  s->copy_async(b.data(), a.data(), 32);  // after the memset: first half 7, second half 3
  s->copy_to_host(host.data(), b.data(), 64);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(host[i], i < 32 ? 7 : 3) << i;
}

// Per-stream caches above the device layer hear of a stream's destruction, with its id, once.
TEST(CpuDeviceStream, DestroyedListenersHearTheStreamsId) {
  static std::atomic<uint64_t> heard{0};
  static std::atomic<int> calls{0};
  static std::atomic<uint64_t> watched{0};
  static bool added = false;
  if (!added) {
    add_stream_destroyed_listener([](uint64_t id) {
      if (id == watched.load()) {
        heard = id;
        ++calls;
      }
    });
    added = true;
  }
  auto s = new_stream(Device::cpu());
  const uint64_t id = s->id();
  watched = id;
  std::atomic<bool> ran{false};
  cpu::launch(*s, [&] { ran = true; });
  s.reset();
  EXPECT_TRUE(ran.load());  // queued work ran before the stream went
  EXPECT_EQ(heard.load(), id);
  EXPECT_EQ(calls.load(), 1);
}

TEST(CpuDeviceStream, HostReturnsBeforeWorkRuns) {
  auto s = new_stream(kCpu);
  std::latch gate(1);
  std::atomic<bool> ran{false};
  int value = 0;
  cpu::launch(*s, [&] { gate.wait(); ran = true; });
  s->memset_async(&value, 0xff, sizeof(value));
  // The worker is blocked on the gate, so the host got here before the work ran.
  EXPECT_FALSE(ran.load());
  EXPECT_EQ(value, 0);
  gate.count_down();
  s->synchronize();
  EXPECT_TRUE(ran.load());
  EXPECT_EQ(value, -1);
}

TEST(CpuDeviceStream, TaskExceptionSurfacesAtNextWait) {
  auto s = new_stream(kCpu);
  cpu::launch(*s, [] { GRT_FAIL("boom {}", 42); });
  cpu::launch(*s, [] { throw std::runtime_error("second"); });  // only the first is kept
  std::string msg = error_of([&] { s->synchronize(); });
  EXPECT_NE(msg.find("boom 42"), std::string::npos) << msg;
  EXPECT_NE(msg.find("in work enqueued on stream " + std::to_string(s->id())), std::string::npos) << msg;
  EXPECT_EQ(msg.find("second"), std::string::npos) << msg;
  EXPECT_NO_THROW(s->synchronize());  // reported once

  cpu::launch(*s, [] { throw std::runtime_error("plain"); });
  int x = 0;
  EXPECT_ERROR_HAS(s->copy_to_host(&x, &x, sizeof(x)), "plain");

  auto ev = new_event(kCpu);
  cpu::launch(*s, [] { GRT_FAIL("via event"); });
  ev->record(*s);
  EXPECT_ERROR_HAS(ev->synchronize(), "via event");

  cpu::launch(*s, [] { GRT_FAIL("via device"); });
  EXPECT_ERROR_HAS(device_synchronize(kCpu), "via device");
}

// ---- events ---------------------------------------------------------------------------------

TEST(CpuDeviceEvent, CrossStreamWaitOrdersWithoutBlockingHost) {
  auto a = new_stream(kCpu), b = new_stream(kCpu);
  auto ev = new_event(kCpu);
  EXPECT_TRUE(ev->query());  // never recorded: nothing to wait for
  std::latch gate(1);
  int x = 0, y = -1;
  cpu::launch(*a, [&] { gate.wait(); x = 5; });
  ev->record(*a);
  b->wait(*ev);  // returns at once although a is blocked
  cpu::launch(*b, [&] { y = x; });
  EXPECT_FALSE(ev->query());
  gate.count_down();
  b->synchronize();
  EXPECT_EQ(y, 5);
  EXPECT_TRUE(ev->query());
  ev->synchronize();
}

TEST(CpuDeviceEvent, TimingEventsMeasureTheWorkBetweenThem) {
  auto s = new_stream(kCpu);
  auto start = new_event(kCpu, true), stop = new_event(kCpu, true), plain = new_event(kCpu);
  std::latch gate(1);
  cpu::launch(*s, [&] { gate.wait(); });
  start->record(*s);
  cpu::launch(*s, [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  stop->record(*s);
  EXPECT_ERROR_HAS(start->elapsed_ms(*stop), "completed");
  gate.count_down();
  stop->synchronize();
  EXPECT_GE(start->elapsed_ms(*stop), 19.0f);  // sleep_for sleeps at least that long
  plain->record(*s);
  plain->synchronize();
  EXPECT_ERROR_HAS(start->elapsed_ms(*plain), "timing");
}

// ---- capture --------------------------------------------------------------------------------

// Three "kernels", a memset and a copy over raw pointers: out[i] = (in[i] * 2 + 1) + in[0].
struct Buffers {
  std::vector<float> in = std::vector<float>(8), tmp = std::vector<float>(8), out = std::vector<float>(8);
};

void enqueue_program(Stream& s, Buffers& b, int* host_counter) {
  float *in = b.in.data(), *tmp = b.tmp.data(), *out = b.out.data();
  s.memset_async(tmp, 0, 8 * sizeof(float));
  cpu::launch(s, [in, tmp] { for (int i = 0; i < 8; ++i) tmp[i] += in[i] * 2; });
  if (host_counter) ++*host_counter;  // host code: runs at capture, never at replay
  cpu::launch(s, [tmp] { for (int i = 0; i < 8; ++i) tmp[i] += 1; });
  s.copy_async(out, tmp, 8 * sizeof(float));
  cpu::launch(s, [in, out] { for (int i = 0; i < 8; ++i) out[i] += in[0]; });
}

TEST(CpuDeviceCapture, ReplayOnChangedInputsEqualsEager) {
  auto s = new_stream(kCpu);
  Buffers b;
  int counter = 0;
  for (int i = 0; i < 8; ++i) b.in[i] = float(i);
  s->begin_capture();
  EXPECT_TRUE(s->is_capturing());
  EXPECT_NE(s->capture_id(), 0u);
  EXPECT_EQ(this_thread_capture_stream(), s.get());
  enqueue_program(*s, b, &counter);
  auto graph = s->end_capture();
  EXPECT_FALSE(s->is_capturing());
  EXPECT_EQ(s->capture_id(), 0u);
  EXPECT_EQ(this_thread_capture_stream(), nullptr);
  EXPECT_EQ(graph->node_count(), 5u);
  s->synchronize();
  for (float v : b.out) EXPECT_EQ(v, 0.0f);  // capture recorded, ran nothing

  auto exec = graph->instantiate();
  EXPECT_EQ(exec->node_count(), 5u);
  for (int round = 0; round < 3; ++round) {
    Buffers eager;
    for (int i = 0; i < 8; ++i) b.in[i] = eager.in[i] = float(i * 3 - round * 7) + 0.5f;
    exec->launch(*s);
    auto other = new_stream(kCpu);
    enqueue_program(*other, eager, nullptr);
    s->synchronize();
    other->synchronize();
    EXPECT_EQ(b.out, eager.out) << "round " << round;
  }
  EXPECT_EQ(counter, 1);
}

TEST(CpuDeviceCapture, ForbiddenOperationsThrowAndCaptureStillEnds) {
  auto s = new_stream(kCpu), other = new_stream(kCpu);
  auto eager_ev = new_event(kCpu), captured_ev = new_event(kCpu);
  eager_ev->record(*other);
  int x = 1, y = 0;
  s->begin_capture();
  cpu::launch(*s, [] {});
  captured_ev->record(*s);
  EXPECT_ERROR_HAS(s->synchronize(), "stream synchronize is not allowed during stream capture");
  EXPECT_ERROR_HAS(other->synchronize(), "stream synchronize is not allowed during stream capture");
  EXPECT_ERROR_HAS(device_synchronize(kCpu), "device synchronize is not allowed during stream capture");
  EXPECT_ERROR_HAS(s->copy_to_host(&y, &x, sizeof(x)), "copy_to_host");
  EXPECT_ERROR_HAS(captured_ev->query(), "event query is not allowed during stream capture");
  EXPECT_ERROR_HAS(captured_ev->synchronize(), "event synchronize is not allowed during stream capture");
  EXPECT_ERROR_HAS(eager_ev->query(), "event query is not allowed during stream capture");
  EXPECT_ERROR_HAS(s->wait(*eager_ev), "outside the capture");
  EXPECT_EQ(y, 0);
  auto graph = s->end_capture();
  EXPECT_EQ(graph->node_count(), 1u);
  EXPECT_FALSE(s->is_capturing());
  EXPECT_EQ(this_thread_capture_stream(), nullptr);
  EXPECT_NO_THROW(s->synchronize());
}

TEST(CpuDeviceCapture, ForbiddenOnCapturingStreamFromAnotherThread) {
  auto s = new_stream(kCpu);
  s->begin_capture();
  std::string msg;
  std::thread t([&] { msg = error_of([&] { s->synchronize(); }); });
  t.join();
  EXPECT_NE(msg.find("stream " + std::to_string(s->id()) + " is capturing"), std::string::npos) << msg;
  s->end_capture();
}

TEST(CpuDeviceCapture, NestedAndUnmatchedCaptureAreErrors) {
  auto s = new_stream(kCpu), t = new_stream(kCpu);
  EXPECT_ERROR_HAS(s->end_capture(), "not capturing");
  s->begin_capture();
  EXPECT_ERROR_HAS(t->begin_capture(), "nested capture");
  EXPECT_ERROR_HAS(s->begin_capture(), "nested capture");
  std::string msg;
  std::thread other([&] { msg = error_of([&] { s->begin_capture(); }); });
  other.join();
  EXPECT_NE(msg.find("already capturing"), std::string::npos) << msg;
  EXPECT_FALSE(t->is_capturing());
  EXPECT_NO_THROW(s->end_capture());
  EXPECT_ERROR_HAS(s->end_capture(), "not capturing");
}

TEST(CpuDeviceCapture, DestroyingACapturingStreamEndsTheCapture) {
  auto s = new_stream(kCpu), side = new_stream(kCpu);
  auto ev = new_event(kCpu);
  int x = 0;
  s->begin_capture();
  cpu::launch(*s, [&x] { x = 1; });
  ev->record(*s);
  side->wait(*ev);
  EXPECT_TRUE(side->is_capturing());
  s.reset();  // must not hang
  EXPECT_EQ(this_thread_capture_stream(), nullptr);
  EXPECT_FALSE(side->is_capturing());
  EXPECT_EQ(x, 0);
  auto t = new_stream(kCpu);
  t->begin_capture();  // the thread is free to capture again
  EXPECT_NO_THROW(t->end_capture());
}

// ---- fork / join ----------------------------------------------------------------------------

struct ForkBuffers {
  std::vector<float> in = std::vector<float>(4), a = std::vector<float>(4), b = std::vector<float>(4),
                     c = std::vector<float>(4), out = std::vector<float>(4);
};

// a = in + 1 (main); b = a * 2 (side); c = a * 3 (main); out = b + c (main, after the join).
void enqueue_fork_join(Stream& main, Stream& side, ForkBuffers& f) {
  float *in = f.in.data(), *a = f.a.data(), *b = f.b.data(), *c = f.c.data(), *out = f.out.data();
  auto fork = new_event(kCpu), join = new_event(kCpu);
  cpu::launch(main, [in, a] { for (int i = 0; i < 4; ++i) a[i] = in[i] + 1; });
  fork->record(main);
  side.wait(*fork);
  cpu::launch(side, [a, b] { for (int i = 0; i < 4; ++i) b[i] = a[i] * 2; });
  cpu::launch(main, [a, c] { for (int i = 0; i < 4; ++i) c[i] = a[i] * 3; });
  join->record(side);
  main.wait(*join);
  cpu::launch(main, [b, c, out] { for (int i = 0; i < 4; ++i) out[i] = b[i] + c[i]; });
}

TEST(CpuDeviceCapture, ForkJoinReplaysCorrectly) {
  auto main = new_stream(kCpu), side = new_stream(kCpu);
  ForkBuffers f;
  main->begin_capture();
  float* in = f.in.data();
  float* a = f.a.data();
  auto fork = new_event(kCpu), join = new_event(kCpu);
  cpu::launch(*main, [in, a] { for (int i = 0; i < 4; ++i) a[i] = in[i] + 1; });
  fork->record(*main);
  side->wait(*fork);
  EXPECT_TRUE(side->is_capturing());
  EXPECT_EQ(side->capture_id(), main->capture_id());
  float *b = f.b.data(), *c = f.c.data(), *out = f.out.data();
  cpu::launch(*side, [a, b] { for (int i = 0; i < 4; ++i) b[i] = a[i] * 2; });
  cpu::launch(*main, [a, c] { for (int i = 0; i < 4; ++i) c[i] = a[i] * 3; });
  join->record(*side);
  main->wait(*join);
  cpu::launch(*main, [b, c, out] { for (int i = 0; i < 4; ++i) out[i] = b[i] + c[i]; });
  EXPECT_ERROR_HAS(side->end_capture(), "end the capture there");
  auto graph = main->end_capture();
  EXPECT_FALSE(side->is_capturing());
  EXPECT_EQ(graph->node_count(), 4u);
  auto exec = graph->instantiate();

  for (int round = 0; round < 2; ++round) {
    ForkBuffers eager;
    for (int i = 0; i < 4; ++i) f.in[i] = eager.in[i] = float(10 * round + i);
    exec->launch(*main);
    auto m2 = new_stream(kCpu), s2 = new_stream(kCpu);
    enqueue_fork_join(*m2, *s2, eager);
    main->synchronize();
    m2->synchronize();
    EXPECT_EQ(f.out, eager.out);
    EXPECT_EQ(f.out[1], (eager.in[1] + 1) * 5);
  }
}

TEST(CpuDeviceCapture, UnjoinedForkFailsEndCaptureAndEndsIt) {
  auto main = new_stream(kCpu), side = new_stream(kCpu), idle = new_stream(kCpu);
  auto fork = new_event(kCpu);
  main->begin_capture();
  cpu::launch(*main, [] {});
  fork->record(*main);
  side->wait(*fork);
  idle->wait(*fork);  // forked, no work, never joined: still unjoined, as on CUDA
  cpu::launch(*side, [] {});
  std::string msg = error_of([&] { main->end_capture(); });
  EXPECT_NE(msg.find("not joined back"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(side->id())), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(idle->id())), std::string::npos) << msg;
  EXPECT_FALSE(main->is_capturing());
  EXPECT_FALSE(side->is_capturing());
  EXPECT_FALSE(idle->is_capturing());
  EXPECT_EQ(this_thread_capture_stream(), nullptr);

  // Work recorded on the side stream after its join point also leaves it unjoined.
  auto join = new_event(kCpu);
  main->begin_capture();
  fork->record(*main);
  side->wait(*fork);
  join->record(*side);
  main->wait(*join);
  cpu::launch(*side, [] {});
  EXPECT_ERROR_HAS(main->end_capture(), "not joined back");
  EXPECT_NO_THROW(main->synchronize());
}

TEST(CpuDeviceCapture, TransitiveJoinIsAccepted) {
  auto main = new_stream(kCpu), s1 = new_stream(kCpu), s2 = new_stream(kCpu);
  auto e0 = new_event(kCpu), e1 = new_event(kCpu), e2 = new_event(kCpu);
  main->begin_capture();
  e0->record(*main);
  s1->wait(*e0);
  s2->wait(*e0);
  cpu::launch(*s2, [] {});
  e2->record(*s2);
  s1->wait(*e2);  // s2 joins into s1
  cpu::launch(*s1, [] {});
  e1->record(*s1);
  main->wait(*e1);  // s1 (and through it s2) joins into main
  auto graph = main->end_capture();
  EXPECT_EQ(graph->node_count(), 2u);
}

// A replay runs each captured stream as its own lane with only the recorded edges. A node of the
// main stream that reads what the side stream writes, with no join before the read, races: the
// side node below holds its write until the main node has read (a handshake, bounded), so the
// race shows deterministically. A serial replay in host-enqueue order runs the side node first
// and it waits in vain: the missing edge could never show.
TEST(CpuDeviceCapture, MissingJoinEdgeIsARealRaceAtReplay) {
  auto main = new_stream(kCpu), side = new_stream(kCpu);
  auto value = std::make_shared<std::atomic<int>>(0);
  auto main_read = std::make_shared<std::atomic<bool>>(false);
  auto side_waited_in_vain = std::make_shared<std::atomic<bool>>(false);
  auto seen = std::make_shared<std::atomic<int>>(-1);
  auto fork = new_event(kCpu), join = new_event(kCpu);
  main->begin_capture();
  fork->record(*main);
  side->wait(*fork);
  cpu::launch(*side, [value, main_read, side_waited_in_vain] {
    for (int i = 0; i < 5000 && !*main_read; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    *side_waited_in_vain = !*main_read;
    *value = 1;
  });
  cpu::launch(*main, [value, main_read, seen] {  // reads the side stream's output: no join yet
    *seen = value->load();
    *main_read = true;
  });
  join->record(*side);
  main->wait(*join);  // joined only after the read (end_capture is satisfied)
  auto exec = main->end_capture()->instantiate();
  exec->launch(*main);
  main->synchronize();
  EXPECT_FALSE(*side_waited_in_vain) << "the replay ran the side stream's node before the main stream's: a "
                                        "missing join edge cannot show on the CPU";
  EXPECT_EQ(seen->load(), 0) << "the main stream's read ran after the side stream's write without an edge";
  EXPECT_EQ(value->load(), 1);
}

// With the join before the read, the read always sees the side stream's write, however late it is.
TEST(CpuDeviceCapture, RecordedJoinEdgeOrdersTheLanes) {
  auto main = new_stream(kCpu), side = new_stream(kCpu), other = new_stream(kCpu);
  auto value = std::make_shared<std::atomic<int>>(0);
  auto seen = std::make_shared<std::atomic<int>>(-1);
  auto fork = new_event(kCpu), join = new_event(kCpu);
  main->begin_capture();
  fork->record(*main);
  side->wait(*fork);
  cpu::launch(*side, [value] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    *value = *value + 1;
  });
  join->record(*side);
  main->wait(*join);
  cpu::launch(*main, [value, seen] { *seen = value->load(); });
  auto exec = main->end_capture()->instantiate();
  for (int round = 1; round <= 3; ++round) {
    exec->launch(round == 2 ? *other : *main);
    main->synchronize();
    other->synchronize();
    EXPECT_EQ(seen->load(), round) << "round " << round;
  }
}

// ---- GraphExec::update ----------------------------------------------------------------------

std::unique_ptr<Graph> capture_writes(Stream& s, int* dst, std::vector<int> values, bool memset_last = false) {
  s.begin_capture();
  for (int v : values) cpu::launch(s, [dst, v] { *dst = v; });
  if (memset_last) s.memset_async(dst, 0, sizeof(int));
  return s.end_capture();
}

TEST(CpuDeviceCapture, GraphExecUpdate) {
  auto s = new_stream(kCpu);
  int x = 0;
  auto exec = capture_writes(*s, &x, {1})->instantiate();
  exec->launch(*s);
  s->synchronize();
  EXPECT_EQ(x, 1);
  EXPECT_TRUE(exec->update(*capture_writes(*s, &x, {2})));
  exec->launch(*s);
  s->synchronize();
  EXPECT_EQ(x, 2);
  EXPECT_FALSE(exec->update(*capture_writes(*s, &x, {3, 4})));  // node count differs
  auto kinds_differ = capture_writes(*s, &x, {}, true);
  EXPECT_EQ(kinds_differ->node_count(), 1u);
  EXPECT_FALSE(exec->update(*kinds_differ));  // a memset where a kernel was
  x = 0;
  exec->launch(*s);
  s->synchronize();
  EXPECT_EQ(x, 2);  // unchanged by the failed updates
  EXPECT_EQ(exec->node_count(), 1u);
}

// ---- virtual memory ---------------------------------------------------------------------------

std::string read_maps() {
  std::ifstream f("/proc/self/maps");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// True when some line of /proc/self/maps covers `addr`.
bool mapped(const void* addr) {
  std::istringstream in(read_maps());
  std::string line;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  while (std::getline(in, line)) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi) return true;
  }
  return false;
}

TEST(CpuDeviceVmm, OneChunkShowsTheSameBytesAtTwoAddresses) {
  const size_t g = vmm_granularity(kCpu);
  EXPECT_EQ(g, size_t{2} << 20);
  EXPECT_EQ(vmm_round_up(kCpu, 1), g);
  EXPECT_EQ(vmm_round_up(kCpu, g + 1), 2 * g);
  const size_t maps_before = [] {
    std::string m = read_maps();
    size_t n = 0;
    for (size_t p = m.find("graphrt-vmm"); p != std::string::npos; p = m.find("graphrt-vmm", p + 1)) ++n;
    return n;
  }();
  ASSERT_EQ(maps_before, 0u);
  void* base1 = nullptr;
  {
    VirtualRange r1(kCpu, 3 * g), r2(kCpu, 1);
    base1 = r1.base();
    EXPECT_EQ(r1.size(), 3 * g);
    EXPECT_EQ(r2.size(), g);
    PhysicalChunk chunk(kCpu, g);
    {
      ChunkMapping m1(r1, g, chunk), m2(r2, 0, chunk);
      EXPECT_EQ(m1.address(), r1.base() + g);
      auto* p1 = static_cast<int*>(m1.address());
      auto* p2 = static_cast<int*>(m2.address());
      p1[0] = 1234;
      p1[g / sizeof(int) - 1] = -7;
      EXPECT_EQ(p2[0], 1234);
      EXPECT_EQ(p2[g / sizeof(int) - 1], -7);
      p2[100] = 99;
      EXPECT_EQ(p1[100], 99);
      EXPECT_NE(read_maps().find("graphrt-vmm"), std::string::npos);
      EXPECT_THROW(ChunkMapping(r1, g / 2, chunk), Error);   // not granular
      EXPECT_THROW(ChunkMapping(r1, 3 * g, chunk), Error);   // overruns the range
    }
    EXPECT_TRUE(mapped(r1.base() + g));  // unmapping keeps the reservation
    EXPECT_EQ(read_maps().find("graphrt-vmm"), std::string::npos);
    {
      ChunkMapping again(r1, 0, chunk);  // the chunk keeps its bytes while unmapped
      EXPECT_EQ(static_cast<int*>(again.address())[0], 1234);
    }
  }
  EXPECT_EQ(read_maps().find("graphrt-vmm"), std::string::npos);
  EXPECT_FALSE(mapped(base1));
}

}  // namespace
}  // namespace grt
