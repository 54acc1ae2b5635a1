// What the scheduler counts for /metrics: requests, tokens, queue and running sizes, KV use,
// latency histograms (TTFT, inter-token, end-to-end, host time per step), and per forward mode
// the steps run on a graph vs eagerly. Written by the scheduler thread, read from any thread.
#pragma once
#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

namespace grt {

// Cumulative histogram with fixed upper bounds (Prometheus buckets; +Inf implied).
struct Histogram {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;  // per bound, not cumulative; the last entry is +Inf
  double sum = 0;
  uint64_t count = 0;
  explicit Histogram(std::vector<double> upper_bounds = {});
  void observe(double v);
};

enum class StepMode { kExtend = 0, kDecode = 1, kMixed = 2 };
inline constexpr const char* kStepModeNames[3] = {"extend", "decode", "mixed"};

struct ServingSnapshot {
  uint64_t requests_stop = 0, requests_length = 0, requests_abort = 0;
  uint64_t prompt_tokens = 0, generation_tokens = 0, retractions = 0;
  std::array<uint64_t, 3> graph_steps{}, eager_steps{};
  // Extend and mixed steps that replayed a decode graph, one row per token (runtime/extend_rows.h);
  // counted among graph_steps too.
  uint64_t extend_row_steps = 0;
  // Extend steps that replayed a full extend graph (graph_input_schema.h); among graph_steps too.
  uint64_t full_extend_steps = 0;
  // Per mode, where the device time goes: seconds from a step's forward call to its sampled
  // tokens on the host (the device's time on the step, eager launches' host time included;
  // steps never overlap: the next is launched after these tokens are read), tokens forwarded,
  // and context tokens (the sum of the rows' sequence lengths: what attention reads).
  std::array<double, 3> step_seconds{};
  std::array<uint64_t, 3> step_tokens{}, step_context_tokens{};
  // Padding replayed by graphs: rows of decode graphs (extend rows included), tokens of
  // piecewise graphs and of full extend graphs, beyond the live batch (the captured shape minus the
  // batch's).
  uint64_t decode_graph_padding = 0, piecewise_graph_padding = 0, full_extend_graph_padding = 0;
  // Rows of each decode step, tokens of each extend (and mixed) step: the batch shapes the
  // device ran (vLLM's iteration_tokens).
  Histogram decode_rows, extend_tokens;
  int running = 0, waiting = 0;
  int64_t kv_used = 0, kv_total = 0;
  int slots_used = 0, slots_total = 0;
  // step_host: host time per step that the device waits for (from the previous step's tokens
  // being ready to the next forward being called); step_host_overlapped: for the steps planned
  // ahead, the planning done while the device ran the previous step.
  Histogram ttft, itl, e2e, step_host, step_host_overlapped;
  ServingSnapshot();
};

class ServingMetrics {
 public:
  ServingSnapshot snapshot() const {
    std::lock_guard<std::mutex> g(mu_);
    return s_;
  }
  // Scheduler thread: change the numbers under the lock.
  template <typename F>
  void update(F&& f) {
    std::lock_guard<std::mutex> g(mu_);
    f(s_);
  }

 private:
  mutable std::mutex mu_;
  ServingSnapshot s_;
};

}  // namespace grt
