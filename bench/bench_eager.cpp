// graphrt bench eager: eager decode-step and prefill times through the real runtime path
// (ModelRunner forward + sampling), next to the PyTorch eager anchors and the bandwidth
// roofline, plus the achieved bandwidth of the decode GEMMs and decode attention.
// GRAPHRT_BENCH_PROFILE=1 adds one prefill step per token count inside a profiler range (ncu).
#include <cstdio>

#include "bench/bench_batches.h"
#include "bench/bench_common.h"
#include "cli/commands.h"
#include "cli/server_args.h"
#include "device/device.h"
#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "model/model_weights.h"
#include "ops/attention.h"
#include "ops/linear.h"
#include "ops/random_fill.h"

namespace grt {
namespace {

using bench::anchor_decode_key;
using bench::anchor_value;
using bench::decode_batch;
using bench::Occupancy;
using bench::prefill_batch;

struct EagerOpts {
  ServerArgs args;
  std::string batch_sizes = "1,8,64";
  std::string prefill_tokens = "4,64,256,1024,4096";
  int context = 1024;
  int iters = 20;
  std::string anchor = "bench/anchors/torch_baseline_h100_2026-11-22.json";
  bool json = false;
};

nlohmann::json gemm_bandwidth(const DecoderModel& m, int bs, double copy_gbps) {
  const LayerWeights& w = m.weights().layers[0];
  struct G {
    const char* name;
    Tensor w;
  } gemms[] = {{"qkv_proj", w.qkv}, {"o_proj", w.o_proj}, {"gate_up_proj", w.gate_up}, {"down_proj", w.down},
               {"lm_head", m.weights().lm_head}};
  nlohmann::json out = nlohmann::json::array();
  for (const G& g : gemms) {
    Tensor x = empty(Shape{bs, g.w.size(1)}, m.dtype(), m.device());
    ops::fill_hash_uniform_(x, 7, 0.0f, 1.0f);
    DType out_dt = std::string(g.name) == "lm_head" ? DType::F32 : m.dtype();
    double ms = bench::event_ms_per_call(m.device(), 3, 50, [&] { ops::linear(x, g.w, Tensor(), out_dt); });
    double bytes = static_cast<double>(g.w.nbytes() + x.nbytes()) +
                   static_cast<double>(bs) * static_cast<double>(g.w.size(0)) * static_cast<double>(dtype_size(out_dt));
    double gbps = bytes / (ms * 1e6);
    out.push_back({{"name", g.name}, {"bs", bs}, {"n", g.w.size(0)}, {"k", g.w.size(1)}, {"us", ms * 1e3},
                   {"GBps", gbps}, {"fraction_of_copy", gbps / copy_gbps}});
  }
  return out;
}

nlohmann::json attention_bandwidth(ModelRunner& r, int bs, int ctx, double copy_gbps) {
  const DecoderModel& m = r.model();
  const ModelConfig& c = m.config();
  Occupancy occ(r, bs, ctx + 1);
  std::vector<int32_t> lens(static_cast<size_t>(bs), ctx);
  Device d = m.device();
  Shape sb{bs};
  ops::DecodeAttentionMeta meta{r.req_pool().table(), from_vector(std::vector<int32_t>(occ.slots.begin(), occ.slots.end()), sb, DType::I32, d),
                                from_vector(lens, sb, DType::I32, d), Tensor()};
  Tensor q = empty(Shape{bs, static_cast<int64_t>(c.num_attention_heads) * c.head_dim}, m.dtype(), d);
  ops::fill_hash_uniform_(q, 5, 0.0f, 1.0f);
  const LayerKvCache& kv = r.kv_pool().layers()[0];
  double ms = bench::event_ms_per_call(d, 3, 50, [&] {
    ops::attention_decode(q, kv.k, kv.v, meta, c.num_attention_heads, c.num_key_value_heads, c.head_dim, 0.1f);
  });
  double bytes = 2.0 * bs * static_cast<double>(ctx) * c.num_key_value_heads * c.head_dim * dtype_size(m.dtype());
  double gbps = bytes / (ms * 1e6);
  return {{"name", "attention_decode"}, {"bs", bs}, {"ctx", ctx}, {"us", ms * 1e3}, {"GBps", gbps},
          {"fraction_of_copy", gbps / copy_gbps}};
}

void run_eager(const EagerOpts& o) {
  std::vector<int> bss = bench::parse_int_list(o.batch_sizes);
  std::vector<int> toks = bench::parse_int_list(o.prefill_tokens);
  int max_bs = *std::max_element(bss.begin(), bss.end());
  int max_tok = *std::max_element(toks.begin(), toks.end());
  ServerArgs args = o.args;
  args.max_running_requests = max_bs;
  args.context_length = std::max(o.context + 2, max_tok);
  args.max_total_tokens = static_cast<int64_t>(max_bs) * (o.context + 2) + max_tok;
  auto runner = make_runner(args);
  const DecoderModel& m = runner->model();
  Device d = m.device();
  const int vocab = m.config().vocab_size;
  nlohmann::json anchor = bench::load_anchor(o.anchor);
  const char* akey = anchor_decode_key(args.model);

  for (const auto& layer : runner->kv_pool().layers()) {
    ops::fill_hash_uniform_(layer.k, 11, 0.0f, 1.0f);
    ops::fill_hash_uniform_(layer.v, 13, 0.0f, 1.0f);
  }
  double bw = bench::copy_bandwidth_gbps(d);
  double weight_bytes = static_cast<double>(m.weights().bytes());
  nlohmann::json j;
  j["device"] = device_name(d);
  j["model"] = args.model;
  j["dtype"] = dtype_name(m.dtype());
  j["weight_bytes"] = weight_bytes;
  j["copy_GBps"] = bw;
  j["weights_roofline_ms"] = weight_bytes / (bw * 1e6);

  const int64_t kv_width = static_cast<int64_t>(m.config().num_key_value_heads) * m.config().head_dim;
  for (int bs : bss) {
    Occupancy occ(*runner, bs, o.context + 1);
    ForwardBatch b = decode_batch(occ, o.context, vocab);
    double ms = bench::median_ms(d, 3, o.iters, [&] { runner->sample(b, runner->forward(b)); });
    double kv_bytes = static_cast<double>(TokenToKVPool::bytes_per_token(m.config().num_hidden_layers, kv_width,
                                                                         m.dtype())) * bs * o.context;
    double roof = (decode_step_weight_bytes(m.config(), m.weights(), bs) + kv_bytes) / (bw * 1e6);
    double anchor_ms = anchor_value(anchor, akey, bs, "eager_ms");
    nlohmann::json row = {{"bs", bs}, {"ctx", o.context}, {"eager_ms", ms}, {"roofline_ms", roof},
                          {"roofline_fraction", roof / ms}};
    if (anchor_ms > 0) row["torch_eager_ms"] = anchor_ms, row["speedup_vs_torch_eager"] = anchor_ms / ms;
    j["decode"].push_back(row);
  }
  for (int t : toks) {
    Occupancy occ(*runner, 1, t);
    ForwardBatch b = prefill_batch(occ, t, vocab);
    double ms = bench::median_ms(d, 2, std::max(3, o.iters / 2), [&] { runner->sample(b, runner->forward(b)); });
    bench::profiled_step(d, [&] { runner->sample(b, runner->forward(b)); });
    nlohmann::json row = {{"tokens", t}, {"eager_ms", ms}};
    double anchor_ms = args.model == "builtin:qwen3-0.6b"
                           ? anchor_value(anchor, "small_prefill_eager_vs_pcg", t, "eager_ms")
                           : 0.0;
    if (anchor_ms > 0) row["torch_eager_ms"] = anchor_ms, row["speedup_vs_torch_eager"] = anchor_ms / ms;
    j["prefill"].push_back(row);
  }
  if (d.is_cuda()) {
    for (int bs : bss) {
      for (auto& g : gemm_bandwidth(m, bs, bw)) j["kernels"].push_back(g);
      j["kernels"].push_back(attention_bandwidth(*runner, bs, o.context, bw));
    }
  }
  if (o.json) {
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  std::printf("%s on %s (%s), copy %.0f GB/s, weights %.2f GB\n", args.model.c_str(), j["device"].get<std::string>().c_str(),
              dtype_name(m.dtype()), bw, weight_bytes / 1e9);
  for (auto& r : j["decode"])
    std::printf("decode bs %3d ctx %d: %8.3f ms (roofline %.3f)\n", r["bs"].get<int>(), o.context,
                r["eager_ms"].get<double>(), r["roofline_ms"].get<double>());
  for (auto& r : j["prefill"])
    std::printf("prefill %5d tokens: %8.3f ms\n", r["tokens"].get<int>(), r["eager_ms"].get<double>());
}

}  // namespace

void register_bench(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "benchmarks (JSON with --json)");
  bench->require_subcommand(1);
  auto o = std::make_shared<EagerOpts>();
  CLI::App* eager = bench->add_subcommand("eager", "eager decode-step and prefill times, kernel bandwidth");
  o->args.add_to(*eager);
  eager->add_option("--batch-sizes", o->batch_sizes, "decode batch sizes")->capture_default_str();
  eager->add_option("--context", o->context, "tokens already in the cache of each decode request")->capture_default_str();
  eager->add_option("--prefill-tokens", o->prefill_tokens, "prefill token counts")->capture_default_str();
  eager->add_option("--iters", o->iters, "timed steps per point (median)")->check(CLI::Range(1, 1000000))->capture_default_str();
  eager->add_option("--anchor", o->anchor, "PyTorch anchor JSON")->capture_default_str();
  eager->add_flag("--json", o->json, "print JSON");
  eager->callback([o] { run_eager(*o); });
  register_bench_decode(*bench);
  register_bench_breakable(*bench);
  register_bench_prefill(*bench);
  register_bench_attention(*bench);
  register_bench_memory(*bench);
  register_bench_serving(*bench);
  register_bench_tokenizer(*bench);
  register_bench_stream(*bench);
  register_bench_pdl(*bench);
}

}  // namespace grt
