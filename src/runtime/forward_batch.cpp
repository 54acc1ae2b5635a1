#include "runtime/forward_batch.h"

#include <algorithm>

#include "core/env_switch.h"
#include "memory/tensor_alloc.h"
#include "ops/attention.h"

namespace grt {

const char* forward_mode_name(ForwardMode m) {
  switch (m) {
    case ForwardMode::EXTEND: return "extend";
    case ForwardMode::DECODE: return "decode";
    case ForwardMode::MIXED: return "mixed";
    case ForwardMode::IDLE: return "idle";
  }
  return "?";
}

void ForwardBatch::validate() const {
  const size_t t = input_ids.size(), b = req_pool_indices.size();
  GRT_CHECK(positions.size() == t && out_cache_loc.size() == t,
            "batch has {} input ids but {} positions and {} KV locations", t, positions.size(), out_cache_loc.size());
  GRT_CHECK(seq_lens.size() == b && sampling.size() == b && sample_steps.size() == b,
            "batch of {} requests has {} seq lens, {} sampling params, {} sample steps", b, seq_lens.size(),
            sampling.size(), sample_steps.size());
  if (mode == ForwardMode::DECODE) {
    GRT_CHECK(t == b, "decode batch has {} tokens for {} requests", t, b);
    // Rows of an extend (extend_rows.h): each row's request prefix, below the row's seq len.
    GRT_CHECK(prefix_lens.empty() || prefix_lens.size() == b, "decode batch of {} rows has {} prefix lens", b,
              prefix_lens.size());
    for (size_t i = 0; i < prefix_lens.size(); ++i)
      GRT_CHECK(prefix_lens[i] >= 0 && prefix_lens[i] < seq_lens[i], "decode row {}: prefix {} must be in [0, seq len {})",
                i, prefix_lens[i], seq_lens[i]);
  } else if (mode == ForwardMode::EXTEND) {
    GRT_CHECK(prefix_lens.size() == b && extend_lens.size() == b && extend_start_loc.size() == b,
              "extend batch of {} requests has {} prefix lens, {} extend lens, {} start locations", b,
              prefix_lens.size(), extend_lens.size(), extend_start_loc.size());
    int64_t total = 0;
    for (size_t i = 0; i < b; ++i) {
      GRT_CHECK(extend_start_loc[i] == total, "request {} starts at row {}, expected {}", i, extend_start_loc[i], total);
      GRT_CHECK(seq_lens[i] == prefix_lens[i] + extend_lens[i], "request {}: seq len {} != prefix {} + extend {}", i,
                seq_lens[i], prefix_lens[i], extend_lens[i]);
      total += extend_lens[i];
    }
    GRT_CHECK(static_cast<size_t>(total) == t, "extend lens sum to {} but batch has {} tokens", total, t);
  } else {
    GRT_FAIL("forward mode {} is not supported", forward_mode_name(mode));
  }
  for (int32_t r : logit_requests) GRT_CHECK(r >= 0 && static_cast<size_t>(r) < b, "logit request {} of {}", r, b);
}

std::vector<int32_t> ForwardBatch::logit_rows() const {
  std::vector<int32_t> rows;
  if (mode == ForwardMode::DECODE) {
    for (int32_t r : logit_requests) rows.push_back(r);
    return rows;
  }
  for (int32_t r : logit_requests) {
    size_t i = static_cast<size_t>(r);
    if (return_all_logits) {
      for (int32_t j = 0; j < extend_lens[i]; ++j) rows.push_back(extend_start_loc[i] + j);
    } else {
      rows.push_back(extend_start_loc[i] + extend_lens[i] - 1);
    }
  }
  return rows;
}

int decode_tail_of(const ForwardBatch& batch) {
  static const bool enabled = env_int("GRAPHRT_MIXED_DECODE_ATTENTION", 1, 0, 1) == 1;
  if (!enabled || batch.mode != ForwardMode::EXTEND) return 0;
  int tail = 0;
  for (auto it = batch.extend_lens.rbegin(); it != batch.extend_lens.rend() && *it == 1; ++it) ++tail;
  return tail;
}

namespace {
Tensor upload(const std::vector<int32_t>& v, Device d) {
  return from_vector(v, Shape{static_cast<int64_t>(v.size())}, DType::I32, d);
}
}  // namespace

ForwardInputs upload_inputs(const ForwardBatch& batch, const Tensor& req_to_token,
                            const std::vector<LayerKvCache>& kv_cache, Device d) {
  ForwardInputs in;
  in.is_decode = batch.mode == ForwardMode::DECODE;
  in.input_ids = upload(batch.input_ids, d);
  in.positions = upload(batch.positions, d);
  in.out_cache_loc = upload(batch.out_cache_loc, d);
  in.kv_cache = &kv_cache;
  Tensor req = upload(batch.req_pool_indices, d);
  if (in.is_decode) {
    in.decode = {req_to_token, req, upload(batch.seq_lens, d), Tensor()};
    if (!batch.prefix_lens.empty()) in.decode.kv_new_from = upload(batch.prefix_lens, d);  // an extend's rows
  } else {
    in.extend.req_to_token = req_to_token;
    in.extend.req_pool_indices = req;
    in.extend.prefix_lens = upload(batch.prefix_lens, d);
    in.extend.extend_lens = upload(batch.extend_lens, d);
    in.extend.extend_start_loc = upload(batch.extend_start_loc, d);
    in.extend.num_reqs = batch.batch_size();
    in.extend.max_extend_len =
        batch.extend_lens.empty() ? 0 : *std::max_element(batch.extend_lens.begin(), batch.extend_lens.end());
    in.extend.decode_tail = decode_tail_of(batch);
    if (in.extend.decode_tail > 0) {
      in.extend.decode_first_row = batch.extend_start_loc[static_cast<size_t>(batch.batch_size() - in.extend.decode_tail)];
      in.extend.seq_lens = upload(batch.seq_lens, d);
    }
    in.extend.covered_rows = ops::packed_extend_rows(batch.extend_start_loc, batch.extend_lens);
  }
  return in;
}

}  // namespace grt
