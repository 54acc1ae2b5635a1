#include "model/tensor_parallel.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace grt {
namespace {

// The first reason `size` ranks cannot split `c`, or "" when they can.
std::string split_problem(const ModelConfig& c, int size) {
  const int nq = c.num_attention_heads, nkv = c.num_key_value_heads;
  if (nq % size != 0) return fmt::format("num_attention_heads {} does not divide by {}", nq, size);
  if (nkv >= size && nkv % size != 0) return fmt::format("num_key_value_heads {} does not divide by {}", nkv, size);
  if (nkv < size && size % nkv != 0)
    return fmt::format("num_key_value_heads {} is below {} and {} is not a multiple of it (KV heads are replicated "
                       "only when every rank's query heads share one)",
                       nkv, size, size);
  bool dense = false;
  for (int l = 0; l < c.num_hidden_layers; ++l) dense = dense || !c.is_moe_layer(l);
  if (dense && c.intermediate_size % size != 0)
    return fmt::format("intermediate_size {} does not divide by {}", c.intermediate_size, size);
  if (c.is_moe() && c.moe_intermediate_size % size != 0)
    return fmt::format("{} {} does not divide by {}",
                       c.arch == Arch::Mixtral ? "intermediate_size (of each expert)" : "moe_intermediate_size",
                       c.moe_intermediate_size, size);
  return "";
}

}  // namespace

std::vector<int> allowed_tp_sizes(const ModelConfig& config, int max_size) {
  std::vector<int> out;
  for (int s = 1; s <= max_size; ++s)
    if (split_problem(config, s).empty()) out.push_back(s);
  return out;
}

TpLocalSizes tp_local_sizes(const ModelConfig& c, const TensorParallel& tp) {
  GRT_CHECK(tp.size >= 1 && tp.rank >= 0 && tp.rank < tp.size, "tensor parallel rank {} of tp size {} is not valid",
            tp.rank, tp.size);
  GRT_CHECK(c.num_attention_heads > 0 && c.num_key_value_heads > 0 && c.vocab_size > 0,
            "cannot split model {} over tp size {}: it has {} query heads, {} KV heads and a vocabulary of {}",
            c.source, tp.size, c.num_attention_heads, c.num_key_value_heads, c.vocab_size);
  if (const std::string why = split_problem(c, tp.size); !why.empty())
    GRT_FAIL("--tp-size {} does not fit model {}: {} (tp sizes this model allows: {})", tp.size, c.source, why,
             fmt::join(allowed_tp_sizes(c), ", "));
  const int64_t size = tp.size, rank = tp.rank, nkv = c.num_key_value_heads;
  TpLocalSizes s;
  s.head_dim = c.head_dim;
  s.q_heads = c.num_attention_heads / size;
  s.q_head_start = rank * s.q_heads;
  if (nkv >= size) {
    s.kv_heads = nkv / size;
    s.kv_head_start = rank * s.kv_heads;
  } else {
    s.kv_heads = 1;
    s.kv_head_start = rank * nkv / size;
  }
  s.intermediate = c.intermediate_size / size;
  s.intermediate_start = rank * s.intermediate;
  s.moe_intermediate = c.moe_intermediate_size / size;
  s.moe_intermediate_start = rank * s.moe_intermediate;
  s.vocab_rows = (c.vocab_size + size - 1) / size;
  s.vocab_start = rank * s.vocab_rows;
  s.vocab_real = std::max<int64_t>(0, std::min<int64_t>(c.vocab_size - s.vocab_start, s.vocab_rows));
  return s;
}

int64_t tp_local_kv_heads(const ModelConfig& config, const TensorParallel& tp) {
  return tp_local_sizes(config, tp).kv_heads;
}

}  // namespace grt
