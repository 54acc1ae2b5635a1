// PiecewiseGraphs: binds a model's extend forward to a ShapeGraphRunner with the piecewise policy
// (DESIGN.md "The forward pass", step 2; seeds 000/001). One graph per token count, split at the
// split ops (extend attention), which run eagerly between pieces. Owns the persistent inputs
// (token ids, positions, KV write locations, per-request slots / prefix lens / extend lens /
// start rows) and the live ForwardInputs whose host metadata (request count, longest extend)
// the recorded attention reads at replay: the real batch's, not the padded one's.
//
// Padding tokens (rows past the real ones) belong to no request: token 0 at position 0, KV
// written into slot 0, attention leaves their rows zero.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "graph/shape_graph_runner.h"
#include "memory/persistent_buffers.h"
#include "model/decoder_model.h"
#include "runtime/forward_batch.h"
#include "runtime/graph_memory.h"
#include "runtime/kv_cache.h"

namespace grt {

struct PiecewiseGraphsOptions {
  std::vector<int> token_counts;  // ascending, unique (capture_schedule.h)
  int warmups = 1;
  bool progress = true;
  bool ascending = false;  // capture order (benchmarks only)
  // MoE models: the MoE block (model/moe_layer.h, "moe_dispatch") is a split op too, so it runs
  // eagerly between pieces instead of inside them (--moe-dispatch-split-op).
  bool moe_dispatch_split_op = false;
  // Breakable marks (eager_on_graph) split the pieces too (GRAPHRT_USE_BREAKABLE_CUDA_GRAPH=1);
  // moe_eager_routing makes MoE routing such a mark (ForwardInputs::moe_eager_routing).
  bool breakable = false;
  bool moe_eager_routing = false;
};

class PiecewiseGraphs {
 public:
  // Allocates the persistent inputs for the largest token count and captures every count into
  // `memory` (shared with the decode graphs: they never run at the same time).
  PiecewiseGraphs(const PiecewiseGraphsOptions& options, std::shared_ptr<const DecoderModel> model,
                  ReqToTokenPool& req_pool, TokenToKVPool& kv_pool, std::shared_ptr<const GraphMemory> memory);
  ~PiecewiseGraphs();

  // Empty when a graph can serve `batch`, else why not.
  std::string refusal(const ForwardBatch& batch) const;
  bool can_run(const ForwardBatch& batch) const { return refusal(batch).empty(); }
  // float32 logits [rows, vocab] of batch.logit_rows(), in a fresh tensor. Needs can_run.
  Tensor forward(const ForwardBatch& batch);

  const ShapeGraphRunner& runner() const { return *runner_; }
  uint64_t replay_count() const { return replays_; }
  // Graph memory this runner's captures added to the shared pool.
  size_t graph_bytes() const;
  size_t input_bytes() const { return inputs_.bytes(); }
  // "piecewise graphs: 38 token counts (4..1024), 2 pieces each, captured in 0.40 s, 12.0 MiB"
  std::string summary() const;

 private:
  // Points live_ at the first `tokens` rows and `reqs` requests of the persistent inputs.
  void bind_live(int tokens, int reqs, int max_extend_len);

  std::shared_ptr<const DecoderModel> model_;
  ReqToTokenPool& req_pool_;
  TokenToKVPool& kv_pool_;
  std::shared_ptr<Stream> capture_stream_;
  std::shared_ptr<const GraphMemory> memory_;
  PersistentBuffers inputs_;
  int input_ids_, positions_, out_cache_loc_, logit_rows_;
  int req_pool_indices_, prefix_lens_, extend_lens_, extend_start_loc_;
  int num_real_;  // i32 [1]: real tokens of the replayed batch (ForwardInputs::num_real_tokens)
  int max_requests_;
  // What the captured forward reads: tensors are views of inputs_; the extend metadata's host
  // fields are updated before every replay (the recorded attention reads them by pointer).
  ForwardInputs live_;
  std::unique_ptr<ShapeGraphRunner> runner_;
  uint64_t replays_ = 0;
};

}  // namespace grt
