// graphrt bench decode: decode step time eager vs decode graphs through the real runtime path
// (ModelRunner forward + sampling, inputs uploaded every step), next to the PyTorch eager and
// CUDA-graph anchors and the bandwidth roofline (the bytes a step reads: decode_step_weight_bytes
// and the KV cache, over the measured copy rate); beside each synchronised graph step the same steps
// back to back without sampling (the device's time per step) and the synchronised step taken apart
// by device events (forward, greedy pick, read-back and wake-up); plus capture time and graph memory of
// the full capture list. GRAPHRT_BENCH_PROFILE=1 adds one graph step per batch size inside a profiler range
// (ncu --profile-from-start off: the replayed graph's kernel nodes, one result each). --trace PATH
// traces graph steps of each batch size after the timed loops (bench/bench_trace.h: the in-graph
// kernel timeline, CUPTI).
#include <chrono>
#include <cstdio>

#include "bench/bench_batches.h"
#include "bench/bench_common.h"
#include "bench/bench_trace.h"
#include "cli/server_args.h"
#include "cli/tp_launch.h"
#include "device/device.h"
#include "model/model_weights.h"
#include "ops/random_fill.h"
#include "ops/sampling.h"
#include "runtime/capture_report.h"
#if defined(GRAPHRT_WITH_CUDA)
#include "ops/cuda/pdl.h"
#endif

namespace grt {
namespace {

struct DecodeOpts {
  ServerArgs args;
  std::string batch_sizes = "1,8,64";
  int context = 1024;
  int iters = 30;
  std::string anchor = "bench/anchors/torch_baseline_h100_2026-11-22.json";
  bool json = false;
  bool lazy = false;  // also time a --cuda-graph-lazy runner: start-up and first hit per batch size
  bench::TraceOpts trace;
};

// Whether the decode kernels launch with programmatic dependent launch (GRAPHRT_DISABLE_PDL=1
// turns it off: run the bench twice to see what it buys).
bool pdl_on(Device d) {
#if defined(GRAPHRT_WITH_CUDA)
  return d.is_cuda() && cuda::pdl_enabled(d.index);
#else
  (void)d;
  return false;
#endif
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void run_decode(const DecodeOpts& o) {
  std::vector<int> bss = bench::parse_int_list(o.batch_sizes);
  const int max_bs = *std::max_element(bss.begin(), bss.end());
  ServerArgs args = o.args;
  GRT_CHECK(!args.disable_cuda_graph, "bench decode compares graphs with eager: drop --disable-cuda-graph");
  // The server's --context-length sizes the decode attention's grid (its most splits a request):
  // by default just the bench's context; a larger one times the step as a server of that length
  // runs it.
  GRT_CHECK(args.context_length == 0 || args.context_length >= o.context + 2,
            "bench decode: --context-length {} cannot hold --context {} plus the step's token (at least {})",
            args.context_length, o.context, o.context + 2);
  if (args.context_length == 0) args.context_length = o.context + 2;
  args.disable_piecewise_cuda_graph = true;  // decode only: no prefill graphs to capture
  args.cuda_graph_lazy = false;              // captured at start; --lazy times a lazy runner after
  args.max_total_tokens = static_cast<int64_t>(max_bs) * (o.context + 2);
  // --tp-size: rank 0 measures; the others run its batches, runner after runner.
  const TpMember tp = join_tp(args);
  ServerArgs lazy_args = args;
  lazy_args.cuda_graph_lazy = true;
  o.trace.check(tp.device);
  if (!tp.leader()) {
    follow_leader(args, tp);
    if (o.lazy) follow_leader(lazy_args, tp);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  auto runner = make_runner(args, tp.comm, tp.device);
  const double startup_seconds = seconds_since(start);
  const DecoderModel& m = runner->model();
  const Device d = m.device();
  const ForwardGraphs* graphs = runner->decode_graphs();
  GRT_CHECK(graphs && graphs->runner().max_shape() >= max_bs,
            "no decode graph holds batch size {} (raise --max-running-requests / --cuda-graph-max-bs)", max_bs);
  for (const auto& layer : runner->kv_pool().layers()) {
    ops::fill_hash_uniform_(layer.k, 11, 0.0f, 1.0f);
    ops::fill_hash_uniform_(layer.v, 13, 0.0f, 1.0f);
  }
  nlohmann::json anchor = bench::load_anchor(o.anchor);
  const char* akey = bench::anchor_decode_key(args.model);
  const double bw = bench::copy_bandwidth_gbps(d);
  const int64_t kv_width = static_cast<int64_t>(m.config().num_key_value_heads) * m.config().head_dim;

  nlohmann::json j;
  j["device"] = device_name(d);
  j["model"] = args.model;
  j["dtype"] = dtype_name(m.dtype());
  j["copy_GBps"] = bw;
  j["pdl"] = pdl_on(d);
  const ShapeGraphRunner& gr = graphs->runner();
  j["capture"] = {{"batch_sizes", gr.shapes()},
                  {"sizes", gr.shapes().size()},
                  {"capture_seconds", gr.capture_seconds()},
                  {"capture_phases", capture_phases_json(gr)},
                  {"graph_bytes", graphs->graph_bytes()},
                  {"input_bytes", graphs->input_bytes()},
                  {"startup_seconds", startup_seconds}};
  for (int bs : bss) {
    bench::Occupancy occ(*runner, bs, o.context + 1);
    ForwardBatch b = bench::decode_batch(occ, o.context, m.config().vocab_size);
    const uint64_t before = graphs->replay_count();
    const std::vector<double> ms =
        bench::interleaved_medians_ms(d, 3, o.iters,
                                      {[&] { runner->sample(b, runner->forward_eager(b)); },
                                       [&] { runner->sample(b, runner->forward(b)); }});
    const double eager = ms[0], graph = ms[1];
    GRT_CHECK(graphs->replay_count() > before, "bench decode: batch size {} did not run on a graph", bs);
    // The same graph steps back to back, without sampling or a wait between them: the host stays a
    // step ahead, so this is the device's time per step (input upload, replay, logit rows). What
    // graph_ms adds to it is sampling and the host time the device waits for in a synchronised step.
    const double back_to_back = bench::event_ms_per_call(d, 3, o.iters, [&] { runner->forward(b); });
    // The synchronised graph step taken apart: forward, the greedy pick (the batch's rows are all
    // greedy: ModelRunner::sample runs ops::argmax), the ids' read-back and the wake-up.
    const bench::SyncStepParts parts = bench::sync_step_parts(
        d, 3, o.iters, [&] { return runner->forward(b); }, [](const Tensor& logits) { return ops::argmax(logits); });
    bench::profiled_step(d, [&] { runner->sample(b, runner->forward(b)); });  // one graph step
    const double kv_bytes = static_cast<double>(TokenToKVPool::bytes_per_token(m.config().num_hidden_layers,
                                                                               kv_width, m.dtype())) *
                            bs * o.context;
    const double roof = (decode_step_weight_bytes(m.config(), m.weights(), bs) + kv_bytes) / (bw * 1e6);
    nlohmann::json row = {{"bs", bs},
                          {"padded_bs", gr.padded_size(bs)},
                          {"ctx", o.context},
                          {"eager_ms", eager},
                          {"graph_ms", graph},
                          {"graph_speedup", eager / graph},
                          {"graph_back_to_back_ms", back_to_back},
                          {"sync_step_parts_ms",
                           {{"forward", parts.forward_ms},
                            {"pick", parts.pick_ms},
                            {"readback", parts.readback_ms},
                            {"wall", parts.wall_ms}}},
                          {"roofline_ms", roof},
                          {"graph_roofline_fraction", roof / graph}};
    const double te = bench::anchor_value(anchor, akey, bs, "eager_ms");
    const double tg = bench::anchor_value(anchor, akey, bs, "graph_ms");
    if (te > 0) row["torch_eager_ms"] = te;
    if (tg > 0) row["torch_graph_ms"] = tg, row["speedup_vs_torch_graph"] = tg / graph;
    j["decode"].push_back(row);
  }
  std::vector<std::string> trace_tables;
  if (o.trace.on()) {  // after every timed loop: the timed steps never run traced
    bench::StepTrace trace(d, o.trace);
    for (int bs : bss) {
      bench::Occupancy occ(*runner, bs, o.context + 1);
      ForwardBatch b = bench::decode_batch(occ, o.context, m.config().vocab_size);
      trace.run({{"bs", bs}}, [&] { runner->sample(b, runner->forward(b)); });
    }
    nlohmann::json points = trace.finish(m.config().num_hidden_layers, trace_tables);
    for (size_t i = 0; i < points.size(); ++i) points[i]["graph_ms"] = j["decode"][i]["graph_ms"];
    bench::write_trace(o.trace, "decode", {{"model", args.model}, {"device", j["device"]}, {"pdl", j["pdl"]},
                                            {"ctx", o.context}}, std::move(points), trace_tables, o.json);
  }
  const size_t captured = gr.shapes().size();
  const double capture_seconds = gr.capture_seconds();
  const double graph_mib = graphs->graph_bytes() / 1048576.0;
  if (o.lazy) {
    // Lazy capture: start-up without capture, then each batch size's first step pays its capture.
    const int64_t vocab = m.config().vocab_size;
    runner.reset();  // one runner's weights and KV cache at a time
    const auto t = std::chrono::steady_clock::now();
    auto lazy = make_runner(lazy_args, tp.comm, tp.device);
    j["lazy"]["startup_seconds"] = seconds_since(t);
    for (size_t i = 0; i < bss.size(); ++i) {
      bench::Occupancy occ(*lazy, bss[i], o.context + 1);
      ForwardBatch b = bench::decode_batch(occ, o.context, vocab);
      const double first = bench::median_ms(d, 0, 1, [&] { lazy->sample(b, lazy->forward(b)); });
      const double steady = bench::median_ms(d, 3, o.iters, [&] { lazy->sample(b, lazy->forward(b)); });
      j["decode"][i]["lazy_first_hit_ms"] = first;
      j["decode"][i]["lazy_graph_ms"] = steady;
    }
  }
  if (o.json) {
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  std::printf("%s on %s (%s), PDL %s: %zu decode graphs captured in %.3f s, %.1f MiB graph memory; start-up %.3f s\n",
              args.model.c_str(), j["device"].get<std::string>().c_str(), j["dtype"].get<std::string>().c_str(),
              j["pdl"].get<bool>() ? "on" : "off", captured, capture_seconds, graph_mib, startup_seconds);
  std::printf("capture phases: %s\n", capture_phases_text(gr).c_str());
  if (o.lazy)
    std::printf("lazy capture: start-up %.3f s; per batch size below: first hit / steady\n",
                j["lazy"]["startup_seconds"].get<double>());
  for (auto& r : j["decode"]) {
    std::printf("decode bs %3d ctx %d: eager %8.3f ms, graph %8.3f ms (x%.2f; back to back without sampling %.3f ms), "
                "roofline %.3f ms (%.0f%%), torch graph %s\n",
                r["bs"].get<int>(), o.context, r["eager_ms"].get<double>(), r["graph_ms"].get<double>(),
                r["graph_speedup"].get<double>(), r["graph_back_to_back_ms"].get<double>(), r["roofline_ms"].get<double>(),
                100.0 * r["graph_roofline_fraction"].get<double>(),
                r.contains("torch_graph_ms") ? fmt::format("{:.3f} ms", r["torch_graph_ms"].get<double>()).c_str()
                                             : "n/a");
    const auto& p = r["sync_step_parts_ms"];
    std::printf("  synchronised graph step %.3f ms = forward %.3f + greedy pick %.3f + read-back and wake-up %.3f\n",
                p["wall"].get<double>(), p["forward"].get<double>(), p["pick"].get<double>(),
                p["readback"].get<double>());
  }
  if (o.lazy)
    for (auto& r : j["decode"])
      std::printf("lazy   bs %3d: first hit %8.3f ms, then %8.3f ms\n", r["bs"].get<int>(),
                  r["lazy_first_hit_ms"].get<double>(), r["lazy_graph_ms"].get<double>());
}

}  // namespace

void register_bench_decode(CLI::App& bench) {
  auto o = std::make_shared<DecodeOpts>();
  CLI::App* cmd = bench.add_subcommand("decode", "decode step time eager vs decode graphs; capture time and memory");
  o->args.add_to(*cmd);
  cmd->add_option("--batch-sizes", o->batch_sizes, "decode batch sizes to time")->capture_default_str();
  cmd->add_option("--context", o->context, "tokens already in the cache of each request")->capture_default_str();
  cmd->add_option("--iters", o->iters, "timed steps per point (median)")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--anchor", o->anchor, "PyTorch anchor JSON")->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->add_flag("--lazy", o->lazy,
                "also time a --cuda-graph-lazy runner: start-up, and each batch size's first step (with its capture)");
  o->trace.add_to(*cmd);
  cmd->callback([o] { run_decode(*o); });
}

}  // namespace grt
