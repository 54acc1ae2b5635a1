// graphrt bench attention: extend (prefill) attention alone, through ops::attention_extend on a
// paged cache (one request, every position on a randomly permuted slot, page size 1), causal, for
// several token counts, prefix lengths, head shapes and kernels; TFLOP/s beside PyTorch SDPA
// measured by scripts/bench_attention_torch.py in the same job (--torch FILE).
//
// FLOPs counted: 4 * head_dim * q_heads * (visible query-key pairs), pairs = T * P + T * (T + 1) / 2
// for T new tokens after a prefix of P: the QKᵀ and PV products of the causal part only (at P = 0
// this is the usual 2 * 2 * T * T / 2 * heads * dim plus the diagonal's T / 2 pairs).
// --queued: each point's calls enqueued behind a long memset and timed from its end, so that the
// GPU runs them back to back and a short kernel (a 64-token extend takes ~7 us, about the host's
// cost of a call) is not timed at the host's launch rate. (Not a CUDA graph: the op refuses stream
// capture, its launch being sized from host values.)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <numeric>
#include <random>

#include "bench/bench_common.h"
#include "device/device.h"
#include "device/event.h"
#include "device/stream.h"
#include "memory/tensor_alloc.h"
#include "ops/attention.h"
#include "ops/random_fill.h"

namespace grt {
namespace {

struct AttentionOpts {
  std::string device = "cuda:0";
  std::string tokens = "512,1024,2048,4096,8192,16384";
  std::string prefixes = "0,4096";
  std::string shapes = "16/8/128,32/8/128,16/8/64";
  std::string kernels = "auto,auto-v1,auto-fa2,tc";
  int iters = 10;
  std::string torch;  // JSON of scripts/bench_attention_torch.py
  std::string json_out;  // also write the JSON here
  bool json = false;
  bool queued = false;  // time the calls queued behind a memset (no host launch gaps)
};

struct HeadShape {
  int nq, nkv, hd;
};

std::vector<HeadShape> parse_shapes(const std::string& text) {
  std::vector<HeadShape> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    HeadShape s{};
    char tail = 0;
    GRT_CHECK(std::sscanf(item.c_str(), "%d/%d/%d%c", &s.nq, &s.nkv, &s.hd, &tail) == 3 && s.nq > 0 && s.nkv > 0 &&
                  s.hd > 0 && s.nq % s.nkv == 0,
              "bench attention: shape '{}' must be q_heads/kv_heads/head_dim with q_heads a multiple of kv_heads",
              item);
    out.push_back(s);
    pos = comma + 1;
  }
  return out;
}

std::vector<std::string> parse_names(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    out.push_back(text.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

double causal_flops(const HeadShape& s, int64_t t, int64_t p) {
  return 4.0 * s.hd * s.nq * (static_cast<double>(t) * p + static_cast<double>(t) * (t + 1) / 2.0);
}

// The PyTorch row of this point: {"ms": ..., "backend": ...} per backend, or null.
nlohmann::json torch_row(const nlohmann::json& torch, const HeadShape& s, int t, int p) {
  if (!torch.is_object() || !torch.contains("rows")) return nullptr;
  for (const auto& r : torch["rows"])
    if (r.value("nq", 0) == s.nq && r.value("nkv", 0) == s.nkv && r.value("hd", 0) == s.hd &&
        r.value("tokens", 0) == t && r.value("prefix", -1) == p)
      return r;
  return nullptr;
}

// Mean ms per call of `iters` calls enqueued while the GPU runs a memset of `pad` (two calls
// before, untimed: kernel attributes set); `queued` says whether the host had enqueued them all
// before the GPU reached the first (else the time includes host launch gaps).
double queued_ms_per_call(Device d, const Tensor& pad, int iters, const std::function<void()>& call, bool& queued) {
  Stream& s = current_stream(d);
  call();
  call();
  s.memset_async(pad.data(), 0, pad.nbytes());
  auto start = new_event(d, true), end = new_event(d, true);
  start->record(s);
  for (int i = 0; i < iters; ++i) call();
  queued = !start->query();
  end->record(s);
  end->synchronize();
  return static_cast<double>(start->elapsed_ms(*end)) / iters;
}

// Sets GRAPHRT_EXTEND_KERNEL for one scope (ops/cuda/attention_extend_params.h reads it per call).
class KernelChoice {
 public:
  explicit KernelChoice(const std::string& name) { setenv("GRAPHRT_EXTEND_KERNEL", name.c_str(), 1); }
  ~KernelChoice() { unsetenv("GRAPHRT_EXTEND_KERNEL"); }
  KernelChoice(const KernelChoice&) = delete;
  KernelChoice& operator=(const KernelChoice&) = delete;
};

void run_attention(const AttentionOpts& o) {
  const Device d = Device::parse(o.device);
  GRT_CHECK(d.is_cuda(), "bench attention times CUDA kernels: --device {} is not a CUDA device", o.device);
  const std::vector<int> toks = bench::parse_int_list(o.tokens);
  std::vector<int> prefixes;
  for (const std::string& p : parse_names(o.prefixes)) {
    char* end = nullptr;
    const long v = std::strtol(p.c_str(), &end, 10);
    GRT_CHECK(!p.empty() && *end == 0 && v >= 0 && v < (1L << 24), "bench attention: prefix '{}' in '{}' is no length",
              p, o.prefixes);
    prefixes.push_back(static_cast<int>(v));
  }
  const std::vector<HeadShape> shapes = parse_shapes(o.shapes);
  const std::vector<std::string> kernels = parse_names(o.kernels);
  const nlohmann::json torch = o.torch.empty() ? nlohmann::json() : bench::load_anchor(o.torch);
  GRT_CHECK(o.torch.empty() || torch.is_object(), "bench attention: --torch {} is missing or not JSON", o.torch);

  nlohmann::json j;
  j["device"] = device_name(d);
  j["flops"] = "4 * head_dim * q_heads * (T * P + T * (T + 1) / 2): causal QK^T and PV, one request";
  j["layout"] = "paged: every position on a randomly permuted cache slot (page size 1)";
  j["timing"] = o.queued ? "calls queued behind a memset, event-timed" : "eager calls, event-timed";
  // --queued: 4 GiB of memset (~1.5 ms on an H100) ahead of each point's calls.
  const Tensor pad = o.queued ? empty(Shape{int64_t{1} << 32}, DType::U8, d) : Tensor();
  if (torch.is_object()) j["torch"] = {{"version", torch.value("torch", "")}, {"layout", torch.value("layout", "")}};
  std::mt19937 rng(5);
  for (const HeadShape& s : shapes)
    for (int p : prefixes)
      for (int t : toks) {
        const int64_t ctx = int64_t{p} + t;
        const int64_t slots = ctx + 1;  // slot 0 is the sink
        Tensor q = empty(Shape{t, int64_t{s.nq} * s.hd}, DType::BF16, d);
        Tensor kc = empty(Shape{slots, int64_t{s.nkv} * s.hd}, DType::BF16, d);
        Tensor vc = empty_like(kc);
        ops::fill_hash_uniform_(q, 1, 0.0f, 1.0f);
        ops::fill_hash_uniform_(kc, 2, 0.0f, 1.0f);
        ops::fill_hash_uniform_(vc, 3, 0.0f, 1.0f);
        std::vector<int32_t> table(static_cast<size_t>(ctx));
        std::iota(table.begin(), table.end(), 1);
        std::shuffle(table.begin(), table.end(), rng);
        ops::ExtendAttentionMeta meta;
        meta.req_to_token = from_vector(table, Shape{1, ctx}, DType::I32, d);
        meta.req_pool_indices = from_vector(std::vector<int32_t>{0}, Shape{1}, DType::I32, d);
        meta.prefix_lens = from_vector(std::vector<int32_t>{p}, Shape{1}, DType::I32, d);
        meta.extend_lens = from_vector(std::vector<int32_t>{t}, Shape{1}, DType::I32, d);
        meta.extend_start_loc = from_vector(std::vector<int32_t>{0}, Shape{1}, DType::I32, d);
        meta.num_reqs = 1;
        meta.max_extend_len = t;
        meta.covered_rows = t;  // every row written: no zero fill (--queued times the kernel alone)
        Tensor out = empty(Shape{t, int64_t{s.nq} * s.hd}, DType::BF16, d);
        const float scale = 1.0f / std::sqrt(static_cast<float>(s.hd));
        const double flops = causal_flops(s, t, p);
        nlohmann::json row = {{"nq", s.nq}, {"nkv", s.nkv}, {"hd", s.hd}, {"tokens", t}, {"prefix", p},
                              {"gflop", flops / 1e9}};
        for (const std::string& k : kernels) {
          KernelChoice choice(k);
          const auto call = [&] { ops::attention_extend_out_(out, q, kc, vc, meta, s.nq, s.nkv, s.hd, scale); };
          const int iters = flops > 1e12 ? std::max(3, o.iters / 3) : o.iters;
          bool queued = true;
          const double ms =
              o.queued ? queued_ms_per_call(d, pad, iters, call, queued) : bench::event_ms_per_call(d, 2, iters, call);
          row["kernels"][k] = {{"ms", ms}, {"tflops", flops / (ms * 1e9)}};
          if (!queued) row["kernels"][k]["host_bound"] = true;  // the GPU caught up with the launches
        }
        nlohmann::json tr = torch_row(torch, s, t, p);
        if (!tr.is_null()) {
          row["torch"] = tr["backends"];
          double best = 0;
          for (const auto& [name, b] : tr["backends"].items())
            if (b.contains("ms")) best = best == 0 ? b["ms"].get<double>() : std::min(best, b["ms"].get<double>());
          const auto& flash = tr["backends"]["flash"];
          const double fa2 = flash.is_object() && flash.contains("ms") ? flash["ms"].get<double>() : 0.0;
          // ours / PyTorch in throughput, for each kernel: > 1 means faster than PyTorch's best
          // backend (cuDNN or FlashAttention-2 on an H100) / than its FlashAttention-2 backend.
          if (best > 0) {
            row["torch_best_ms"] = best;
            row["torch_best_tflops"] = flops / (best * 1e9);
            for (const std::string& k : kernels) row["kernels"][k]["vs_torch_best"] = best / row["kernels"][k]["ms"].get<double>();
          }
          if (fa2 > 0) {
            row["torch_flash_tflops"] = flops / (fa2 * 1e9);
            for (const std::string& k : kernels) row["kernels"][k]["vs_torch_flash"] = fa2 / row["kernels"][k]["ms"].get<double>();
          }
        }
        j["rows"].push_back(row);
      }
  if (!o.json_out.empty()) {
    std::FILE* f = std::fopen(o.json_out.c_str(), "w");
    GRT_CHECK(f != nullptr, "bench attention: cannot write --json-out {}", o.json_out);
    std::fprintf(f, "%s\n", j.dump(1).c_str());
    std::fclose(f);
  }
  if (o.json) {
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  std::printf("extend attention on %s, TFLOP/s (%s)\n", j["device"].get<std::string>().c_str(),
              j["flops"].get<std::string>().c_str());
  std::printf("%-10s %6s %6s", "heads", "prefix", "tokens");
  for (const std::string& k : kernels) std::printf(" %9s", k.c_str());
  std::printf(" %9s %8s %9s %8s\n", "pt-best", "ours/pt", "pt-flash", "ours/fa2");
  for (const auto& r : j["rows"]) {
    std::printf("%3d/%d/%-4d %6d %6d", r["nq"].get<int>(), r["nkv"].get<int>(), r["hd"].get<int>(),
                r["prefix"].get<int>(), r["tokens"].get<int>());
    for (const std::string& k : kernels) std::printf(" %9.1f", r["kernels"][k]["tflops"].get<double>());
    const auto& first = r["kernels"][kernels.front()];
    if (r.contains("torch_best_tflops"))
      std::printf(" %9.1f %8.2f", r["torch_best_tflops"].get<double>(), first["vs_torch_best"].get<double>());
    else
      std::printf(" %9s %8s", "-", "-");
    if (r.contains("torch_flash_tflops"))
      std::printf(" %9.1f %8.2f\n", r["torch_flash_tflops"].get<double>(), first["vs_torch_flash"].get<double>());
    else
      std::printf(" %9s %8s\n", "-", "-");
  }
}

}  // namespace

void register_bench_attention(CLI::App& bench) {
  auto o = std::make_shared<AttentionOpts>();
  CLI::App* cmd = bench.add_subcommand("attention", "extend (prefill) attention TFLOP/s, beside PyTorch SDPA");
  cmd->add_option("--device", o->device, "CUDA device")->capture_default_str();
  cmd->add_option("--tokens", o->tokens, "new tokens of the request")->capture_default_str();
  cmd->add_option("--prefixes", o->prefixes, "cached prefix lengths")->capture_default_str();
  cmd->add_option("--shapes", o->shapes, "q_heads/kv_heads/head_dim list")->capture_default_str();
  cmd->add_option("--kernels", o->kernels,
                  "GRAPHRT_EXTEND_KERNEL values to time (auto, auto-s5, fa3-wg2, fa3-ov, fa3-ws, fa3-wsnp, ...: the list "
                  "in src/ops/cuda/attention_extend_params.h)")
      ->capture_default_str();
  cmd->add_option("--iters", o->iters, "timed calls per point (event-timed mean)")->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--torch", o->torch, "JSON from scripts/bench_attention_torch.py, measured in the same job");
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->add_flag("--queued", o->queued, "time the calls queued behind a long memset (no host launch gaps)");
  cmd->add_option("--json-out", o->json_out, "also write the JSON to this file");
  cmd->callback([o] { run_attention(*o); });
}

}  // namespace grt
