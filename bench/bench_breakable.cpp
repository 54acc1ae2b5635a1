// graphrt bench breakable: the cost of graph breaks. Decode step time with 0, 1, 4 and one break
// per layer (breakable decode graphs, break_graph() after evenly spaced layers) next to the
// plain decode graph and the eager forward, all through ModelRunner forward + sampling.
#include <cstdio>

#include "bench/bench_batches.h"
#include "bench/bench_common.h"
#include "cli/server_args.h"
#include "device/device.h"
#include "model/model_loader.h"
#include "ops/random_fill.h"

namespace grt {
namespace {

struct BreakableOpts {
  ServerArgs args;
  std::string batch_sizes = "1,64";
  std::string breaks = "0,1,4,all";
  int context = 1024;
  int iters = 30;
  bool json = false;
};

// `n` break points spread over `layers` layers ("all": after every layer).
std::vector<int> break_layers(int n, int layers) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back(static_cast<int>((static_cast<int64_t>(i) + 1) * layers / (n + 1)));
  if (n >= layers) {
    out.clear();
    for (int l = 0; l < layers; ++l) out.push_back(l);
  }
  return out;
}

void run_breakable(const BreakableOpts& o) {
  const std::vector<int> bss = bench::parse_int_list(o.batch_sizes);
  const int max_bs = *std::max_element(bss.begin(), bss.end());
  ServerArgs args = o.args;
  args.context_length = o.context + 2;
  args.disable_piecewise_cuda_graph = true;  // decode only: no prefill graphs to capture
  args.max_total_tokens = static_cast<int64_t>(max_bs) * (o.context + 2);
  args.max_running_requests = std::max(args.max_running_requests, max_bs);
  args.cuda_graph_bs = bss;
  const Device d = args.resolved_device();
  const DType dt = args.resolved_dtype(d);
  auto model = load_model(args.model, d, dt, args.seed, args.context_length);
  const int layers = model->config().num_hidden_layers;
  const int vocab = model->config().vocab_size;

  struct Config {
    std::string name;
    bool graphs, breakable;
    int breaks;
  };
  std::vector<Config> configs{{"eager", false, false, 0}, {"graph", true, false, 0}};
  for (const std::string& b : CLI::detail::split(o.breaks, ',')) {
    const int n = b == "all" ? layers : std::stoi(b);
    configs.push_back({"breakable_" + std::to_string(n), true, true, n});
  }
  nlohmann::json j;
  j["device"] = device_name(d);
  j["model"] = args.model;
  j["layers"] = layers;
  for (const Config& c : configs) {
    ModelRunnerOptions ro = args.runner_options();
    ro.disable_cuda_graph = !c.graphs;
    ro.breakable_cuda_graph = c.breakable;
    ro.graph_break_layers = c.breakable ? break_layers(c.breaks, layers) : std::vector<int>{};
    ro.capture_progress = false;
    ModelRunner runner(model, ro);
    for (const auto& layer : runner.kv_pool().layers()) {
      ops::fill_hash_uniform_(layer.k, 11, 0.0f, 1.0f);
      ops::fill_hash_uniform_(layer.v, 13, 0.0f, 1.0f);
    }
    for (int bs : bss) {
      bench::Occupancy occ(runner, bs, o.context + 1);
      ForwardBatch b = bench::decode_batch(occ, o.context, vocab);
      const double ms = bench::median_ms(d, 3, o.iters, [&] { runner.sample(b, runner.forward(b)); });
      nlohmann::json row = {{"config", c.name}, {"bs", bs}, {"breaks", c.breaks}, {"ms", ms}};
      if (const ForwardGraphs* g = runner.decode_graphs()) {
        const auto& sizes = g->runner().stats();
        for (const auto& s : sizes)
          if (s.shape == bs) row["segments"] = s.segments, row["capture_seconds"] = s.capture_seconds;
      }
      j["steps"].push_back(row);
    }
  }
  // Per-break cost: (with n breaks - breakable with none) / n, per batch size. The zero-break
  // breakable capture is the baseline: it is the same graph as the plain one (one segment), and
  // comparing within one configuration keeps run-to-run placement noise out.
  for (auto& row : j["steps"]) {
    if (row["config"].get<std::string>().rfind("breakable_", 0) != 0 || row["breaks"].get<int>() == 0) continue;
    for (const auto& base : j["steps"])
      if (base["config"] == "breakable_0" && base["bs"] == row["bs"])
        row["us_per_break"] = (row["ms"].get<double>() - base["ms"].get<double>()) * 1e3 / row["breaks"].get<int>();
  }
  if (o.json) {
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  for (const auto& r : j["steps"])
    std::printf("%-14s bs %3d: %8.3f ms%s\n", r["config"].get<std::string>().c_str(), r["bs"].get<int>(),
                r["ms"].get<double>(),
                r.contains("us_per_break") ? fmt::format(" ({:.1f} us per break)", r["us_per_break"].get<double>()).c_str()
                                           : "");
}

}  // namespace

void register_bench_breakable(CLI::App& bench) {
  auto o = std::make_shared<BreakableOpts>();
  CLI::App* cmd = bench.add_subcommand("breakable", "decode step time with graph breaks vs plain graph and eager");
  o->args.add_to(*cmd);
  cmd->add_option("--batch-sizes", o->batch_sizes, "decode batch sizes")->capture_default_str();
  cmd->add_option("--breaks", o->breaks, "break counts to measure ('all': one per layer)")->capture_default_str();
  cmd->add_option("--context", o->context, "tokens already in the cache of each request")->capture_default_str();
  cmd->add_option("--iters", o->iters, "timed steps per point (median)")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->callback([o] { run_breakable(*o); });
}

}  // namespace grt
