#include "cli/server_args.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/logging.h"
#include "device/device.h"
#include "model/model_loader.h"

namespace grt {

const CLI::Validator& not_negative() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        return !text.empty() && text.front() == '-' ? "'" + text + "' is negative: must be >= 0" : std::string();
      },
      "NOT NEGATIVE");
  return v;
}

void ServerArgs::add_to(CLI::App& app) {
  app.add_option("--model-path,--model", model, "Hugging Face model folder, or builtin:<preset> (tiny, qwen3-0.6b, llama-3.1-8b)")
      ->capture_default_str();
  app.add_option("--device", device, "cpu, cuda or cuda:N (default: cuda:0 when a GPU is usable)");
  app.add_option("--dtype", dtype, "run dtype: f32, bf16, f16 (default: bf16 on CUDA, f32 on CPU)");
  app.add_option("--seed", seed, "seed of builtin random weights")->check(not_negative())->capture_default_str();
  app.add_option("--mem-fraction-static", mem_fraction_static,
                 "share of device memory for weights, KV cache and graphs")
      ->capture_default_str();
  app.add_option("--max-running-requests", max_running_requests,
                 "request slots (default 0: as SGLang, KV cache tokens / context length x 512 within [2048, 4096], "
                 "at most the KV tokens)");
  app.add_option("--context-length", context_length, "tokens per request (default min(model, 8192))");
  app.add_option("--max-total-tokens", max_total_tokens, "KV cache token slots (default: from the memory budget)");
  app.add_option("--chunked-prefill-size", chunked_prefill_size, "most prompt tokens prefilled per step")
      ->capture_default_str();
  app.add_flag("--disable-cuda-graph", disable_cuda_graph, "run decode eagerly (no decode graphs)");
  app.add_option("--cuda-graph-bs", cuda_graph_bs,
                 "decode batch sizes to capture, e.g. 1,2,4,8 (default: 1, 2, 4, 8, 12, then every 8 to 256, "
                 "then every 16)")
      ->delimiter(',');
  app.add_option("--cuda-graph-max-bs", cuda_graph_max_bs,
                 "largest decode batch size to capture (default 0: 256, or 512 with --tp-size >= 4, as SGLang on "
                 "H100/H200; with --cuda-graph-bs: its largest; at most --max-running-requests); larger batches decode "
                 "eagerly");
  app.add_flag("--debug-cuda-graph", debug_cuda_graph,
               "run the whole decode and piecewise prefill forward eagerly through the graph capture/replay path "
               "(debugging)");
  app.add_flag("--verify-cuda-graph", verify_cuda_graph,
               "after capture, replay every captured shape once on a random batch against the eager forward; a "
               "shape that differs runs eagerly (warning)");
  app.add_flag("--cuda-graph-lazy", cuda_graph_lazy,
               "capture each decode batch size / piecewise token count the first time a batch needs it, not at "
               "start");
  app.add_flag("--disable-piecewise-cuda-graph", disable_piecewise_cuda_graph,
               "run extend/prefill eagerly (no piecewise graphs)");
  app.add_flag("--enforce-piecewise-cuda-graph", enforce_piecewise_cuda_graph,
               "capture piecewise graphs even where auto-disable checks say no (testing only)");
  app.add_option("--piecewise-cuda-graph-max-tokens", piecewise_cuda_graph_max_tokens,
                 "largest token count to capture (default: --chunked-prefill-size; 512 on the CPU backend)");
  app.add_option("--piecewise-cuda-graph-tokens", piecewise_cuda_graph_tokens,
                 "token counts to capture, ascending, e.g. 4,8,16 (default: 4-32 step 4, 48-256 step 16, 288-512 "
                 "step 32, 576-1024 step 64, 1280-4096 step 256, then step 512)")
      ->delimiter(',');
  app.add_option("--decode-graph-extend-max-tokens", decode_graph_extend_max_tokens,
                 "extends (prompts, chunks, mixed steps) of at most this many tokens replay a decode graph with one "
                 "row per token, when their rows re-read at most 4096 cached positions (each row reads its request's prefix) (0: off; others take the "
                 "piecewise graphs)")
      ->capture_default_str();
  app.add_option("--full-extend-graph-max-tokens", full_extend_graph_max_tokens,
                 "extends of one request (a prompt, a chunk after a cached prefix) of at most this many tokens "
                 "replay one graph with the attention captured in it, instead of a piecewise graph with the "
                 "attention eager between pieces (0: off; off with --disable-piecewise-cuda-graph; extends that "
                 "replay decode graphs as rows keep doing so)")
      ->capture_default_str();
  app.add_flag("--moe-dispatch-split-op", moe_dispatch_split_op,
               "MoE models: make each MoE block a split op of piecewise graphs (run eagerly between pieces, as "
               "SGLang splits at MoE dispatch) instead of capturing it inside them");
  app.add_option("--graph-memory", graph_memory,
                 "graph memory: pool (one pool shared by every capture) or vmm (a virtual space per capture "
                 "over shared physical pages: max(shape), not sum)")
      ->capture_default_str();
  app.add_option("--graph-memory-budget", graph_memory_budget,
                 "most physical graph memory in vmm mode, e.g. 512MiB (0: no limit); a capture that needs more "
                 "runs that shape and larger ones eagerly")
      ->check(not_negative())
      ->transform(CLI::AsSizeValue(false));
  app.add_flag("--enable-mixed-chunk", enable_mixed_chunk,
               "run a prefill chunk and the running decodes in one forward (MIXED, on the piecewise graphs)");
  app.add_option("--max-queued-requests", max_queued_requests,
                 "requests queued or running before new ones get 503 (0: no limit)")
      ->capture_default_str();
  app.add_option("--tp-size,--tp", tp_size,
                 "tensor-parallel ranks (processes, one per GPU); on one node graphrt starts them itself")
      ->capture_default_str();
  app.add_option("--base-gpu-id", base_gpu_id, "the GPU of the node's first rank (ranks take consecutive GPUs)")
      ->capture_default_str();
  app.add_option("--dist-init-addr", dist_init_addr,
                 "host:port where rank 0 meets the other ranks (default: 127.0.0.1 and a free port; needed with "
                 "--nnodes > 1)");
  app.add_option("--nnodes", nnodes, "nodes the --tp-size ranks are spread over (ranks per node: tp / nnodes)")
      ->capture_default_str();
  app.add_option("--node-rank", node_rank, "this node's index, 0 .. nnodes-1 (node 0 holds rank 0)")
      ->capture_default_str();
  app.add_option("--dist-timeout", dist_timeout,
                 "seconds a rank waits for the others (joining, a collective) before the group fails")
      ->capture_default_str();
}

namespace {
// GRAPHRT_USE_BREAKABLE_CUDA_GRAPH=1 (SGLang: SGLANG_USE_BREAKABLE_CUDA_GRAPH): eager_on_graph and
// break_graph split decode graphs.
bool breakable_from_env() {
  const char* v = std::getenv("GRAPHRT_USE_BREAKABLE_CUDA_GRAPH");
  if (!v || !*v || std::string(v) == "0") return false;
  GRT_CHECK(std::string(v) == "1", "GRAPHRT_USE_BREAKABLE_CUDA_GRAPH must be 0 or 1, got '{}'", v);
  return true;
}
}  // namespace

namespace {
// A batch-size or token-count list: every value positive (else an Error naming the flag and the
// value); given in any order or with repeats, it is sorted and deduplicated with one warning, so
// --cuda-graph-bs and --piecewise-cuda-graph-tokens behave alike.
std::vector<int> normalized_list(const std::vector<int>& values, const char* flag, bool warn) {
  for (int v : values) GRT_CHECK(v > 0, "{} {}: every value must be a positive integer, got {}", flag,
                                 fmt::format("{}", fmt::join(values, ",")), v);
  std::vector<int> out = values;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (warn && out != values)
    GRT_WARN("{} {}: sorted and duplicates removed, using {}", flag, fmt::format("{}", fmt::join(values, ",")),
             fmt::format("{}", fmt::join(out, ",")));
  return out;
}
}  // namespace

void ServerArgs::check() const {
  GRT_CHECK(mem_fraction_static > 0 && mem_fraction_static <= 1,
            "--mem-fraction-static {} is not allowed: must be in (0, 1]", mem_fraction_static);
  GRT_CHECK(max_running_requests >= 0,
            "--max-running-requests {} is not allowed: must be >= 1 (or 0: sized from the KV cache)",
            max_running_requests);
  GRT_CHECK(context_length >= 0, "--context-length {} is not allowed: must be >= 1 (or 0: the model's default)",
            context_length);
  GRT_CHECK(max_total_tokens >= 0,
            "--max-total-tokens {} is not allowed: must be >= 1 (or 0: sized from the memory budget)",
            max_total_tokens);
  GRT_CHECK(chunked_prefill_size > 0, "--chunked-prefill-size {} is not allowed: must be >= 1", chunked_prefill_size);
  GRT_CHECK(cuda_graph_max_bs >= 0, "--cuda-graph-max-bs {} is not allowed: must be >= 1 (or 0: the default)",
            cuda_graph_max_bs);
  GRT_CHECK(piecewise_cuda_graph_max_tokens >= 0,
            "--piecewise-cuda-graph-max-tokens {} is not allowed: must be >= 1 (or 0: the default)",
            piecewise_cuda_graph_max_tokens);
  GRT_CHECK(decode_graph_extend_max_tokens >= 0,
            "--decode-graph-extend-max-tokens {} is not allowed: must be >= 0 (0: off)", decode_graph_extend_max_tokens);
  GRT_CHECK(full_extend_graph_max_tokens >= 0,
            "--full-extend-graph-max-tokens {} is not allowed: must be >= 0 (0: off)", full_extend_graph_max_tokens);
  parse_graph_memory_mode(graph_memory);
  GRT_CHECK(!(enforce_piecewise_cuda_graph && disable_piecewise_cuda_graph),
            "--enforce-piecewise-cuda-graph and --disable-piecewise-cuda-graph contradict each other: give one");
  GRT_CHECK(graph_memory_budget == 0 || graph_memory == "vmm",
            "--graph-memory-budget {} applies to --graph-memory vmm only, but --graph-memory is {}",
            graph_memory_budget, graph_memory);
  normalized_list(cuda_graph_bs, "--cuda-graph-bs", false);
  normalized_list(piecewise_cuda_graph_tokens, "--piecewise-cuda-graph-tokens", false);
  check_tensor_parallel();
}

TpGroupOptions ServerArgs::tp_group_options() const {
  TpGroupOptions o;
  o.tp_size = tp_size;
  o.base_gpu_id = base_gpu_id;
  o.dist_init_addr = dist_init_addr;
  o.dist_timeout = dist_timeout;
  o.nnodes = nnodes;
  o.node_rank = node_rank;
  return o;
}

void ServerArgs::check_tensor_parallel() const {
  check_tp_group_options(tp_group_options());
  GRT_CHECK(std::isfinite(dist_timeout), "--dist-timeout must be a finite number of seconds, got {}", dist_timeout);
  if (!dist_init_addr.empty()) {
    const size_t colon = dist_init_addr.rfind(':');
    int port = -1;
    if (colon != std::string::npos && colon > 0) {
      const char* b = dist_init_addr.data() + colon + 1;
      const char* e = dist_init_addr.data() + dist_init_addr.size();
      auto [p, ec] = std::from_chars(b, e, port);
      if (ec != std::errc() || p != e) port = -1;
    }
    GRT_CHECK(port >= 0 && port < 65536, "--dist-init-addr '{}' is not allowed: must be host:port (port 0..65535)",
              dist_init_addr);
  }
  if (tp_size > 1) {
    // A rank's GPU comes from --base-gpu-id and its local rank; cuda:N would put every rank on N.
    GRT_CHECK(device.empty() || device == "cpu" || device == "cuda",
              "--device {} with --tp-size {}: give cpu or cuda; ranks take GPUs base-gpu-id .. base-gpu-id + {} "
              "(--base-gpu-id)",
              device, tp_size, tp_size / nnodes - 1);
  }
}

void ServerArgs::warn_no_effect() const {
  if (debug_cuda_graph && disable_cuda_graph) GRT_WARN("--debug-cuda-graph has no effect with --disable-cuda-graph");
  if (disable_cuda_graph && (!cuda_graph_bs.empty() || cuda_graph_max_bs > 0))
    GRT_WARN("--cuda-graph-bs / --cuda-graph-max-bs have no effect with --disable-cuda-graph");
  if (disable_cuda_graph && decode_graph_extend_max_tokens != kDefaultExtendRowsMaxTokens)
    GRT_WARN("--decode-graph-extend-max-tokens has no effect with --disable-cuda-graph (extends replay decode graphs)");
  if (disable_piecewise_cuda_graph && (!piecewise_cuda_graph_tokens.empty() || piecewise_cuda_graph_max_tokens > 0))
    GRT_WARN("--piecewise-cuda-graph-tokens / --piecewise-cuda-graph-max-tokens have no effect with "
             "--disable-piecewise-cuda-graph");
  if (disable_piecewise_cuda_graph && full_extend_graph_max_tokens != kDefaultFullExtendGraphMaxTokens)
    GRT_WARN("--full-extend-graph-max-tokens has no effect with --disable-piecewise-cuda-graph (extends run eagerly)");
}

Device ServerArgs::resolved_device() const {
  Device d;
  try {
    d = device.empty() ? default_device() : Device::parse(device);
  } catch (const Error& e) {
    throw e.with_context("--device " + device);
  }
  check_device(d);
  return d;
}

DType ServerArgs::resolved_dtype(Device d) const {
  if (dtype.empty()) return d.is_cuda() ? DType::BF16 : DType::F32;
  DType dt;
  try {
    dt = parse_dtype(dtype);
  } catch (const Error& e) {
    throw e.with_context("--dtype " + dtype);
  }
  GRT_CHECK(is_floating(dt), "--dtype {} is not a floating type", dtype);
  GRT_CHECK(d.is_cuda() || dt == DType::F32, "--dtype {}: the CPU backend runs float32 only", dtype);
  return dt;
}

ModelRunnerOptions ServerArgs::runner_options() const {
  check();
  ModelRunnerOptions o;
  o.mem_fraction_static = mem_fraction_static;
  o.max_running_requests = max_running_requests;
  o.max_context = context_length;
  o.max_total_tokens = max_total_tokens;
  o.disable_cuda_graph = disable_cuda_graph;
  warn_no_effect();
  o.cuda_graph_bs = normalized_list(cuda_graph_bs, "--cuda-graph-bs", true);
  o.piecewise_cuda_graph_tokens = normalized_list(piecewise_cuda_graph_tokens, "--piecewise-cuda-graph-tokens", true);
  o.cuda_graph_max_bs = cuda_graph_max_bs;
  o.debug_cuda_graph = debug_cuda_graph;
  o.verify_cuda_graph = verify_cuda_graph;
  o.cuda_graph_lazy = cuda_graph_lazy;
  o.graph_memory = parse_graph_memory_mode(graph_memory);
  o.graph_memory_budget = static_cast<size_t>(graph_memory_budget);
  o.disable_piecewise_cuda_graph = disable_piecewise_cuda_graph;
  o.enforce_piecewise_cuda_graph = enforce_piecewise_cuda_graph;
  o.moe_dispatch_split_op = moe_dispatch_split_op;
  o.piecewise_cuda_graph_max_tokens = piecewise_cuda_graph_max_tokens;
  o.decode_graph_extend_max_tokens = decode_graph_extend_max_tokens;
  o.full_extend_graph_max_tokens = full_extend_graph_max_tokens;  // capped by the runner (context, piecewise cap)
  if (o.piecewise_cuda_graph_max_tokens > chunked_prefill_size) {
    // No extend step holds more than --chunked-prefill-size tokens, so larger graphs would never
    // replay; capturing them was an unbounded start-up (3x per doubling on the CPU backend).
    GRT_WARN("--piecewise-cuda-graph-max-tokens {} capped at --chunked-prefill-size {}: no extend step holds more "
             "tokens",
             piecewise_cuda_graph_max_tokens, chunked_prefill_size);
    o.piecewise_cuda_graph_max_tokens = chunked_prefill_size;
  }
  if (o.piecewise_cuda_graph_max_tokens == 0) {
    // The CPU backend exists to test graph logic; its float32 attention is quadratic in tokens,
    // so capturing thousands of tokens there would take tens of seconds at start-up.
    o.piecewise_cuda_graph_max_tokens = resolved_device().is_cpu() ? std::min(512, chunked_prefill_size)
                                                                   : chunked_prefill_size;
  }
  o.breakable_cuda_graph = breakable_from_env();
  return o;
}

EngineOptions ServerArgs::engine_options() const {
  EngineOptions o;
  o.chunked_prefill_size = chunked_prefill_size;
  return o;
}

SchedulerOptions ServerArgs::scheduler_options() const {
  SchedulerOptions o;
  o.chunked_prefill_size = chunked_prefill_size;
  o.enable_mixed_chunk = enable_mixed_chunk;
  o.max_queued_requests = max_queued_requests;
  return o;
}

std::vector<int32_t> eos_token_ids_of(const std::string& model) {
  if (model.rfind("builtin:", 0) == 0) {
#if __has_include("text/builtin_tokenizer.h")
    // As the generation_config.json make-model writes: <|im_end|>, <|endoftext|> (the builtin
    // tokenizer's last and third-to-last ids).
    const int32_t v = load_model_config(model).vocab_size;
    return {v - 1, v - 3};
#else
    return {};
#endif
  }
  for (const char* name : {"generation_config.json", "config.json"}) {
    const std::filesystem::path p = std::filesystem::path(model) / name;
    if (!std::filesystem::exists(p)) continue;
    std::ifstream f(p);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(f);
    } catch (const std::exception& e) {
      GRT_FAIL("reading eos_token_id: {} is not valid JSON: {}", p.string(), e.what());
    }
    if (!j.contains("eos_token_id") || j["eos_token_id"].is_null()) continue;
    const auto& e = j["eos_token_id"];
    std::vector<int32_t> ids;
    if (e.is_number_integer()) ids.push_back(e.get<int32_t>());
    else if (e.is_array())
      for (const auto& x : e) {
        GRT_CHECK(x.is_number_integer(), "{}: eos_token_id entry {} is not an id", p.string(), x.dump());
        ids.push_back(x.get<int32_t>());
      }
    else GRT_FAIL("{}: eos_token_id {} is not an id or a list of ids", p.string(), e.dump());
    return ids;
  }
  return {};
}

std::unique_ptr<ModelRunner> make_runner(const ServerArgs& args) {
  args.check();  // flags first: a bad flag is refused before minutes of loading
  return make_runner(args, nullptr, args.resolved_device());
}

std::unique_ptr<ModelRunner> make_runner(const ServerArgs& args, std::shared_ptr<Communicator> comm, Device d) {
  args.check();
  ModelRunnerOptions ro = args.runner_options();
  ro.communicator = comm;
  if (comm && comm->rank() > 0) ro.capture_progress = false;  // one progress bar: rank 0's
  return std::make_unique<ModelRunner>(load_model_for(args, comm, d, ro.max_context), ro);
}

std::shared_ptr<DecoderModel> load_model_for(const ServerArgs& args, const std::shared_ptr<Communicator>& comm,
                                             Device d, int64_t max_context) {
  TensorParallel tp;
  if (comm) tp = {comm->rank(), comm->size()};
  return load_model(args.model, d, args.resolved_dtype(d), args.seed, max_context, tp, comm);
}

std::vector<int32_t> parse_token_ids(const std::string& text) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string_view item(text.data() + pos, comma - pos);
    int32_t v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    GRT_CHECK(!item.empty() && ec == std::errc() && p == item.data() + item.size(),
              "'{}' in --token-ids '{}' is not a token id", item, text);
    ids.push_back(v);
    pos = comma + 1;
  }
  return ids;
}

}  // namespace grt
