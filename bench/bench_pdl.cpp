// graphrt bench pdl: what one edge of a programmatic-dependent-launch chain costs in a CUDA graph
// (ops/cuda/pdl_probe.h): chains of kernels that only wait, trigger and exit, by grid size, PDL
// on and off, thread block clusters with and without a cluster barrier, dependent L2 round trips
// after the wait, the trigger's place, and blocks an SM (shared memory). The decode step of a small
// model is a chain of short kernels, so these are its floor: the part of each kernel's advance
// that no change inside the kernel removes.
//
// A CUDA graph of `--chain` probes is replayed `--reps` times; us per kernel is the median replay
// over the chain length.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "core/error.h"
#include "device/device.h"
#include "device/stream.h"
#include "memory/tensor_alloc.h"
#if defined(GRAPHRT_WITH_CUDA)
#include "ops/cuda/pdl.h"
#include "ops/cuda/pdl_probe.h"
#endif

namespace grt {
namespace {

struct PdlOpts {
  std::string device = "cuda:0";
  int chain = 200;
  int reps = 15;
  bool json = false;
};

#if defined(GRAPHRT_WITH_CUDA)
struct Config {
  std::string group;
  cuda::PdlProbeArgs a;
  bool pdl = true;
};

std::vector<Config> configs(int sms) {
  std::vector<Config> c;
  const auto add = [&](const std::string& g, int blocks, int cluster, int trips, bool barrier, bool after, int smem,
                       bool pdl = true) {
    cuda::PdlProbeArgs a;
    a.blocks = blocks;
    a.cluster = cluster;
    a.trips = trips;
    a.cluster_barrier = barrier;
    a.trigger_after = after;
    a.smem = smem;
    c.push_back({g, a, pdl});
  };
  for (int b : {1, 2, 8, 32, 64, 128, sms, 2 * sms}) add("grid", b, 1, 0, false, false, 0);
  for (int b : {2, 128, 2 * sms}) add("pdl off", b, 1, 0, false, false, 0, false);
  for (int cl : {2, 4, 8})
    for (bool bar : {false, true}) add("cluster", 128, cl, 0, bar, false, 0);
  for (int cl : {2, 4}) add("cluster", 256, cl, 0, true, false, 0);
  for (int t : {1, 2, 4, 8}) add("trips", 128, 1, t, false, false, 0);
  add("trips", 2, 1, 2, false, false, 0);
  add("trigger after", 2, 1, 2, false, true, 0);
  add("trigger after", 128, 1, 2, false, true, 0);
  add("2 a SM", 2 * sms, 1, 0, false, false, 100 * 1024);
  add("2 a SM", 256, 2, 2, true, false, 100 * 1024);  // the shape of qwen3-0.6b's qkv GEMV
  add("2 a SM", 128, 4, 2, true, false, 100 * 1024);  // its o_proj / down
  add("2 a SM", 192, 1, 2, false, false, 100 * 1024);  // its gate_up
  return c;
}

void run_pdl(const PdlOpts& o) {
  const Device d = Device::parse(o.device);
  GRT_CHECK(d.is_cuda(), "bench pdl needs a CUDA device, got {}", o.device);
  const int sms = cuda::pdl_probe_sms(d);
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  Tensor words = zeros(Shape{static_cast<int64_t>(2 * sms + 256) * 32}, DType::I32, d);
  nlohmann::json j;
  j["device"] = device_name(d);
  j["chain"] = o.chain;
  j["reps"] = o.reps;
  j["results"] = nlohmann::json::array();
  if (!o.json)
    std::printf("%s: us per kernel of a graph of %d chained probes (median of %d replays)\n%-14s %6s %7s %7s %5s %6s %7s %4s %9s\n",
                device_name(d).c_str(), o.chain, o.reps, "group", "blocks", "cluster", "barrier", "trips", "after",
                "smem KB", "pdl", "us");
  for (const Config& c : configs(sms)) {
    cuda::PdlProbeArgs a = c.a;
    a.words = static_cast<uint32_t*>(words.data());
    cuda::set_pdl_override(c.pdl ? 1 : 0);  // captured into the graph's edges
    cuda::pdl_probe(d, a);                  // the launch works before it is captured
    const std::vector<double> us =
        bench::graph_replay_us_per_call(d, o.chain, o.reps, [&](int) { cuda::pdl_probe(d, a); });
    cuda::set_pdl_override(-1);
    const double med = us[us.size() / 2];
    j["results"].push_back({{"group", c.group}, {"blocks", a.blocks}, {"cluster", a.cluster},
                            {"cluster_barrier", a.cluster_barrier}, {"trips", a.trips},
                            {"trigger_after", a.trigger_after}, {"smem", a.smem}, {"pdl", c.pdl}, {"us", med},
                            {"us_all", us}});
    if (!o.json)
      std::printf("%-14s %6d %7d %7s %5d %6s %7d %4s %9.2f\n", c.group.c_str(), a.blocks, a.cluster,
                  a.cluster_barrier ? "yes" : "no", a.trips, a.trigger_after ? "yes" : "no", a.smem / 1024,
                  c.pdl ? "on" : "off", med);
  }
  // The words the trips wrote: each block's word 2 holds its trip count (the loads read zeros).
  const std::vector<int32_t> w = to_host_vector<int32_t>(words);
  GRT_CHECK(w[2] == 2, "bench pdl: block 0's stored word is {}, not the last config's 2 trips", w[2]);
  if (o.json) std::printf("%s\n", j.dump(1).c_str());
}
#else
void run_pdl(const PdlOpts&) { throw Error("bench pdl needs a build with CUDA (GRAPHRT_WITH_CUDA)"); }
#endif

}  // namespace

void register_bench_pdl(CLI::App& bench) {
  auto o = std::make_shared<PdlOpts>();
  CLI::App* c = bench.add_subcommand("pdl", "what one edge of a PDL kernel chain in a CUDA graph costs, by grid shape");
  c->add_option("--device", o->device, "CUDA device")->capture_default_str();
  c->add_option("--chain", o->chain, "probe kernels in the timed graph")->capture_default_str()->check(CLI::Range(2, 100000));
  c->add_option("--reps", o->reps, "graph replays timed (median)")->capture_default_str()->check(CLI::Range(1, 10000));
  c->add_flag("--json", o->json, "print JSON");
  c->callback([o] { run_pdl(*o); });
}

}  // namespace grt
