// A rank of a CPU tensor-parallel group for tests/test_communicator.cpp: joins the group through
// join_tp_group (rank 0 spawns the others as copies of this program), runs one scenario and
// prints what it saw as "rank R: ..." lines (the spawned ranks' stdout goes to stderr).
//
//   comm_worker <scenario> --tp N [--timeout S] [--rank R] [--nnodes N --node-rank K --addr H:P]
// scenarios: collectives (every collective, checked bitwise against the rank-order sum, plus a
// collective captured in a CPU graph and replayed twice); die (rank R kills itself while the
// others wait for it in an all-reduce); sleep (rank R arrives late to an all-reduce, past the
// timeout); mismatch (rank R calls all_gather where the others call all_reduce_sum_).
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"
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

template <typename T>
Tensor blob(std::vector<T>& v, grt::Shape shape, DType dt) {
  return Tensor::from_blob(v.data(), std::move(shape), dt, grt::Device::cpu());
}

void report(const char* what, bool ok, const void* p, size_t n) {
  out("{} {} {:016x}", what, ok ? "ok" : "WRONG", fnv(p, n));
}

void collectives(grt::Communicator& c) {
  const int n = c.size(), me = c.rank();
  grt::Stream& s = grt::current_stream(grt::Device::cpu());
  // all_reduce_sum_ f32: bitwise the rank-order sum.
  {
    const size_t count = 37;
    std::vector<float> t(count), want(count);
    for (size_t i = 0; i < count; ++i) {
      t[i] = value(me, i);
      float acc = value(0, i);
      for (int r = 1; r < n; ++r) acc += value(r, i);
      want[i] = acc;
    }
    c.all_reduce_sum_(blob(t, {37}, DType::F32));
    s.synchronize();
    report("all_reduce_sum_ f32", std::memcmp(t.data(), want.data(), count * 4) == 0, t.data(), count * 4);
  }
  // all_reduce_sum_ bf16: f32 accumulation in rank order, one rounding.
  {
    const size_t count = 16;
    std::vector<uint16_t> t(count), want(count);
    for (size_t i = 0; i < count; ++i) {
      t[i] = grt::float_to_bf16(value(me, i));
      float acc = grt::bf16_to_float(grt::float_to_bf16(value(0, i)));
      for (int r = 1; r < n; ++r) acc += grt::bf16_to_float(grt::float_to_bf16(value(r, i)));
      want[i] = grt::float_to_bf16(acc);
    }
    c.all_reduce_sum_(blob(t, {4, 4}, DType::BF16));
    s.synchronize();
    report("all_reduce_sum_ bf16", std::memcmp(t.data(), want.data(), count * 2) == 0, t.data(), count * 2);
  }
  // all_gather: [2, 3] per rank -> [n*2, 3].
  {
    std::vector<float> in(6), got(6 * n), want(6 * n);
    for (size_t i = 0; i < 6; ++i) in[i] = value(me, i);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < 6; ++i) want[r * 6 + i] = value(r, i);
    c.all_gather(blob(in, {2, 3}, DType::F32), blob(got, {2 * n, 3}, DType::F32));
    s.synchronize();
    report("all_gather", got == want, got.data(), got.size() * 4);
  }
  // broadcast_ from the last rank.
  {
    std::vector<float> t(5);
    for (size_t i = 0; i < 5; ++i) t[i] = value(me, i);
    c.broadcast_(blob(t, {5}, DType::F32), n - 1);
    s.synchronize();
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
  // A collective captured in a CPU graph, replayed twice: t = rank+1 -> n(n+1)/2 -> n * that.
  {
    std::shared_ptr<grt::Stream> cs = grt::new_stream(grt::Device::cpu());
    std::vector<float> t(8, static_cast<float>(me + 1));
    std::unique_ptr<grt::Graph> g;
    {
      grt::StreamGuard guard(*cs);
      cs->begin_capture();
      c.all_reduce_sum_(blob(t, {8}, DType::F32));
      g = cs->end_capture();
    }
    // Nothing ran during capture.
    bool ok = t[0] == static_cast<float>(me + 1);
    auto exec = g->instantiate();
    exec->launch(*cs);
    cs->synchronize();
    const float s1 = static_cast<float>(n * (n + 1) / 2);
    for (float x : t) ok = ok && x == s1;
    exec->launch(*cs);
    cs->synchronize();
    for (float x : t) ok = ok && x == s1 * static_cast<float>(n);
    report("graph replay", ok, t.data(), t.size() * 4);
  }
}

// Runs all-reduces until the group breaks; rank `who` acts up at the second one.
void misbehave(grt::Communicator& c, const std::string& scenario, int who, double timeout) {
  grt::Stream& s = grt::current_stream(grt::Device::cpu());
  std::vector<float> t(12, 1.0f);
  for (int step = 0; step < 1000; ++step) {
    if (step == 1 && c.rank() == who) {
      if (scenario == "die") {
        out("killing myself");
        ::raise(SIGKILL);
      }
      if (scenario == "sleep") std::this_thread::sleep_for(std::chrono::duration<double>(timeout * 2));
      if (scenario == "mismatch") {
        std::vector<float> o(12 * c.size());
        c.all_gather(blob(t, {3, 4}, DType::F32), blob(o, {3 * c.size(), 4}, DType::F32));
        s.synchronize();
        continue;
      }
    }
    c.all_reduce_sum_(blob(t, {3, 4}, DType::F32));
    s.synchronize();
    std::fill(t.begin(), t.end(), 1.0f);
    if (step == 0) c.barrier();  // everyone is past the first one
  }
  out("finished 1000 steps without an error");
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = argc > 1 ? argv[1] : "";
  grt::TpGroupOptions o;
  int who = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--tp") o.tp_size = std::atoi(argv[i + 1]);
    if (k == "--timeout") o.dist_timeout = std::atof(argv[i + 1]);
    if (k == "--rank") who = std::atoi(argv[i + 1]);
    if (k == "--nnodes") o.nnodes = std::atoi(argv[i + 1]);
    if (k == "--node-rank") o.node_rank = std::atoi(argv[i + 1]);
    if (k == "--addr") o.dist_init_addr = argv[i + 1];
  }
  try {
    grt::TpGroup group = grt::join_tp_group(o, grt::DeviceType::CPU, argc, argv);
    g_rank = group.rank();
    out("joined {} of {} on {} (pid {})", group.rank(), group.size(), group.device.str(), ::getpid());
    if (scenario == "collectives") {
      collectives(*group.comm);
    } else if (scenario == "die" || scenario == "sleep" || scenario == "mismatch") {
      misbehave(*group.comm, scenario, who, o.dist_timeout);
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
