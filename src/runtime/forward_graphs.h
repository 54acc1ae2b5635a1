// ForwardGraphs: binds a model's forward for one mode to a ShapeGraphRunner (DESIGN.md "The
// forward pass", steps 1-2) — decode graphs per batch size, piecewise prefill graphs and full
// extend graphs per token count — through the mode's GraphInputSchema (graph_input_schema.h). It
// captures the schema's step for every shape (or lazily, on first need), and serves batches that
// fit: stage the batch into the persistent inputs padded to a captured shape, replay on the graph
// memory's one replay stream (ReplayDomain), return the real rows' logits.
//
// A shape is retired — never replayed again, its batches run eagerly — when its graph memory
// was lost (a failed VMM remap: one warning per shape) or verification found it wrong.
#pragma once
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "device/communicator.h"
#include "graph/shape_graph_runner.h"
#include "runtime/forward_batch.h"
#include "runtime/graph_input_schema.h"
#include "runtime/graph_memory.h"

namespace grt {

// Capture overlap defaults, from the environment (read once; a bad value is an Error):
// GRAPHRT_CAPTURE_INSTANTIATE_THREADS=N worker threads instantiate graphs while the next shape is
// captured (default 2, or 0 under Nsight Compute: instantiate_threads_default; 0: on the capturing
// thread, as before); GRAPHRT_CAPTURE_SYNC_EACH_SHAPE=1
// waits for the device after the warm-up and after every shape, as before (default 0);
// GRAPHRT_CAPTURE_DEFER_INSTANTIATE=1 instantiates on the workers only after every shape is
// recorded (default 0: right after each shape's capture).
int default_instantiate_threads();
// Whether Nsight Compute profiles this process: a variable it sets (NV_COMPUTE_PROFILER_PERFWORKS_DIR
// or NV_NSIGHT_INJECTION_TRANSPORT_TYPE, as ncu 2025.3.1 does) is set and not empty.
bool nsight_compute_attached();
// The worker count default_instantiate_threads() returns, read now: GRAPHRT_CAPTURE_INSTANTIATE_
// THREADS when set (0..64, else an Error naming it), else 0 `under_ncu` (ncu aborts in malloc
// with workers) and 2 otherwise.
int instantiate_threads_default(bool under_ncu);
bool default_sync_each_shape();
bool default_defer_instantiation();

struct ForwardGraphsOptions {
  std::vector<int> shapes;  // ascending, unique (capture_schedule.h)
  int warmups = 1;
  bool progress = true;
  bool ascending = false;    // capture order (benchmarks only)
  bool breakable = false;    // GRAPHRT_USE_BREAKABLE_CUDA_GRAPH=1: eager_on_graph / break_graph split the capture
  bool debug_eager = false;  // --debug-cuda-graph: the forward runs eagerly through capture/replay
  bool lazy = false;         // --cuda-graph-lazy: capture a shape the first time a batch needs it
  int instantiate_threads = default_instantiate_threads();  // ShapeGraphOptions::instantiate_threads
  bool sync_each_shape = default_sync_each_shape();         // ShapeGraphOptions::sync_each_shape
  bool defer_instantiation = default_defer_instantiation();  // ShapeGraphOptions::defer_instantiation
  // The tensor-parallel group (null or size 1: none). Every rank captures in lockstep: a barrier
  // before the capture, then agreement (agree_across_ranks) so that a shape any rank lacks is
  // dropped on every rank, and graph-or-eager is the same decision everywhere.
  Communicator* comm = nullptr;
};

class ForwardGraphs {
 public:
  // Captures every shape of options.shapes (none when lazy) into `memory`. The KV cache and
  // request table must be set up (on the current stream).
  ForwardGraphs(const ForwardGraphsOptions& options, std::unique_ptr<GraphInputSchema> schema,
                std::shared_ptr<const GraphMemory> memory);
  ~ForwardGraphs();

  // Retires (one warning each) the captured shapes whose graph memory was lost since the last
  // check (a failed VMM remap, possibly caused by another runner's capture). Cheap when none was.
  void check_memory();
  // Before refusal()/forward() of `batch`: check_memory(), and when lazy,
  // captures the shape the batch needs. Never throws for a capture failure (the batch then runs
  // eagerly, refusal() says why). Returns the shape captured now, 0 when none was.
  int prepare(const ForwardBatch& batch);
  // Tensor parallel: retires every shape that is not live (captured and not retired) on every
  // rank of the group, logging what was dropped; a collective every rank must call at the same
  // point. No-op without a group.
  void agree_across_ranks();
  // Empty when a graph can serve `batch`, else why not (mode, shape).
  std::string refusal(const ForwardBatch& batch) const;
  bool can_run(const ForwardBatch& batch) const { return refusal(batch).empty(); }
  // float32 logits [rows, vocab] of batch.logit_rows(), in a fresh tensor. Needs can_run;
  // Error (naming both streams) on a stream other than the memory's replay stream, or while
  // another replay of the memory is being issued.
  Tensor forward(const ForwardBatch& batch);
  // What forward() computes, run eagerly: `batch` staged padded to the shape its graph would
  // replay, then the captured step called on those inputs without a graph. Verification's
  // reference: every kernel sees the same shapes and inputs as in the replay (kernel choices
  // follow M and the attention grid), so only capture/replay itself can make them differ.
  Tensor forward_padded_eager(const ForwardBatch& batch);

  const ShapeGraphRunner& runner() const { return *runner_; }
  ShapeGraphRunner& runner() { return *runner_; }
  const GraphInputSchema& schema() const { return *schema_; }
  const GraphMemory& memory() const { return *memory_; }
  // Steps served by a graph so far.
  uint64_t replay_count() const { return replays_; }
  // Shape units (rows or tokens) replayed beyond the live batches so far: the cost of padding
  // to captured shapes.
  uint64_t padding_count() const { return padding_; }
  // Graph memory this runner's captures added to the (shared) memory, and persistent input bytes.
  size_t graph_bytes() const;
  size_t input_bytes() const { return schema_->inputs().bytes(); }
  // "decode graphs: 35 sizes (1..256) captured in 0.31 s (record ..., instantiate ...), 190.0 MiB
  // graph memory" (capture_report.h)
  std::string summary() const;

 private:
  bool tensor_parallel() const { return comm_ && comm_->size() > 1; }

  Communicator* comm_ = nullptr;
  std::set<int> agreed_;  // lazy + tensor parallel: shapes whose capture every rank has agreed on
  std::unique_ptr<GraphInputSchema> schema_;
  std::shared_ptr<const GraphMemory> memory_;
  std::shared_ptr<Stream> capture_stream_;
  std::unique_ptr<ShapeGraphRunner> runner_;
  uint64_t replays_ = 0;
  uint64_t padding_ = 0;
  uint64_t faults_seen_ = 0;
};

}  // namespace grt
