#include "runtime/model_runner.h"

#include <algorithm>
#include <chrono>
#include <climits>

#include "core/logging.h"
#include "graph/capture_schedule.h"
#include "graph/split_ops.h"
#include "device/device.h"
#include "memory/caching_allocator.h"
#include "memory/tensor_alloc.h"
#include "ops/gather.h"
#include "ops/sampling.h"
#include "runtime/graph_verify.h"
#include "runtime/batch_ranges.h"
#include "runtime/forward_batch_wire.h"

namespace grt {

namespace {
// Room kept for activations and graph memory when the KV cache is sized from the budget.
constexpr double kActivationShare = 0.10;
// KV cache tokens on the CPU backend when --max-total-tokens is not given (at least one context).
constexpr int64_t kCpuDefaultKvTokens = 4096;
// --max-running-requests 0 (the default): SGLang's rule, KV tokens / context x 512 within [2048, 4096]
// (at most one request per KV slot, applied by the caller).
constexpr int64_t kMinAutoRequests = 2048;
constexpr int64_t kMaxAutoRequests = 4096;
int64_t auto_max_requests(int64_t kv_tokens, int max_context) {
  const int64_t by_kv = static_cast<int64_t>(static_cast<double>(kv_tokens) / max_context * 512.0);
  return std::clamp(by_kv, kMinAutoRequests, kMaxAutoRequests);
}

// The leader's messages to its followers: a magic word, then one command.
constexpr uint32_t kMessageMagic = 0x4d525447;  // "GTRM"
enum Command : uint8_t { kForward = 1, kForwardEager = 2, kStop = 3, kFail = 4, kNop = 5 };
constexpr double kKeepAliveSeconds = 1.0;

// piecewise_cuda_graph_max_tokens 0: the default --chunked-prefill-size.
constexpr int64_t kDefaultPiecewiseMaxTokens = 8192;
int64_t piecewise_max_tokens(const ModelRunnerOptions& opt) {
  return opt.piecewise_cuda_graph_max_tokens > 0 ? opt.piecewise_cuda_graph_max_tokens : kDefaultPiecewiseMaxTokens;
}

// What every mode's graphs take from the runner's options (breakable marks, MoE routing among
// them, split the pieces of every mode).
ForwardGraphsOptions graphs_options(const ModelRunnerOptions& opt, Communicator* comm) {
  ForwardGraphsOptions g;
  g.progress = opt.capture_progress;
  g.ascending = opt.capture_ascending;
  g.breakable = opt.breakable_cuda_graph;
  g.debug_eager = opt.debug_cuda_graph;
  g.lazy = opt.cuda_graph_lazy;
  g.comm = comm;
  return g;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

ModelRunner::ModelRunner(std::shared_ptr<const DecoderModel> model, const ModelRunnerOptions& opt)
    : comm_(opt.communicator), model_(std::move(model)) {
  const ModelConfig& c = model_->config();
  if (!comm_) comm_ = model_->communicator();
  // A sharded model's collectives run in its group: the runner's messages must go to the same ranks.
  GRT_CHECK(!model_->tp().enabled() || (comm_ && comm_->rank() == model_->tp().rank && comm_->size() == model_->tp().size),
            "the model is rank {} of a tensor-parallel group of {}, but the runner's communicator is {}",
            model_->tp().rank, model_->tp().size,
            comm_ ? fmt::format("rank {} of {}", comm_->rank(), comm_->size()) : std::string("none"));
  const Device d = model_->device();
  GRT_CHECK(opt.mem_fraction_static > 0 && opt.mem_fraction_static <= 1, "--mem-fraction-static {} is not in (0, 1]",
            opt.mem_fraction_static);
  GRT_CHECK(opt.decode_graph_extend_max_tokens >= 0,
            "--decode-graph-extend-max-tokens {} must be >= 0 (0: extends never replay decode graphs)",
            opt.decode_graph_extend_max_tokens);
  extend_rows_ = {opt.decode_graph_extend_max_tokens, kDefaultExtendRowsMaxRereads};
  GRT_CHECK(opt.max_running_requests >= 0,
            "--max-running-requests {} is not allowed: must be >= 1 (or 0: sized from the KV cache)",
            opt.max_running_requests);
  GRT_CHECK(opt.max_context >= 0, "--context-length {} is not allowed: must be >= 1 (or 0: the model's default)",
            opt.max_context);
  GRT_CHECK(opt.max_total_tokens >= 0,
            "--max-total-tokens {} is not allowed: must be >= 1 (or 0: sized from the memory budget)",
            opt.max_total_tokens);
  int max_context = opt.max_context > 0 ? opt.max_context
                                        : static_cast<int>(std::min<int64_t>(c.max_position_embeddings, 8192));
  context_reason_ = opt.max_context > 0 ? "--context-length"
                                        : fmt::format("the default min(max_position_embeddings {}, 8192)",
                                                      c.max_position_embeddings);
  GRT_CHECK(max_context <= c.max_position_embeddings, "--context-length {} exceeds the model's {} positions",
            max_context, c.max_position_embeddings);
  if (c.sliding_window > 0 && max_context > c.sliding_window) {
    // graphrt attends over the whole context: keep requests inside the model's window.
    GRT_WARN("context length {} ({}) capped at the model's sliding window {}: graphrt attends over the whole "
             "context, so longer requests are refused",
             max_context, context_reason_, c.sliding_window);
    context_reason_ = fmt::format("capped at the model's sliding_window {}", c.sliding_window);
    max_context = static_cast<int>(c.sliding_window);
  }

  const size_t total = device_total_memory(d);
  const size_t budget = static_cast<size_t>(opt.mem_fraction_static * static_cast<double>(total));
  CachingAllocator& alloc = CachingAllocator::get(d);
  const size_t held = alloc.stats().reserved;
  GRT_CHECK(held < budget, "weights take {:.2f} GiB but the budget (--mem-fraction-static {} of {:.2f} GiB) is {:.2f} GiB",
            held / 1073741824.0, opt.mem_fraction_static, total / 1073741824.0, budget / 1073741824.0);
  alloc.set_budget(budget);

  // This rank's KV heads only (replicated ones when there are fewer KV heads than ranks).
  const int64_t kv_width = model_->num_local_kv_heads() * c.head_dim;
  const size_t per_token = TokenToKVPool::bytes_per_token(c.num_hidden_layers, kv_width, model_->dtype());
  // Request rows: given, or (0) at most kMaxAutoRequests until the KV cache's size decides.
  const bool auto_requests = opt.max_running_requests == 0;
  const int64_t request_cap = auto_requests ? kMaxAutoRequests : opt.max_running_requests;
  const size_t row_bytes = ReqToTokenPool::bytes_per_request(max_context);
  int64_t slots;
  if (opt.max_total_tokens > 0) {
    GRT_CHECK(opt.max_total_tokens < INT32_MAX, "--max-total-tokens {} is not allowed: KV slots are int32 (at most {})",
              opt.max_total_tokens, INT32_MAX - 1);
    slots = opt.max_total_tokens + 1;
  } else {
    double room = static_cast<double>(budget - held) * (1.0 - kActivationShare);
    // The request table comes out of the same room (4096 rows x 128k context would be 2 GiB).
    const int64_t rows = auto_requests ? auto_max_requests(static_cast<int64_t>(room / static_cast<double>(per_token)),
                                                           max_context)
                                       : request_cap;
    room = std::max(0.0, room - static_cast<double>(rows + 1) * static_cast<double>(row_bytes));
    slots = static_cast<int64_t>(room / static_cast<double>(per_token));
    slots = std::min<int64_t>(slots, request_cap * max_context + 1);
    if (d.is_cpu()) {
      // Host RAM is not the CPU backend's to take (--mem-fraction-static of it was 17 GiB and a
      // minutes-long start for a 3-token prompt): a modest default, stated, and how to change it.
      const int64_t want = std::max<int64_t>(max_context, kCpuDefaultKvTokens) + 1;
      if (slots > want) {
        slots = want;
        GRT_INFO("KV cache on the CPU: {} token slots ({:.1f} MiB), the default max(context length {}, {}); "
                 "--max-total-tokens changes it",
                 slots - 1, static_cast<double>(slots) * static_cast<double>(per_token) / 1048576.0, max_context,
                 kCpuDefaultKvTokens);
      }
    }
    slots = std::min<int64_t>(slots, INT32_MAX);
  }
  if (tp_size() > 1) {
    // Every rank holds the same slots (rank 0 schedules for all): the smallest any rank can.
    const int64_t mine = slots;
    slots = comm_->all_reduce_min({slots})[0];
    if (slots < mine)
      GRT_INFO("KV cache: {} token slots, what every rank of the group can hold (this rank: {})", slots - 1, mine - 1);
  }
  GRT_CHECK(slots >= 2, "the memory budget leaves no room for the KV cache ({} bytes per token)", per_token);
  // Every running request holds at least one KV slot: more request slots than KV slots would only
  // cost start-up (a request table of rows x context, one decode graph per batch size).
  int max_requests = auto_requests ? static_cast<int>(std::min<int64_t>(auto_max_requests(slots - 1, max_context), slots - 1))
                                    : opt.max_running_requests;
  if (auto_requests) {
    GRT_INFO("max running requests: {} (KV cache {} token slots, context length {}; --max-running-requests changes it)",
             max_requests, slots - 1, max_context);
  } else if (max_requests > slots - 1) {
    GRT_WARN("--max-running-requests {} capped at {}: every running request holds a KV slot and the KV cache has {} "
             "(--max-total-tokens)",
             max_requests, slots - 1, slots - 1);
    max_requests = static_cast<int>(slots - 1);
  }
  req_pool_ = std::make_unique<ReqToTokenPool>(max_requests, max_context, d);
  kv_pool_ = std::make_unique<TokenToKVPool>(c.num_hidden_layers, slots, kv_width, model_->dtype(), d);

  GRT_DEBUG("KV cache: {} token slots, {:.1f} MiB; {} requests x {} context", slots - 1,
            kv_pool_->bytes() / 1048576.0, max_requests, max_context);

  graph_memory_mode_ = opt.graph_memory;
  graph_memory_budget_ = opt.graph_memory_budget;
  if (!opt.disable_cuda_graph) {
    GRT_CHECK(opt.cuda_graph_max_bs >= 0, "--cuda-graph-max-bs {} must be positive", opt.cuda_graph_max_bs);
    // As SGLang: an explicit --cuda-graph-bs list is its own cap; else --cuda-graph-max-bs or the default.
    const int asked = opt.cuda_graph_max_bs > 0  ? opt.cuda_graph_max_bs
                      : !opt.cuda_graph_bs.empty() ? *std::max_element(opt.cuda_graph_bs.begin(), opt.cuda_graph_bs.end())
                                                   : default_cuda_graph_max_bs(tp_size());
    const int cap = std::min(asked, max_requests);
    ForwardGraphsOptions go = graphs_options(opt, comm_.get());
    go.shapes = opt.cuda_graph_bs.empty() ? default_decode_batch_sizes(cap)
                                               : checked_batch_sizes(opt.cuda_graph_bs, cap, "--cuda-graph-bs");
    if (go.shapes.empty()) {
      GRT_WARN("no decode graph batch size is <= {} (--cuda-graph-bs / --cuda-graph-max-bs / "
               "--max-running-requests): decode runs eagerly", cap);
    } else {
      auto schema = decode_schema(model_, *req_pool_, *kv_pool_, go.shapes.back(), opt.graph_break_layers,
                                  opt.moe_eager_routing);
      auto memory = shared_graph_memory();
      if (go.lazy) memory->set_consolidation(false);  // no device-wide synchronize on a first hit
      decode_graphs_ = std::make_unique<ForwardGraphs>(go, std::move(schema), std::move(memory));
    }
  }
  if (!opt.disable_piecewise_cuda_graph) {
    GRT_CHECK(opt.piecewise_cuda_graph_max_tokens >= 0, "--piecewise-cuda-graph-max-tokens {} must be positive",
              opt.piecewise_cuda_graph_max_tokens);
    // An extend never holds more tokens than the KV cache or all request rows together.
    const int64_t kv_cap = std::min<int64_t>(kv_pool_->capacity(), static_cast<int64_t>(max_requests) *
                                                                        req_pool_->max_context());
    const int cap = static_cast<int>(
        std::min<int64_t>(piecewise_max_tokens(opt), kv_cap));
    if (opt.piecewise_cuda_graph_max_tokens > cap)
      GRT_WARN("--piecewise-cuda-graph-max-tokens {} capped at {}: no extend holds more tokens than the KV cache "
               "({} slots) or all request rows together",
               opt.piecewise_cuda_graph_max_tokens, cap, kv_pool_->capacity());
    ForwardGraphsOptions po = graphs_options(opt, comm_.get());
    po.shapes = opt.piecewise_cuda_graph_tokens.empty()
                          ? default_piecewise_token_counts(std::max(cap, 1))
                          : checked_token_counts(opt.piecewise_cuda_graph_tokens, cap, "--piecewise-cuda-graph-tokens");
    std::string why;
    if (po.shapes.empty()) {
      why = fmt::format("no token count is <= {} (--piecewise-cuda-graph-max-tokens, KV cache)", cap);
    } else if (!opt.enforce_piecewise_cuda_graph && !is_split_op("attention")) {
      // Extend attention sizes its launch from host values: captured, it would replay stale ones.
      why = "attention is not a split op (graph/split_ops.h), so extend attention would be captured";
    }
    if (!why.empty()) {
      GRT_WARN("piecewise graphs disabled: {}", why);
    } else {
      auto schema = extend_schema(model_, *req_pool_, *kv_pool_, po.shapes.back(),
                                  {.moe_dispatch_split_op = opt.moe_dispatch_split_op,
                                   .moe_eager_routing = opt.moe_eager_routing});
      auto memory = shared_graph_memory();
      if (po.lazy) memory->set_consolidation(false);
      piecewise_graphs_ = std::make_unique<ForwardGraphs>(po, std::move(schema), std::move(memory));
    }
  }
  GRT_CHECK(opt.full_extend_graph_max_tokens >= 0,
            "--full-extend-graph-max-tokens {} is not allowed: must be >= 0 (0: off)", opt.full_extend_graph_max_tokens);
  if (!opt.disable_piecewise_cuda_graph && opt.full_extend_graph_max_tokens > 0) {
    // One request holds every token: the context length caps the counts, as do the KV cache and the
    // piecewise graphs' cap (the same schedule).
    const int cap = static_cast<int>(std::min<int64_t>(
        {opt.full_extend_graph_max_tokens, req_pool_->max_context(), kv_pool_->capacity(), piecewise_max_tokens(opt)}));
    // Extends that decode graphs take as rows need no full graph (the rows refuse only those that
    // re-read long prefixes; these run piecewise).
    const int rows_up_to = decode_graphs_ ? std::min(extend_rows_.max_tokens, decode_graphs_->runner().max_servable()) : 0;
    ForwardGraphsOptions fo = graphs_options(opt, comm_.get());
    // The piecewise schedule's counts (--piecewise-cuda-graph-tokens when given).
    const std::vector<int> counts = opt.piecewise_cuda_graph_tokens.empty()
                                        ? default_piecewise_token_counts(std::max(cap, 1))
                                        : opt.piecewise_cuda_graph_tokens;
    for (int t : counts)
      if (t > rows_up_to && t <= cap) fo.shapes.push_back(t);
    if (opt.moe_dispatch_split_op && model_->config().is_moe()) {
      GRT_INFO("full extend graphs off: --moe-dispatch-split-op runs every MoE block eagerly between pieces");
    } else if (!fo.shapes.empty()) {
      auto schema = full_extend_schema(model_, *req_pool_, *kv_pool_, fo.shapes.back(), opt.moe_eager_routing);
      auto memory = shared_graph_memory();
      if (fo.lazy) memory->set_consolidation(false);
      full_extend_graphs_ = std::make_unique<ForwardGraphs>(fo, std::move(schema), std::move(memory));
    }
  }
  // A later capture (piecewise) may have lost earlier graphs' memory (a failed VMM remap).
  for (ForwardGraphs* g : {decode_graphs_.get(), piecewise_graphs_.get(), full_extend_graphs_.get()})
    if (g) {
      g->check_memory();
      g->agree_across_ranks();
    }
  verify_ = opt.verify_cuda_graph;
  if (verify_) verify_cuda_graphs();
  // From here on the leader's slot changes are its scheduler's, which the followers replay; what
  // came before, every rank did by itself.
  if (leads_group()) {
    journal_ = std::make_unique<PoolJournal>();
    req_pool_->set_journal(journal_.get());
    kv_pool_->set_journal(journal_.get());
  }
}

ForwardGraphs* ModelRunner::graphs(ForwardMode mode) {
  if (mode == ForwardMode::DECODE) return decode_graphs_.get();
  if (mode == ForwardMode::EXTEND) return piecewise_graphs_.get();
  return nullptr;
}

ModelRunner::~ModelRunner() {
  try {
    stop_followers();
  } catch (const std::exception& e) {
    GRT_ERROR("stopping the other ranks of the tensor-parallel group failed: {}", e.what());
  }
}

void ModelRunner::verify_cuda_graphs() {
  // Every rank verifies the same seeded batches on the same slots by itself: no slot changes to send.
  PoolJournal::Pause pause(journal_.get());
  for (ForwardGraphs* g : {decode_graphs_.get(), piecewise_graphs_.get(), full_extend_graphs_.get()})
    if (g) {
      verify_forward_graphs(*this, *g);
      g->agree_across_ranks();
    }
}

void ModelRunner::verify_lazy(ForwardGraphs& graphs, int shape) {
  PoolJournal::Pause pause(journal_.get());
  verify_forward_graphs(*this, graphs, shape);
  graphs.agree_across_ranks();
}

std::shared_ptr<const GraphMemory> ModelRunner::shared_graph_memory() {
  if (!graph_memory_) {
    // VMM chunks are not counted by the caching allocator: give them what its budget leaves.
    CachingAllocator& alloc = CachingAllocator::get(device());
    const size_t budget = alloc.budget(), held = alloc.stats().reserved;
    size_t vmm_budget = budget == 0 ? 0 : budget > held ? budget - held : 1;
    if (graph_memory_budget_ > 0) vmm_budget = graph_memory_budget_;
    graph_memory_ = std::make_shared<GraphMemory>(device(), graph_memory_mode_, vmm_budget);
  }
  return graph_memory_;
}

void ModelRunner::check_batch(const ForwardBatch& batch) const {
  batch.validate();
  check_batch_ranges(batch, model_->config().vocab_size, *req_pool_, *kv_pool_);
}

void ModelRunner::send_to_followers(uint8_t command, const ForwardBatch* batch, const std::string& error) {
  std::vector<uint8_t> bytes;
  ByteWriter w(bytes);
  w.put<uint32_t>(kMessageMagic);
  w.put<uint8_t>(command);
  if (journal_) {
    journal_->take(w);
  } else {
    PoolJournal().take(w);  // none yet: an empty one
  }
  if (batch) encode_forward_batch(*batch, w);
  if (command == kFail) w.put_string(error);
  last_sent_ = now_seconds();
  try {
    comm_->broadcast_bytes(bytes, 0);
  } catch (const Error& e) {
    followers_stopped_ = true;  // the group is broken: nothing more reaches them
    throw e.with_context("rank 0 sending the next step to the other ranks of the tensor-parallel group");
  }
}

void ModelRunner::stop_followers(const std::string& error) {
  if (!leads_group() || followers_stopped_) return;
  followers_stopped_ = true;
  send_to_followers(error.empty() ? kStop : kFail, nullptr, error);
}

void ModelRunner::keep_alive() {
  if (!leads_group() || followers_stopped_ || now_seconds() - last_sent_ < kKeepAliveSeconds) return;
  send_to_followers(kNop, nullptr, "");
}

void ModelRunner::follow() {
  GRT_CHECK(comm_ && comm_->size() > 1 && comm_->rank() > 0,
            "follow() is for ranks > 0 of a tensor-parallel group (this is rank {} of {})", tp_rank(), tp_size());
  for (uint64_t step = 0;; ++step) {
    std::vector<uint8_t> bytes;
    try {
      comm_->broadcast_bytes(bytes, 0);
    } catch (const Error& e) {
      throw e.with_context(fmt::format("rank {} waiting for rank 0's step {}", tp_rank(), step));
    }
    ByteReader r(bytes, "rank 0's message");
    GRT_CHECK(r.get<uint32_t>("magic") == kMessageMagic, "rank {}: step {} from rank 0 is not a runner message",
              tp_rank(), step);
    const auto command = r.get<uint8_t>("command");
    PoolJournal::apply(r, *req_pool_, *kv_pool_);
    switch (command) {
      case kForward:
      case kForwardEager: {
        const ForwardBatch batch = decode_forward_batch(r);
        try {
          check_batch(batch);
          (void)(command == kForward ? dispatch(batch) : run_eager(batch));
        } catch (const Error& e) {
          throw e.with_context(fmt::format("rank {} running rank 0's step {} ({} of {} tokens)", tp_rank(), step,
                                           forward_mode_name(batch.mode), batch.num_tokens()));
        }
        break;
      }
      case kNop: break;
      case kStop: return;
      case kFail: GRT_FAIL("rank 0 stopped the tensor-parallel group with an error: {}", r.get_string("error"));
      default: GRT_FAIL("rank {}: step {} from rank 0 has command {}, not one (1..5)", tp_rank(), step, command);
    }
  }
}

Tensor ModelRunner::forward(const ForwardBatch& batch) {
  GRT_CHECK(is_leader(), "forward() on rank {} of the tensor-parallel group: ranks > 0 only follow() rank 0",
            tp_rank());
  check_batch(batch);
  if (leads_group()) send_to_followers(kForward, &batch, "");
  return dispatch(batch);
}

std::string ModelRunner::extend_rows_refusal(const ForwardBatch& batch) const {
  if (!decode_graphs_) return "decode graphs are off";
  std::string why = grt::extend_rows_refusal(batch, extend_rows_);
  if (why.empty()) why = decode_graphs_->refusal(extend_as_decode_rows(batch));
  return why;
}

Tensor ModelRunner::dispatch(const ForwardBatch& batch) {
  if (decode_graphs_ && batch.mode == ForwardMode::EXTEND && grt::extend_rows_refusal(batch, extend_rows_).empty()) {
    const ForwardBatch rows = extend_as_decode_rows(batch);
    if (const int fresh = decode_graphs_->prepare(rows); fresh > 0 && verify_) verify_lazy(*decode_graphs_, fresh);
    const std::string why = decode_graphs_->refusal(rows);
    if (why.empty()) {
      ++extend_row_steps_;
      return decode_graphs_->forward(rows);
    }
    GRT_DEBUG("extend of {} tokens does not run as decode rows: {}", batch.num_tokens(), why);
  }
  if (decode_graphs_ && batch.mode == ForwardMode::DECODE) {
    if (const int fresh = decode_graphs_->prepare(batch); fresh > 0 && verify_) verify_lazy(*decode_graphs_, fresh);
    const std::string why = decode_graphs_->refusal(batch);
    if (why.empty()) return decode_graphs_->forward(batch);
    GRT_DEBUG("decode step of {} requests runs eagerly: {}", batch.batch_size(), why);
  }
  // One request only (the schema's refusal says so); checked first so that a lazy runner never
  // captures a full graph for a batch it would refuse.
  if (full_extend_graphs_ && batch.mode == ForwardMode::EXTEND && batch.batch_size() == 1) {
    if (const int fresh = full_extend_graphs_->prepare(batch); fresh > 0 && verify_)
      verify_lazy(*full_extend_graphs_, fresh);
    const std::string why = full_extend_graphs_->refusal(batch);
    if (why.empty()) return full_extend_graphs_->forward(batch);
    GRT_DEBUG("extend of {} tokens does not run on a full extend graph: {}", batch.num_tokens(), why);
  }
  if (piecewise_graphs_ && batch.mode == ForwardMode::EXTEND) {
    if (const int fresh = piecewise_graphs_->prepare(batch); fresh > 0 && verify_)
      verify_lazy(*piecewise_graphs_, fresh);
    const std::string why = piecewise_graphs_->refusal(batch);
    if (why.empty()) return piecewise_graphs_->forward(batch);
    GRT_DEBUG("extend of {} tokens runs eagerly: {}", batch.num_tokens(), why);
  }
  return run_eager(batch);
}

Tensor ModelRunner::forward_eager(const ForwardBatch& batch) {
  GRT_CHECK(is_leader(), "forward_eager() on rank {} of the tensor-parallel group: ranks > 0 only follow() rank 0",
            tp_rank());
  check_batch(batch);
  if (leads_group()) send_to_followers(kForwardEager, &batch, "");
  return run_eager(batch);
}

Tensor ModelRunner::forward_eager_local(const ForwardBatch& batch) {
  check_batch(batch);
  return run_eager(batch);
}

Tensor ModelRunner::run_eager(const ForwardBatch& batch) {
  ForwardInputs in = upload_inputs(batch, req_pool_->table(), kv_pool_->layers(), device());
  // Every upload before the forward is enqueued: on CUDA an upload waits for the stream, so one
  // after it would block the host until the forward ran (no overlap with the next step's planning).
  const std::vector<int32_t> rows = batch.logit_rows();
  Tensor idx;
  if (!rows.empty()) idx = from_vector(rows, Shape{static_cast<int64_t>(rows.size())}, DType::I32, device());
  Tensor hidden = model_->forward(in);
  if (rows.empty()) return Tensor();
  return model_->logits(ops::gather_rows(hidden, idx));
}

std::vector<int32_t> ModelRunner::sample(const ForwardBatch& batch, const Tensor& logits) {
  const size_t n = batch.logit_requests.size();
  if (n == 0) return {};
  GRT_CHECK(logits.defined() && logits.size(0) == static_cast<int64_t>(n), "sampling {} requests from logits {}", n,
            logits.str());
  bool greedy = true;
  std::vector<float> temp(n), top_p(n);
  std::vector<int32_t> top_k(n), step(n);
  std::vector<int64_t> seed(n);
  for (size_t i = 0; i < n; ++i) {
    size_t r = static_cast<size_t>(batch.logit_requests[i]);
    GRT_CHECK(r < batch.sampling.size() && r < batch.sample_steps.size(),
              "sampling: logit request {} of a batch of {} requests", r, batch.sampling.size());
    const SamplingParams& p = batch.sampling[r];
    try {
      p.validate();
    } catch (const Error& e) {
      throw e.with_context(fmt::format("sampling request {}", r));
    }
    temp[i] = p.temperature;
    top_k[i] = p.top_k;
    top_p[i] = p.top_p;
    seed[i] = static_cast<int64_t>(p.seed);
    step[i] = batch.sample_steps[r];
    greedy = greedy && p.greedy();
  }
  Tensor ids;
  if (greedy) {
    ids = ops::argmax(logits);
  } else {
    Device d = device();
    Shape s{static_cast<int64_t>(n)};
    ops::SamplingTensors st{from_vector(temp, s, DType::F32, d), from_vector(top_k, s, DType::I32, d),
                            from_vector(top_p, s, DType::F32, d), from_vector(seed, s, DType::I64, d),
                            from_vector(step, s, DType::I32, d)};
    ids = ops::sample(logits, st);
  }
  return to_host_vector<int32_t>(ids);
}

}  // namespace grt
