#include "runtime/forward_batch_wire.h"

namespace grt {

void encode_forward_batch(const ForwardBatch& b, ByteWriter& out) {
  out.put<uint8_t>(static_cast<uint8_t>(b.mode));
  out.put<uint8_t>(b.return_all_logits ? 1 : 0);
  out.put_vector(b.input_ids);
  out.put_vector(b.positions);
  out.put_vector(b.out_cache_loc);
  out.put_vector(b.req_pool_indices);
  out.put_vector(b.seq_lens);
  out.put_vector(b.prefix_lens);
  out.put_vector(b.extend_lens);
  out.put_vector(b.extend_start_loc);
  out.put_vector(b.sample_steps);
  out.put_vector(b.logit_requests);
  out.put<uint64_t>(b.sampling.size());
  for (const SamplingParams& p : b.sampling) {
    out.put(p.temperature);
    out.put<int32_t>(p.top_k);
    out.put(p.top_p);
    out.put(p.seed);
    out.put(p.min_p);
    out.put(p.frequency_penalty);
    out.put(p.presence_penalty);
    out.put(p.repetition_penalty);
  }
}

ForwardBatch decode_forward_batch(ByteReader& in) {
  ForwardBatch b;
  const auto mode = in.get<uint8_t>("forward mode");
  GRT_CHECK(mode <= static_cast<uint8_t>(ForwardMode::IDLE), "{}: forward mode {} is not one (0..{})", in.what(),
            mode, static_cast<int>(ForwardMode::IDLE));
  b.mode = static_cast<ForwardMode>(mode);
  b.return_all_logits = in.get<uint8_t>("return_all_logits") != 0;
  b.input_ids = in.get_vector<int32_t>("input_ids");
  b.positions = in.get_vector<int32_t>("positions");
  b.out_cache_loc = in.get_vector<int32_t>("out_cache_loc");
  b.req_pool_indices = in.get_vector<int32_t>("req_pool_indices");
  b.seq_lens = in.get_vector<int32_t>("seq_lens");
  b.prefix_lens = in.get_vector<int32_t>("prefix_lens");
  b.extend_lens = in.get_vector<int32_t>("extend_lens");
  b.extend_start_loc = in.get_vector<int32_t>("extend_start_loc");
  b.sample_steps = in.get_vector<int32_t>("sample_steps");
  b.logit_requests = in.get_vector<int32_t>("logit_requests");
  const auto n = in.get<uint64_t>("sampling count");
  // Each entry takes 36 bytes: a count beyond what is left is a corrupt message, not an allocation.
  GRT_CHECK(n <= (in.size() - in.offset()) / 36, "{}: forward batch claims {} sampling params, {} bytes are left",
            in.what(), n, in.size() - in.offset());
  b.sampling.resize(static_cast<size_t>(n));
  for (SamplingParams& p : b.sampling) {
    p.temperature = in.get<float>("temperature");
    p.top_k = in.get<int32_t>("top_k");
    p.top_p = in.get<float>("top_p");
    p.seed = in.get<uint64_t>("seed");
    p.min_p = in.get<float>("min_p");
    p.frequency_penalty = in.get<float>("frequency_penalty");
    p.presence_penalty = in.get<float>("presence_penalty");
    p.repetition_penalty = in.get<float>("repetition_penalty");
  }
  return b;
}

}  // namespace grt
