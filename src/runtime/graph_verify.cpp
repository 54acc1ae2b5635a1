#include "runtime/graph_verify.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "core/logging.h"
#include "memory/tensor_alloc.h"
#include "runtime/model_runner.h"

namespace grt {

namespace {

// Request and KV slots a verification batch holds; freed when it goes.
struct HeldSlots {
  ModelRunner& runner;
  std::vector<int> requests;
  std::vector<int32_t> kv;
  ~HeldSlots() {
    for (int r : requests) runner.req_pool().free(r);
    runner.kv_pool().free(kv);
  }
};

int uniform(std::mt19937& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// A request a verification batch holds: its request row and KV slots.
struct HeldRequest {
  int slot;
  std::vector<int32_t> kv;
};

// Gives each request of `lens` (tokens it holds after the step) a request row and fresh KV
// slots and writes its row. Empty when the pools are short.
std::optional<std::vector<HeldRequest>> hold(HeldSlots& h, const std::vector<int>& lens) {
  ModelRunner& r = h.runner;
  int64_t total = 0;
  for (int l : lens) total += l;
  if (r.req_pool().available() < static_cast<int>(lens.size()) || r.kv_pool().available() < total) return std::nullopt;
  std::vector<HeldRequest> out;
  for (int l : lens) {
    const int slot = r.req_pool().alloc();
    h.requests.push_back(slot);
    std::vector<int32_t> kv = r.kv_pool().alloc(l);
    h.kv.insert(h.kv.end(), kv.begin(), kv.end());
    r.req_pool().write(slot, 0, kv);
    out.push_back({slot, std::move(kv)});
  }
  return out;
}

void add_request(ForwardBatch& b, int slot, int seq_len) {
  b.req_pool_indices.push_back(slot);
  b.seq_lens.push_back(seq_len);
  b.sampling.emplace_back();
  b.sample_steps.push_back(0);
  b.logit_requests.push_back(static_cast<int32_t>(b.logit_requests.size()));
}

// A decode batch of `bs` rows, random tokens: requests with 1..4 tokens each, one row a request;
// from bs 2 on, the first 2..4 rows are instead the new tokens of one request's extend (after a
// prefix of 0..3), as an extend runs on decode graphs (extend_rows.h).
std::optional<ForwardBatch> decode_batch(HeldSlots& h, int bs, int vocab, std::mt19937& rng) {
  const int context = h.runner.req_pool().max_context();
  const int extend_rows = bs >= 2 && context >= 8 ? uniform(rng, 2, std::min(bs, 4)) : 0;
  const int extend_prefix = extend_rows > 0 ? uniform(rng, 0, 3) : 0;
  std::vector<int> lens(static_cast<size_t>(bs - std::max(extend_rows - 1, 0)));
  for (int& l : lens) l = uniform(rng, 1, std::min(4, context));
  if (h.runner.kv_pool().available() < 4LL * bs + 8) std::fill(lens.begin(), lens.end(), 1);
  if (extend_rows > 0) lens[0] = extend_prefix + extend_rows;
  auto kv = hold(h, lens);
  if (!kv) return std::nullopt;
  ForwardBatch b;
  b.mode = ForwardMode::DECODE;
  for (size_t i = 0; i < lens.size(); ++i) {
    const int first = i == 0 && extend_rows > 0 ? extend_prefix : lens[i] - 1;  // the first position stored now
    for (int pos = first; pos < lens[i]; ++pos) {
      b.input_ids.push_back(uniform(rng, 0, vocab - 1));
      b.positions.push_back(pos);
      b.out_cache_loc.push_back((*kv)[i].kv[static_cast<size_t>(pos)]);
      b.prefix_lens.push_back(first);
      add_request(b, (*kv)[i].slot, pos + 1);
    }
  }
  return b;
}

// An extend batch of `tokens` tokens over 1..4 requests (more when the context demands, at most
// max_reqs), with short random prefixes.
std::optional<ForwardBatch> extend_batch(HeldSlots& h, int tokens, int vocab, std::mt19937& rng, int max_reqs) {
  const int context = h.runner.req_pool().max_context();
  const int need = (tokens + context - 1) / context;
  const int reqs = std::max(need, uniform(rng, 1, std::max(1, std::min({4, tokens, max_reqs}))));
  std::vector<int> ext(static_cast<size_t>(reqs), tokens / reqs), prefix(static_cast<size_t>(reqs), 0);
  for (int i = 0; i < tokens % reqs; ++i) ext[static_cast<size_t>(i)]++;
  int64_t extra = 0;
  for (size_t i = 0; i < ext.size(); ++i) {
    prefix[i] = std::min(uniform(rng, 0, 3), context - ext[i]);
    extra += prefix[i];
  }
  if (h.runner.kv_pool().available() < tokens + extra) std::fill(prefix.begin(), prefix.end(), 0);
  std::vector<int> lens(ext.size());
  for (size_t i = 0; i < ext.size(); ++i) lens[i] = prefix[i] + ext[i];
  auto kv = hold(h, lens);
  if (!kv) return std::nullopt;
  ForwardBatch b;
  b.mode = ForwardMode::EXTEND;
  for (size_t i = 0; i < ext.size(); ++i) {
    b.extend_start_loc.push_back(static_cast<int32_t>(b.input_ids.size()));
    for (int j = 0; j < ext[i]; ++j) {
      b.input_ids.push_back(uniform(rng, 0, vocab - 1));
      b.positions.push_back(prefix[i] + j);
      b.out_cache_loc.push_back((*kv)[i].kv[static_cast<size_t>(prefix[i] + j)]);
    }
    b.prefix_lens.push_back(prefix[i]);
    b.extend_lens.push_back(ext[i]);
    add_request(b, (*kv)[i].slot, lens[i]);
  }
  return b;
}

}  // namespace

void verify_forward_graphs(ModelRunner& runner, ForwardGraphs& graphs, int only_shape) {
  ShapeGraphRunner& r = graphs.runner();
  const bool bitwise = !runner.device().is_cuda();
  const int vocab = static_cast<int>(runner.model().config().vocab_size);
  const std::string unit = r.options().unit;
  const std::vector<int> shapes = r.shapes();
  const std::vector<int>& schedule = r.options().shapes;
  for (int shape : shapes) {
    // A batch pads to `shape` when it is larger than the schedule's previous shape (captured
    // shapes are a prefix of the schedule; lazily, any subset, padding to schedule shapes).
    const auto at = std::lower_bound(schedule.begin(), schedule.end(), shape);
    const int lo = at == schedule.begin() ? 1 : *std::prev(at) + 1;
    if (!r.retired(shape).empty() || (only_shape > 0 && shape != only_shape)) continue;
    std::mt19937 rng(static_cast<uint32_t>(shape) * 2654435761u + 17);
    const int n = uniform(rng, lo, shape);  // a batch that pads to this shape
    HeldSlots held{runner, {}, {}};
    std::optional<ForwardBatch> batch = graphs.schema().mode() == ForwardMode::DECODE
                                            ? decode_batch(held, n, vocab, rng)
                                            : extend_batch(held, n, vocab, rng, graphs.schema().max_batch_requests());
    if (!batch || !graphs.refusal(*batch).empty()) {
      GRT_DEBUG("{}: {} {} not verified: {}", r.options().label, unit, shape,
                batch ? graphs.refusal(*batch) : std::string("the KV cache or request rows are too small"));
      continue;
    }
    // The reference is the captured step run eagerly on the same padded inputs: kernels are
    // chosen by M and by the attention grid, so only then do graph and eager run the same
    // kernels, and any difference left is capture/replay's (a bf16 model's logits at another M
    // differ by rounding, amplified over the layers).
    std::vector<float> eager = to_host_floats(graphs.forward_padded_eager(*batch));
    const std::vector<float> graph = to_host_floats(graphs.forward(*batch));
    eager.resize(std::min(eager.size(), graph.size()));
    double diff = 0, scale = 1;
    bool equal = eager.size() == graph.size();
    if (equal && bitwise) equal = std::memcmp(eager.data(), graph.data(), eager.size() * sizeof(float)) == 0;
    for (size_t i = 0; i < eager.size() && i < graph.size(); ++i) {
      const double d = std::abs(static_cast<double>(eager[i]) - graph[i]);
      diff = std::max(diff, std::isnan(d) ? static_cast<double>(INFINITY) : d);
      scale = std::max(scale, std::abs(static_cast<double>(eager[i])));
    }
    if (!bitwise) equal = equal && diff <= kBf16VerifyTolerance * scale;
    r.set_verified(shape, equal, diff);
    if (!equal)
      r.retire(shape, fmt::format("verification: a batch of {} (padded to {} {}) differs from the eager forward (max "
                                  "|graph - eager| = {:.6g}, {})",
                                  n, unit, shape, diff,
                                  bitwise ? "CPU: must be bitwise equal"
                                          : fmt::format("allowed {:.6g}", kBf16VerifyTolerance * scale)));
  }
  if (only_shape > 0) return;
  GRT_INFO("{}: {} of {} shapes verified against the eager forward", r.options().label,
           std::count_if(r.stats().begin(), r.stats().end(), [](const CapturedShape& s) { return s.verified; }),
           r.stats().size());
}

}  // namespace grt
