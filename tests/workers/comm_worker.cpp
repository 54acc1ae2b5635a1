// A rank of a tensor-parallel group for tests/test_communicator.cpp (and tests/cuda/test_nccl.cpp): joins the group
// through join_tp_group (rank 0 spawns the others as copies of this program), runs one scenario and prints what it saw
// as "rank R: ..." lines (the spawned ranks' stdout goes to stderr).
//
//   comm_worker <scenario> --tp N [--timeout S] [--rank R] [--nnodes N --node-rank K --addr H:P]
//               [--device cpu|cuda]   (cuda: NCCL, one GPU per rank; tests/cuda/test_nccl.cpp)
// scenarios: collectives (every collective, checked bitwise against the rank-order sum, plus a
// collective captured in a CPU graph and replayed twice); die (rank R kills itself while the
// others wait for it in an all-reduce); sleep (rank R arrives late to an all-reduce, past the
// timeout); mismatch (rank R calls all_gather where the others call all_reduce_sum_); abandon
// (rank 0 ends while the others wait for its next command).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"
#include "device/device.h"
#include "device/graph.h"
#include "device/stream.h"
#include "runtime/tp_group.h"

namespace {

using grt::DType;
using grt::Tensor;

int g_rank = -1;

template <typename... Args>
void out(fmt::format_string<Args...> f, Args&&... args) {
  std::string s = fmt::format("rank {}: ", g_rank) + fmt::format(f, std::forward<Args>(args)...) + "\n";
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

uint64_t fnv(const void* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 1099511628211ull;
  return h;
}

// A value of rank r at element i whose sums round (so rank order matters to the bits).
float value(int r, size_t i) { return 0.1f * static_cast<float>(r + 1) + 1e-3f * static_cast<float>(i) / 7.0f; }

// A buffer on the rank's device mirroring a host vector (on the CPU "device" memory is host
// memory too): up() queues the copy in, down() waits and copies back.
template <typename T>
class Mirror {
 public:
  Mirror(std::vector<T>& host, grt::Device device)
      : host_(host), device_(device), ptr_(grt::device_malloc(device, std::max<size_t>(1, bytes()))) {
    up();
  }
  ~Mirror() {
    try {
      grt::current_stream(device_).synchronize();
    } catch (const std::exception&) {  // the error was reported already; the memory is ours again
    }
    grt::device_free(device_, ptr_);
  }
  size_t bytes() const { return host_.size() * sizeof(T); }
  void up() { grt::current_stream(device_).copy_async(ptr_, host_.data(), bytes()); }
  void down() { grt::current_stream(device_).copy_to_host(host_.data(), ptr_, bytes()); }
  Tensor t(grt::Shape shape, DType dt) const { return Tensor::from_blob(ptr_, std::move(shape), dt, device_); }

 private:
  std::vector<T>& host_;
  grt::Device device_;
  void* ptr_;
};

void report(const char* what, bool ok, const void* p, size_t n) {
  out("{} {} {:016x}", what, ok ? "ok" : "WRONG", fnv(p, n));
}

// The CPU communicator sums in rank order: bitwise the rank-order sum. NCCL's ring order is its
// own: within rounding of it (every rank still gets the same bytes, which the test compares).
bool sums_match(float got, float want, bool exact, float rel) {
  return exact ? std::memcmp(&got, &want, 4) == 0 : std::fabs(got - want) <= rel * std::fabs(want);
}

void collectives(grt::Communicator& c) {
  const int n = c.size(), me = c.rank();
  const grt::Device dev = c.device();
  const bool exact = dev.is_cpu();
  grt::Stream& s = grt::current_stream(dev);
  // all_reduce_sum_ f32.
  {
    const size_t count = 37;
    std::vector<float> t(count), want(count);
    for (size_t i = 0; i < count; ++i) {
      t[i] = value(me, i);
      float acc = value(0, i);
      for (int r = 1; r < n; ++r) acc += value(r, i);
      want[i] = acc;
    }
    Mirror<float> m(t, dev);
    c.all_reduce_sum_(m.t({37}, DType::F32));
    m.down();
    bool ok = true;
    for (size_t i = 0; i < count; ++i) ok = ok && sums_match(t[i], want[i], exact, 1e-6f);
    report("all_reduce_sum_ f32", ok, t.data(), count * 4);
  }
  // all_reduce_sum_ bf16: on the CPU f32 accumulation in rank order, one rounding.
  {
    const size_t count = 16;
    std::vector<uint16_t> t(count), want(count);
    for (size_t i = 0; i < count; ++i) {
      t[i] = grt::float_to_bf16(value(me, i));
      float acc = grt::bf16_to_float(grt::float_to_bf16(value(0, i)));
      for (int r = 1; r < n; ++r) acc += grt::bf16_to_float(grt::float_to_bf16(value(r, i)));
      want[i] = grt::float_to_bf16(acc);
    }
    Mirror<uint16_t> m(t, dev);
    c.all_reduce_sum_(m.t({4, 4}, DType::BF16));
    m.down();
    bool ok = true;
    for (size_t i = 0; i < count; ++i)
      ok = ok && (exact ? t[i] == want[i]
                        : sums_match(grt::bf16_to_float(t[i]), grt::bf16_to_float(want[i]), false, 1.0f / 64));
    report("all_reduce_sum_ bf16", ok, t.data(), count * 2);
  }
  // all_gather: [2, 3] per rank -> [n*2, 3].
  {
    std::vector<float> in(6), got(6 * n), want(6 * n);
    for (size_t i = 0; i < 6; ++i) in[i] = value(me, i);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < 6; ++i) want[r * 6 + i] = value(r, i);
    Mirror<float> mi(in, dev), mo(got, dev);
    c.all_gather(mi.t({2, 3}, DType::F32), mo.t({2 * n, 3}, DType::F32));
    mo.down();
    report("all_gather", got == want, got.data(), got.size() * 4);
  }
  // broadcast_ from the last rank.
  {
    std::vector<float> t(5);
    for (size_t i = 0; i < 5; ++i) t[i] = value(me, i);
    Mirror<float> m(t, dev);
    c.broadcast_(m.t({5}, DType::F32), n - 1);
    m.down();
    bool ok = true;
    for (size_t i = 0; i < 5; ++i) ok = ok && t[i] == value(n - 1, i);
    report("broadcast_", ok, t.data(), 20);
  }
  // Host collectives.
  c.barrier();
  {
    std::vector<uint8_t> b;
    if (me == 0) b = {1, 2, 3, 4, 5, 6, 7};
    c.broadcast_bytes(b, 0);
    std::vector<uint8_t> want = {1, 2, 3, 4, 5, 6, 7};
    report("broadcast_bytes root 0", b == want, b.data(), b.size());
    std::vector<uint8_t> b2;
    if (me == n - 1) b2.assign(1000, 42);
    c.broadcast_bytes(b2, n - 1);
    report("broadcast_bytes last root", b2 == std::vector<uint8_t>(1000, 42), b2.data(), b2.size());
  }
  {
    std::vector<int64_t> v = {me, 10 - me, me == 1 ? -5 : 7};
    std::vector<int64_t> m = c.all_reduce_min(v);
    std::vector<int64_t> want = {0, 10 - (n - 1), n > 1 ? -5 : 7};
    report("all_reduce_min", m == want, m.data(), m.size() * 8);
  }
  // A collective captured in a graph, replayed twice: t = rank+1 -> n(n+1)/2 -> n * that (exact).
  {
    std::shared_ptr<grt::Stream> cs = grt::new_stream(dev);
    std::vector<float> t(8, static_cast<float>(me + 1));
    Mirror<float> m(t, dev);
    s.synchronize();
    std::unique_ptr<grt::Graph> g;
    {
      grt::StreamGuard guard(*cs);
      cs->begin_capture();
      c.all_reduce_sum_(m.t({8}, DType::F32));
      g = cs->end_capture();
    }
    m.down();  // nothing ran during capture
    bool ok = t[0] == static_cast<float>(me + 1);
    auto exec = g->instantiate();
    exec->launch(*cs);
    cs->synchronize();
    m.down();
    const float s1 = static_cast<float>(n * (n + 1) / 2);
    for (float x : t) ok = ok && x == s1;
    exec->launch(*cs);
    cs->synchronize();
    m.down();
    for (float x : t) ok = ok && x == s1 * static_cast<float>(n);
    report("graph replay", ok, t.data(), t.size() * 4);
  }
}

// Runs all-reduces until the group breaks; rank `who` acts up at the second one.
void misbehave(grt::Communicator& c, const std::string& scenario, int who, double timeout) {
  const grt::Device dev = c.device();
  grt::Stream& s = grt::current_stream(dev);
  std::vector<float> t(12, 1.0f), o(12 * c.size());
  Mirror<float> mt(t, dev), mo(o, dev);
  for (int step = 0; step < 1000; ++step) {
    if (step == 1 && c.rank() == who) {
      if (scenario == "die") {
        out("killing myself");
        ::raise(SIGKILL);
      }
      if (scenario == "sleep") std::this_thread::sleep_for(std::chrono::duration<double>(timeout * 2));
      if (scenario == "mismatch") {
        c.all_gather(mt.t({3, 4}, DType::F32), mo.t({3 * c.size(), 4}, DType::F32));
        s.synchronize();
        continue;
      }
    }
    c.all_reduce_sum_(mt.t({3, 4}, DType::F32));
    s.synchronize();
    if (step == 0) c.barrier();  // everyone is past the first one
  }
  out("finished 1000 steps without an error");
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "";
  grt::TpGroupOptions o;
  int who = 1;
  grt::DeviceType device = grt::DeviceType::CPU;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--tp") o.tp_size = std::atoi(argv[i + 1]);
    if (k == "--timeout") o.dist_timeout = std::atof(argv[i + 1]);
    if (k == "--rank") who = std::atoi(argv[i + 1]);
    if (k == "--nnodes") o.nnodes = std::atoi(argv[i + 1]);
    if (k == "--node-rank") o.node_rank = std::atoi(argv[i + 1]);
    if (k == "--addr") o.dist_init_addr = argv[i + 1];
    if (k == "--device") device = grt::Device::parse(argv[i + 1]).type;
  }
  try {
    grt::TpGroup group = grt::join_tp_group(o, device, argc, argv);
    g_rank = group.rank();
    out("joined {} of {} on {} (pid {})", group.rank(), group.size(), group.device.str(), ::getpid());
    if (scenario == "collectives") {
      collectives(*group.comm);
    } else if (scenario == "die" || scenario == "sleep" || scenario == "mismatch") {
      misbehave(*group.comm, scenario, who, o.dist_timeout);
    } else if (scenario == "abandon") {
      // Rank 0 ends without the stop its followers wait for, while something else still holds
      // its communicator: its TpGroup must get them out of their wait.
      std::shared_ptr<grt::Communicator> held = group.comm;
      group.comm->barrier();
      if (group.rank() != 0) {
        std::vector<uint8_t> command;
        group.comm->broadcast_bytes(command, 0);
      }
      out("done");
      static std::shared_ptr<grt::Communicator> leaked;
      leaked = held;  // outlives the TpGroup
      return 0;
    } else {
      out("unknown scenario '{}'", scenario);
      return 2;
    }
    group.comm->barrier();
    out("done");
  } catch (const std::exception& e) {
    std::string s = fmt::format("rank {}: error: {}\n", g_rank, e.what());
    std::fwrite(s.data(), 1, s.size(), stderr);
    return 1;
  }
  return 0;
}
