// graphrt bench prefill: prefill (extend) time eager vs piecewise graphs through the real runtime
// path (ModelRunner forward + sampling; "graph": what the runtime picks — decode rows, a full extend
// graph or the piecewise graph), next to the PyTorch eager and per-layer-graph anchors;
// capture time and graph memory of the whole token schedule, and of its largest count alone.
// GRAPHRT_BENCH_PROFILE=1 adds one eager step per token count inside a profiler range (ncu);
// GRAPHRT_BENCH_PROFILE=graph profiles one piecewise graph step instead (its pieces' kernel nodes
// and the eager split ops between them). --trace PATH traces piecewise graph steps of each token
// count after the timed loops (bench/bench_trace.h: the in-graph kernel timeline, CUPTI).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "bench/bench_batches.h"
#include "bench/bench_common.h"
#include "bench/bench_trace.h"
#include "cli/server_args.h"
#include "cli/tp_launch.h"
#include "device/device.h"
#include "model/model_loader.h"
#include "runtime/capture_report.h"

namespace grt {
namespace {

struct PrefillOpts {
  ServerArgs args;
  std::string tokens = "4,16,64,256,1024,4096";
  int max_tokens = 4096;  // the schedule's cap: the anchor captured 50 sizes up to 4096
  int iters = 20;
  std::string anchor = "bench/anchors/torch_baseline_h100_2026-11-22.json";
  bool json = false;
  bench::TraceOpts trace;
};

void run_prefill(const PrefillOpts& o) {
  const std::vector<int> toks = bench::parse_int_list(o.tokens);
  const int max_tok = std::max(o.max_tokens, *std::max_element(toks.begin(), toks.end()));
  ServerArgs args = o.args;
  // --context-length as in bench decode: at least the largest prompt; by default just that.
  GRT_CHECK(args.context_length == 0 || args.context_length >= max_tok + 8,
            "bench prefill: --context-length {} cannot hold {} tokens (at least {})", args.context_length, max_tok,
            max_tok + 8);
  if (args.context_length == 0) args.context_length = max_tok + 8;
  args.max_total_tokens = max_tok + 8;
  args.max_running_requests = std::max(args.max_running_requests, 1);
  args.piecewise_cuda_graph_max_tokens = o.max_tokens;
  // Decode graphs only for the token counts that replay one as rows (runtime/extend_rows.h):
  // the runtime's path for them ("graph_ms"), beside the piecewise graph of the same count.
  std::vector<int> row_sizes;
  for (int t : toks)
    if (t <= args.decode_graph_extend_max_tokens) row_sizes.push_back(t);
  std::sort(row_sizes.begin(), row_sizes.end());
  row_sizes.erase(std::unique(row_sizes.begin(), row_sizes.end()), row_sizes.end());
  args.disable_cuda_graph = row_sizes.empty();
  args.cuda_graph_bs = row_sizes;
  // Decode graphs are capped at the request slots (a decode batch has a row per request).
  if (!row_sizes.empty()) args.max_running_requests = std::max(args.max_running_requests, row_sizes.back());
  // --tp-size: rank 0 measures; the others build the same two runners and run its batches.
  const TpMember group = join_tp(args);
  const Device d = group.device;
  o.trace.check(d);
  auto model = load_model_for(args, group.comm, d, args.context_length);
  const int vocab = model->config().vocab_size;
  nlohmann::json anchor = bench::load_anchor(o.anchor);
  const bool small = args.model == "builtin:qwen3-0.6b";
  const bool profile_graph = bench::profile_graph_step();

  nlohmann::json j;
  j["device"] = device_name(d);
  j["model"] = args.model;
  size_t largest_alone = 0;
  double largest_alone_s = 0;
  {
    ModelRunnerOptions ro = args.runner_options();
    ro.piecewise_cuda_graph_tokens = {o.max_tokens};
    ro.disable_cuda_graph = true;  // the largest piecewise graph alone
    ro.full_extend_graph_max_tokens = 0;
    ro.capture_progress = false;
    ro.communicator = group.comm;
    ModelRunner alone(model, ro);
    if (!group.leader()) alone.follow();
    GRT_CHECK(alone.piecewise_graphs(), "bench prefill: piecewise graphs are off");
    largest_alone = alone.graph_memory()->physical_bytes();
    largest_alone_s = alone.piecewise_graphs()->runner().capture_seconds();
  }
  ModelRunnerOptions ro = args.runner_options();
  ro.communicator = group.comm;
  ModelRunner runner(model, ro);
  if (!group.leader()) return runner.follow();
  ForwardGraphs* pg = runner.graphs(ForwardMode::EXTEND);
  GRT_CHECK(pg && pg->runner().max_shape() >= *std::max_element(toks.begin(), toks.end()),
            "bench prefill: no piecewise graph holds {} tokens", *std::max_element(toks.begin(), toks.end()));
  const ShapeGraphRunner& gr = pg->runner();
  size_t nodes = 0;
  for (const auto& s : gr.stats()) nodes += s.nodes;
  const size_t whole = runner.graph_memory()->physical_bytes();  // with the decode graphs of row_sizes (small)
  j["capture"] = {{"token_counts", gr.shapes()},
                  {"sizes", gr.shapes().size()},
                  {"pieces", gr.stats().front().segments},
                  {"graph_nodes", nodes},
                  {"capture_seconds", gr.capture_seconds()},
                  {"capture_phases", capture_phases_json(gr)},
                  {"graph_bytes", whole},
                  {"largest_alone_bytes", largest_alone},
                  {"largest_alone_capture_seconds", largest_alone_s},
                  {"memory_vs_largest", static_cast<double>(whole) / static_cast<double>(largest_alone)},
                  {"decode_graph_sizes_for_rows", row_sizes}};
  if (small && anchor.contains("pcg_shared_desc")) j["capture"]["torch"] = anchor["pcg_shared_desc"];
  if (const ForwardGraphs* fg = runner.full_extend_graphs())
    j["capture"]["full_extend"] = {{"token_counts", fg->runner().shapes()},
                                   {"capture_seconds", fg->runner().capture_seconds()}};
  for (int t : toks) {
    bench::Occupancy occ(runner, 1, t);
    ForwardBatch b = bench::prefill_batch(occ, t, vocab);
    const int iters = t >= 2048 ? std::max(3, o.iters / 4) : o.iters;
    const uint64_t before = pg->replay_count(), rows_before = runner.extend_row_steps();
    const std::string rows_refused = runner.extend_rows_refusal(b);
    // The runtime's path when not rows: a full extend graph where one serves the batch.
    const ForwardGraphs* fg = runner.full_extend_graphs();
    const bool full = !rows_refused.empty() && fg && fg->refusal(b).empty();
    const uint64_t full_before = fg ? fg->replay_count() : 0;
    // Host time to issue the forward (before sampling waits for it): near piecewise_ms, the step
    // is bound by the host (graph launches and the eager steps between pieces), not the device.
    std::vector<double> issue;
    std::vector<std::function<void()>> variants = {
        [&] { runner.sample(b, runner.forward_eager(b)); },
        [&] {
          const auto a = std::chrono::steady_clock::now();
          const Tensor logits = pg->forward(b);  // the piecewise graph, whatever the runtime would pick
          issue.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
          runner.sample(b, logits);
        }};
    if (rows_refused.empty() || full) variants.push_back([&] { runner.sample(b, runner.forward(b)); });
    const std::vector<double> ms = bench::interleaved_medians_ms(d, 2, iters, variants);
    const double eager = ms[0], graph = ms[1];
    issue.erase(issue.begin(), issue.begin() + 2);  // the warm-up runs
    std::sort(issue.begin(), issue.end());
    GRT_CHECK(pg->replay_count() > before, "bench prefill: {} tokens did not run on a piecewise graph", t);
    GRT_CHECK(rows_refused.empty() == (runner.extend_row_steps() > rows_before),
              "bench prefill: {} tokens {} on a decode graph as rows", t, rows_refused.empty() ? "did not run" : "ran");
    GRT_CHECK(!full || fg->replay_count() > full_before, "bench prefill: {} tokens did not run on a full extend graph", t);
    bench::profiled_step(d, [&] { runner.sample(b, profile_graph ? runner.forward(b) : runner.forward_eager(b)); });
    // graph_ms: what the runtime runs (ModelRunner::forward): decode rows where they apply.
    const double runtime_ms = rows_refused.empty() || full ? ms[2] : graph;
    nlohmann::json row = {{"tokens", t}, {"padded", gr.padded_size(t)}, {"eager_ms", eager}, {"piecewise_ms", graph},
                          {"piecewise_issue_ms", issue[issue.size() / 2]},
                          {"speedup", eager / graph},
                          {"graph_ms", runtime_ms},
                          {"graph_path", rows_refused.empty() ? "decode graph rows" : full ? "full extend graph" : "piecewise"},
                          {"rows_refused", rows_refused}};
    if (small) {
      const double te = bench::anchor_value(anchor, "small_prefill_eager_vs_pcg", t, "eager_ms");
      const double tp = bench::anchor_value(anchor, "small_prefill_eager_vs_pcg", t, "pcg_ms");
      if (te > 0) row["torch_eager_ms"] = te;
      if (tp > 0) row["torch_pcg_ms"] = tp, row["speedup_vs_torch_pcg"] = tp / runtime_ms;
    }
    j["prefill"].push_back(row);
  }
  if (o.trace.on()) {  // after every timed loop: the timed steps never run traced
    std::vector<std::string> tables;
    bench::StepTrace trace(d, o.trace);
    for (int t : toks) {
      bench::Occupancy occ(runner, 1, t);
      ForwardBatch b = bench::prefill_batch(occ, t, vocab);
      trace.run({{"tokens", t}}, [&] { runner.sample(b, runner.forward(b)); });
    }
    nlohmann::json points = trace.finish(model->config().num_hidden_layers, tables);
    for (size_t i = 0; i < points.size(); ++i) points[i]["piecewise_ms"] = j["prefill"][i]["piecewise_ms"];
    bench::write_trace(o.trace, "prefill", {{"model", args.model}, {"device", j["device"]}}, std::move(points),
                       tables, o.json);
  }
  if (o.json) {
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  std::printf("%s on %s: %zu token counts x %zu pieces captured in %.3f s, %.1f MiB (largest alone %.1f MiB)\n",
              args.model.c_str(), j["device"].get<std::string>().c_str(), gr.shapes().size(),
              gr.stats().front().segments, gr.capture_seconds(), whole / 1048576.0, largest_alone / 1048576.0);
  std::printf("capture phases: %s\n", capture_phases_text(gr).c_str());
  if (const ForwardGraphs* fg = runner.full_extend_graphs()) std::printf("%s\n", fg->summary().c_str());
  for (const auto& r : j["prefill"])
    std::printf("prefill %5d tokens: eager %8.3f ms, piecewise %8.3f ms (x%.2f; host issues the forward in %.3f ms), "
                "graph %8.3f ms (%s)\n",
                r["tokens"].get<int>(), r["eager_ms"].get<double>(), r["piecewise_ms"].get<double>(),
                r["speedup"].get<double>(), r["piecewise_issue_ms"].get<double>(), r["graph_ms"].get<double>(),
                r["graph_path"].get<std::string>().c_str());
}

}  // namespace

void register_bench_prefill(CLI::App& bench) {
  auto o = std::make_shared<PrefillOpts>();
  CLI::App* cmd = bench.add_subcommand("prefill", "prefill time eager vs piecewise graphs; capture time and memory");
  o->args.add_to(*cmd);
  cmd->add_option("--tokens", o->tokens, "prefill token counts to time")->capture_default_str();
  cmd->add_option("--schedule-max-tokens", o->max_tokens, "largest token count of the captured schedule")
      ->capture_default_str();
  cmd->add_option("--iters", o->iters, "timed steps per point (median)")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--anchor", o->anchor, "PyTorch anchor JSON")->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON");
  o->trace.add_to(*cmd);
  cmd->callback([o] { run_prefill(*o); });
}

}  // namespace grt
