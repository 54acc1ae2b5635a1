// GraphInputSchema: what one forward mode's graphs read and how a batch fills it — the
// per-mode half of ForwardGraphs. A schema owns the persistent inputs (allocated once at the
// largest shape), says which batches its graphs can serve and what a shape counts, writes a
// dummy all-padding batch for capture, stages a real batch padded to a captured shape, and
// runs the captured step. Modes: decode (a shape is a batch size) and extend (a token count,
// piecewise at split ops, or one full graph for one request); mixed and speculative-verify batches
// are further schemas.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "graph/segmented_capture.h"
#include "memory/persistent_buffers.h"
#include "model/decoder_model.h"
#include "runtime/forward_batch.h"
#include "runtime/kv_cache.h"

namespace grt {

class GraphInputSchema {
 public:
  virtual ~GraphInputSchema() = default;

  virtual ForwardMode mode() const = 0;
  virtual const char* label() const = 0;       // "decode graphs", "piecewise graphs"
  virtual const char* unit() const = 0;        // what a shape counts: "batch size", "tokens"
  virtual const char* graph_name() const = 0;  // "decode", "piecewise": in refusals and summaries
  virtual CapturePolicies policy(bool breakable) const = 0;
  // The most requests a batch these graphs serve may hold (verification builds batches within it).
  virtual int max_batch_requests() const { return 1 << 30; }
  // The shape `batch` needs (batch size or token count).
  virtual int shape_of(const ForwardBatch& batch) const = 0;
  // Why this mode's graphs cannot serve `batch` apart from its mode and shape ("" when they can).
  virtual std::string refusal(const ForwardBatch& batch) const = 0;
  // Writes a valid all-padding batch of shape `n` into the inputs and uploads it on `stream`.
  virtual void prepare_dummy(int n, Stream& stream) = 0;
  // Stages `batch` padded to shape `padded`, and its logit rows (not uploaded yet).
  virtual void stage(const ForwardBatch& batch, int padded) = 0;
  // The step graphs capture: reads the first `n` rows of the inputs, returns [n, ...].
  virtual Tensor step(int n) = 0;
  // float32 logits of `rows` (an index tensor) of a replay's output.
  virtual Tensor logits(const Tensor& output, const Tensor& rows) const = 0;

  PersistentBuffers& inputs() { return inputs_; }
  const PersistentBuffers& inputs() const { return inputs_; }
  // Device view of the logit rows staged by stage().
  Tensor logit_rows(int64_t n) const { return inputs_.view(logit_rows_, n); }

 protected:
  explicit GraphInputSchema(Device device) : inputs_(device) {}
  PersistentBuffers inputs_;
  int logit_rows_ = -1;  // declared by each schema, read after replay by the gather only
};

// Whether a decode graph of `rows` rows computes the logits itself (lm_head on every row, the
// replay's caller gathering the logit rows out of graph memory) or ends at the final norm (the
// caller gathers the logit rows' hidden states and runs lm_head on them alone): inside up to
// GRAPHRT_DECODE_GRAPH_LOGITS_MAX_ROWS rows (read once, default kDecodeGraphLogitsMaxRows; 0:
// never). Above it, the gather out of graph memory moved rows x vocab float32 logits (qwen3-0.6b
// bs 64: 39 MB, 26 us on an H100) and an extend run as rows (extend_rows.h) computed lm_head for
// every token where it needs one row a request; inside, lm_head keeps its PDL edge to the norm.
bool decode_graph_logits_inside(int64_t rows);
inline constexpr int kDecodeGraphLogitsMaxRows = 8;

// Decode: one row per token, one token per request — or, for an extend run as rows
// (extend_rows.h), several rows of one request, each with its own seq len and the request's
// prefix staged as `kv_new_from` (the first position the step stores; seq len - 1 for a decode
// row). Padding rows: token 0 at position 0 of the dummy request (the padding slot, seq len 1,
// KV written into slot 0, the sink).
// Every schema also holds `num_token_non_padded` (i32 [1], ForwardInputs::num_real_tokens): the
// real rows of the replayed batch, so MoE layers route none of the padding rows.
// moe_eager_routing: MoE routing is a breakable mark (eager_on_graph) inside each sparse layer.
std::unique_ptr<GraphInputSchema> decode_schema(std::shared_ptr<const DecoderModel> model, ReqToTokenPool& req_pool,
                                                TokenToKVPool& kv_pool, int max_batch_size,
                                                std::vector<int> graph_break_layers, bool moe_eager_routing = false);
// Extend (piecewise prefill): padding tokens belong to no request (token 0 at position 0, KV
// into slot 0); the recorded attention reads the live request count and longest extend by
// pointer, so they are the real batch's, not the padded one's.
struct ExtendSchemaMoe {
  // The MoE block (model/moe_layer.h, "moe_dispatch") is a split op while the pieces are captured,
  // so it runs eagerly between pieces (--moe-dispatch-split-op).
  bool moe_dispatch_split_op = false;
  bool moe_eager_routing = false;
};
std::unique_ptr<GraphInputSchema> extend_schema(std::shared_ptr<const DecoderModel> model, ReqToTokenPool& req_pool,
                                                TokenToKVPool& kv_pool, int max_tokens, ExtendSchemaMoe moe = {});
// Full extend graphs: an extend of one request (a prompt, a chunk after a cached prefix) as one
// graph with its attention captured (no eager attention between pieces, no split op of any
// kind), the launch sized for the padded token count and the request's lengths read on the
// device (ops::ExtendAttentionMeta::fixed_launch). Padding tokens belong to no request and their
// rows are left as the attention finds them; every later op of a layer is row-wise and their
// logits are never taken. max_tokens must fit the context length (one request holds them all).
std::unique_ptr<GraphInputSchema> full_extend_schema(std::shared_ptr<const DecoderModel> model,
                                                     ReqToTokenPool& req_pool, TokenToKVPool& kv_pool, int max_tokens,
                                                     bool moe_eager_routing = false);

}  // namespace grt
