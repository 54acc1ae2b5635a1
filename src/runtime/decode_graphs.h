// DecodeGraphs: binds a model's decode forward to a ShapeGraphRunner (DESIGN.md "The forward
// pass", step 1). Owns the persistent inputs (input ids, positions, KV write locations,
// request slots, seq lens), captures `model.forward` + logits over them for every batch size,
// and serves DECODE batches that fit: copy the batch into the leading rows, pad the rest with
// the dummy request (padding slot of the request pool, seq len 1, KV writes into slot 0),
// replay, return the real rows' logits.
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

struct DecodeGraphsOptions {
  std::vector<int> batch_sizes;  // ascending, unique (capture_schedule.h)
  int warmups = 1;
  bool progress = true;
  bool ascending = false;  // capture order (benchmarks only)
  bool breakable = false;    // GRAPHRT_USE_BREAKABLE_CUDA_GRAPH=1
  bool debug_eager = false;  // --debug-cuda-graph
  std::vector<int> graph_break_layers;  // break_graph() after these layers (breakable mode)
  bool moe_eager_routing = false;       // MoE routing is a breakable mark (ForwardInputs)
};

class DecodeGraphs {
 public:
  // Allocates the persistent inputs for the largest batch size and captures every size.
  DecodeGraphs(const DecodeGraphsOptions& options, std::shared_ptr<const DecoderModel> model,
               ReqToTokenPool& req_pool, TokenToKVPool& kv_pool, std::shared_ptr<const GraphMemory> memory);
  ~DecodeGraphs();

  // Empty when a graph can serve `batch`, else why not (mode, batch size).
  std::string refusal(const ForwardBatch& batch) const;
  bool can_run(const ForwardBatch& batch) const { return refusal(batch).empty(); }
  // float32 logits [rows, vocab] of batch.logit_rows(), in a fresh tensor. Needs can_run.
  Tensor forward(const ForwardBatch& batch);

  const ShapeGraphRunner& runner() const { return *runner_; }
  // Decode steps served by a graph so far.
  uint64_t replay_count() const { return replays_; }
  // Graph memory this runner's captures added to the (shared) pool, and persistent input bytes.
  size_t graph_bytes() const;
  size_t input_bytes() const { return inputs_.bytes(); }
  // "decode graphs: 35 sizes (1..256) in 0.31 s, 190.0 MiB graph memory"
  std::string summary() const;

 private:
  ForwardInputs inputs_for(int rows) const;

  std::shared_ptr<const DecoderModel> model_;
  ReqToTokenPool& req_pool_;
  TokenToKVPool& kv_pool_;
  std::shared_ptr<Stream> capture_stream_;
  std::shared_ptr<const GraphMemory> memory_;
  PersistentBuffers inputs_;
  int input_ids_, positions_, out_cache_loc_, req_pool_indices_, seq_lens_, logit_rows_;
  int num_real_;  // i32 [1]: real rows of the replayed batch (ForwardInputs::num_real_tokens)
  std::unique_ptr<ShapeGraphRunner> runner_;
  uint64_t replays_ = 0;
  std::vector<int> graph_break_layers_;
  bool moe_eager_routing_ = false;
};

}  // namespace grt
