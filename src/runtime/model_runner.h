// ModelRunner: owns the model's KV cache and runs forward passes (seed 002). forward() is the
// one dispatch point: decode graph (decodes, small extends as rows) → full extend graph (an extend
// of one request) → piecewise graph → eager forward, as each is available.
//
// Tensor parallel (issue 16; options.communicator of size N > 1): every rank builds a runner on
// its model shard. Rank 0 (the leader) schedules: its forward() / forward_eager() first send the
// batch, with the request/KV slot changes made since the last one (pool_journal.h), to the other
// ranks, which run follow() — receive, replay the slot changes, run the same forward, repeat —
// until the leader's stop_followers() (its destructor calls it). Every rank then issues the same
// collectives in the same order. What every rank does identically by itself (capture at start,
// verification with seeded random batches) sends nothing; graphs are captured and retired in
// lockstep (forward_graphs.h). Only the leader samples (the model gathers logits to every rank).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "device/communicator.h"
#include "model/decoder_model.h"
#include "runtime/extend_rows.h"
#include "runtime/forward_batch.h"
#include "runtime/forward_graphs.h"
#include "runtime/kv_cache.h"
#include "runtime/pool_journal.h"

namespace grt {

// The default of --full-extend-graph-max-tokens. Measured on an H100 (bench/results/
// h100_2026-11-26_session36, one interleaved run each): qwen3-0.6b prefill 80..1024 tokens 0.15-0.19 ms
// under the piecewise graphs (256: 1.66 -> 1.47 ms), llama-3.1-8b 0.20-0.52 ms; the 28 counts above the
// decode rows up to 1024 capture in 0.07 / 0.10 s. Above 1024 the gain is ~1% of the step and the counts
// to 4096 would take another 0.04 / 0.12 s of capture.
inline constexpr int kDefaultFullExtendGraphMaxTokens = 1024;

struct ModelRunnerOptions {
  double mem_fraction_static = 0.88;  // share of device memory for weights + KV cache + graphs
  // Request slots; 0: as SGLang, from the KV cache: KV tokens / context x 512 within [2048, 4096],
  // at most one request per KV token (requests_cap() says what was chosen).
  int max_running_requests = 0;
  int max_context = 0;                // tokens per request; 0: min(max_position_embeddings, 8192)
  int64_t max_total_tokens = 0;       // KV slots; 0: as many as the memory budget allows
  // Decode graphs (seed 002): on unless disabled; batch sizes from `cuda_graph_bs` or the default
  // schedule, capped by cuda_graph_max_bs (0: default_cuda_graph_max_bs) and the request slots.
  // Larger decode batches run eagerly (as SGLang beyond its cuda_graph_max_bs).
  bool disable_cuda_graph = false;
  std::vector<int> cuda_graph_bs;
  int cuda_graph_max_bs = 0;
  bool capture_progress = true;  // progress bar while capturing
  // Breakable decode graphs (seed 003): eager_on_graph / break_graph split the capture
  // (GRAPHRT_USE_BREAKABLE_CUDA_GRAPH=1); debug: the whole forward runs eagerly through the
  // capture/replay path (--debug-cuda-graph).
  bool breakable_cuda_graph = false;
  bool debug_cuda_graph = false;
  // Layers after which the model calls break_graph() (for measuring the cost of breaks).
  std::vector<int> graph_break_layers;
  // Piecewise graphs for extend (seeds 000/001): on unless disabled or auto-disabled (reason
  // logged; `enforce` skips those checks). Token counts from `piecewise_cuda_graph_tokens` or the
  // default schedule, capped by piecewise_cuda_graph_max_tokens (0: 8192, the default
  // --chunked-prefill-size) and by the KV cache.
  bool disable_piecewise_cuda_graph = false;
  bool enforce_piecewise_cuda_graph = false;
  int piecewise_cuda_graph_max_tokens = 0;
  std::vector<int> piecewise_cuda_graph_tokens;
  // Extends (prompts, chunks, mixed steps) of at most this many tokens, whose rows re-read at most
  // kDefaultExtendRowsMaxRereads cached positions, replay a decode graph with one row per token
  // (runtime/extend_rows.h; --decode-graph-extend-max-tokens; 0: off, every extend takes the
  // piecewise graphs). Needs decode graphs of that batch size; others go on to piecewise graphs.
  int decode_graph_extend_max_tokens = kDefaultExtendRowsMaxTokens;
  // Full extend graphs (graph_input_schema.h's full_extend_schema): an extend of one request of at
  // most this many tokens replays one graph with its attention captured, instead of a piecewise
  // graph with the attention eager between pieces (--full-extend-graph-max-tokens; 0: off; off
  // with disable_piecewise_cuda_graph too). Token counts: the piecewise schedule's
  // (piecewise_cuda_graph_tokens when given, which were checked there) up to it (and
  // the context length and piecewise_cuda_graph_max_tokens), above decode_graph_extend_max_tokens
  // while decode graphs take those extends as rows.
  int full_extend_graph_max_tokens = kDefaultFullExtendGraphMaxTokens;
  // MoE models: each MoE block is a split op of piecewise graphs (--moe-dispatch-split-op).
  bool moe_dispatch_split_op = false;
  // MoE routing is a breakable mark (eager_on_graph) in decode and piecewise graphs: with
  // breakable_cuda_graph it runs eagerly between segments inside each sparse layer (tests, bench).
  bool moe_eager_routing = false;
  // Where graphs keep their memory (--graph-memory): one shared pool, or VMM spaces.
  GraphMemoryMode graph_memory = GraphMemoryMode::kPool;
  // Physical bytes VMM graph memory may take (0: what the memory budget leaves after weights and
  // KV cache).
  size_t graph_memory_budget = 0;
  // Capture smallest shapes first (benchmarks measure what descending order saves).
  bool capture_ascending = false;
  // --verify-cuda-graph: after capture, replay every shape once on a random valid batch and
  // compare with the eager forward (graph_verify.h); a shape that differs is retired.
  bool verify_cuda_graph = false;
  // --cuda-graph-lazy: capture a decode batch size / piecewise token count of the schedule the
  // first time a batch needs it, instead of all at start.
  bool cuda_graph_lazy = false;
  // This rank's communicator of the tensor-parallel group (null: the model's, DecoderModel::
  // communicator(); null or size 1 there too: no tensor parallelism). The model must be this
  // rank's shard of the same group.
  std::shared_ptr<Communicator> communicator;
};

class ModelRunner {
 public:
  ModelRunner(std::shared_ptr<const DecoderModel> model, const ModelRunnerOptions& options);
  // The leader stops its followers (stop_followers; errors are logged, never thrown).
  ~ModelRunner();
  ModelRunner(const ModelRunner&) = delete;
  ModelRunner& operator=(const ModelRunner&) = delete;

  const DecoderModel& model() const { return *model_; }
  Device device() const { return model_->device(); }
  ReqToTokenPool& req_pool() { return *req_pool_; }
  TokenToKVPool& kv_pool() { return *kv_pool_; }

  // Where the context length came from, for errors that refuse a long request: "--context-length",
  // "the default min(...)" or "capped at the model's sliding_window N".
  const std::string& context_length_reason() const { return context_reason_; }

  // Checks the batch's fields agree (ForwardBatch::validate) and every value is in range for this
  // model and these pools (check_batch_ranges); forward() and forward_eager() call it first.
  void check_batch(const ForwardBatch& batch) const;
  // Runs the batch — on a graph when one can serve it (a decode batch, or a small extend as
  // decode rows, on a decode graph; an extend of one request on a full extend graph; an extend on
  // a piecewise graph), else eagerly; returns float32
  // logits [rows, vocab] for batch.logit_rows() (empty when none). Leader of a group: sends the
  // batch to the followers first. Error on a follower (they only follow()).
  Tensor forward(const ForwardBatch& batch);
  // The eager forward pass alone (the reference graphs are checked against); the leader sends
  // it to the followers first, as forward().
  Tensor forward_eager(const ForwardBatch& batch);
  // The eager forward on this rank only, sending nothing: for work every rank of the group does
  // identically by itself (verification batches).
  Tensor forward_eager_local(const ForwardBatch& batch);

  // Tensor parallelism. Size 1 / rank 0 without a group.
  int tp_rank() const { return comm_ ? comm_->rank() : 0; }
  int tp_size() const { return comm_ ? comm_->size() : 1; }
  bool is_leader() const { return tp_rank() == 0; }
  // Follower (rank > 0): runs what the leader sends until it stops them; returns then. Error when
  // the leader reports an error (its message), the group fails, or a batch cannot run here.
  void follow();
  // Leader: tells the followers to return from follow() (an empty `error`) or to fail with
  // `error`. Once; later calls and calls without followers do nothing.
  void stop_followers(const std::string& error = "");
  // Leader of a group, while idle: when nothing was sent for a second, sends a no-op, so followers
  // waiting for the next step never reach --dist-timeout while rank 0 is alive, and a follower
  // that died is noticed (Error) without a request. No-op otherwise.
  void keep_alive();
  // Decode graphs, or nullptr when disabled or none could be captured.
  const ForwardGraphs* decode_graphs() const { return decode_graphs_.get(); }
  // Piecewise graphs, or nullptr when disabled.
  const ForwardGraphs* piecewise_graphs() const { return piecewise_graphs_.get(); }
  // Full extend graphs, or nullptr when off.
  const ForwardGraphs* full_extend_graphs() const { return full_extend_graphs_.get(); }
  // Extend steps served by a decode graph as rows (extend_rows.h) so far.
  uint64_t extend_row_steps() const { return extend_row_steps_; }
  // Why `batch` would not replay a decode graph as rows ("" when it would).
  std::string extend_rows_refusal(const ForwardBatch& batch) const;
  // The graphs of `mode` (DECODE, or EXTEND: the piecewise ones), nullptr when off; mutable for
  // verification and tests.
  ForwardGraphs* graphs(ForwardMode mode);
  // Replays every captured shape of both modes on a random valid batch against the eager
  // forward; retires the shapes that differ (graph_verify.h). Run at start by verify_cuda_graph.
  void verify_cuda_graphs();
  // The memory every graph of this runner captures into (nullptr when no graph is on).
  const GraphMemory* graph_memory() const { return graph_memory_.get(); }
  // One token per entry of batch.logit_requests, from `logits` (rows in that order).
  std::vector<int32_t> sample(const ForwardBatch& batch, const Tensor& logits);

 private:
  std::shared_ptr<const GraphMemory> shared_graph_memory();
  bool leads_group() const { return comm_ && comm_->size() > 1 && comm_->rank() == 0; }
  // The leader's message to its followers: command, slot changes, then the batch or error text.
  void send_to_followers(uint8_t command, const ForwardBatch* batch, const std::string& error);
  // forward() after check_batch, on every rank: graph or eager.
  Tensor dispatch(const ForwardBatch& batch);
  Tensor run_eager(const ForwardBatch& batch);
  void verify_lazy(ForwardGraphs& graphs, int shape);

  std::shared_ptr<Communicator> comm_;
  std::unique_ptr<PoolJournal> journal_;  // leader of a group: slot changes for the followers
  bool followers_stopped_ = false;
  double last_sent_ = 0;  // steady-clock seconds of the leader's last message

  std::shared_ptr<const DecoderModel> model_;
  std::string context_reason_;
  std::unique_ptr<ReqToTokenPool> req_pool_;
  std::unique_ptr<TokenToKVPool> kv_pool_;
  GraphMemoryMode graph_memory_mode_ = GraphMemoryMode::kPool;
  size_t graph_memory_budget_ = 0;
  std::shared_ptr<GraphMemory> graph_memory_;
  // After the pools: their graphs use them.
  bool verify_ = false;  // --verify-cuda-graph: also each lazily captured shape
  std::unique_ptr<ForwardGraphs> decode_graphs_;
  std::unique_ptr<ForwardGraphs> piecewise_graphs_;
  std::unique_ptr<ForwardGraphs> full_extend_graphs_;
  ExtendRowsLimits extend_rows_;
  uint64_t extend_row_steps_ = 0;
};

}  // namespace grt
