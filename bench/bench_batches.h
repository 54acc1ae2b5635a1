// Batches the benchmarks run: requests occupying KV slots, decode and prefill batches over
// them, and where the PyTorch anchors keep their numbers.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "runtime/forward_batch.h"
#include "runtime/model_runner.h"

namespace grt::bench {

// The anchor section names of a model preset, when the anchor measured it.
inline const char* anchor_decode_key(const std::string& model) {
  if (model == "builtin:qwen3-0.6b") return "small_decode";
  if (model == "builtin:llama-3.1-8b") return "llama8b_decode";
  return nullptr;
}

inline double anchor_value(const nlohmann::json& a, const char* section, int key, const char* field) {
  if (a.is_null() || !section || !a.contains(section)) return 0;
  auto k = std::to_string(key);
  if (!a[section].contains(k)) return 0;
  return a[section][k].value(field, 0.0);
}

// Request slots and KV slots for `bs` requests of `len` tokens; KV contents random.
struct Occupancy {
  ModelRunner& runner;
  std::vector<int> slots;
  std::vector<std::vector<int32_t>> kv;
  Occupancy(ModelRunner& r, int bs, int len) : runner(r) {
    for (int i = 0; i < bs; ++i) {
      slots.push_back(r.req_pool().alloc());
      kv.push_back(r.kv_pool().alloc(len));
      r.req_pool().write(slots.back(), 0, kv.back());
    }
  }
  ~Occupancy() {
    for (size_t i = 0; i < slots.size(); ++i) {
      runner.kv_pool().free(kv[i]);
      runner.req_pool().free(slots[i]);
    }
  }
};

inline ForwardBatch decode_batch(const Occupancy& occ, int ctx, int vocab) {
  ForwardBatch b;
  b.mode = ForwardMode::DECODE;
  for (size_t i = 0; i < occ.slots.size(); ++i) {
    b.input_ids.push_back(static_cast<int32_t>((i * 7919 + 11) % static_cast<size_t>(vocab)));
    b.positions.push_back(ctx);
    b.out_cache_loc.push_back(occ.kv[i][static_cast<size_t>(ctx)]);
    b.req_pool_indices.push_back(occ.slots[i]);
    b.seq_lens.push_back(ctx + 1);
    b.sampling.emplace_back();
    b.sample_steps.push_back(0);
    b.logit_requests.push_back(static_cast<int32_t>(i));
  }
  return b;
}

inline ForwardBatch prefill_batch(const Occupancy& occ, int tokens, int vocab) {
  ForwardBatch b;
  b.mode = ForwardMode::EXTEND;
  for (int j = 0; j < tokens; ++j) {
    b.input_ids.push_back((j * 104729 + 3) % vocab);
    b.positions.push_back(j);
    b.out_cache_loc.push_back(occ.kv[0][static_cast<size_t>(j)]);
  }
  b.req_pool_indices = {occ.slots[0]};
  b.prefix_lens = {0};
  b.extend_lens = {tokens};
  b.extend_start_loc = {0};
  b.seq_lens = {tokens};
  b.sampling.emplace_back();
  b.sample_steps = {0};
  b.logit_requests = {0};
  return b;
}

}  // namespace grt::bench
