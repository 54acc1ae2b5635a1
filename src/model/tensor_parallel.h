// Tensor parallelism in the model layer (issue 16): which slice of the full model one rank holds.
// ModelConfig always describes the full model; TpLocalSizes says what rank `rank` of `size` holds:
// - query heads nq/tp each (rank r: heads [r*nq/tp, (r+1)*nq/tp));
// - KV heads nkv/tp each when nkv >= tp; else one per rank, rank r holding KV head r*nkv/tp
//   (replicated, as SGLang; tp must then be a multiple of nkv so a rank's query heads share it);
// - dense intermediate_size/tp and expert moe_intermediate_size/tp (column-parallel gate/up,
//   row-parallel down); norms and the MoE router are replicated;
// - vocabulary ceil(V/tp) rows each (rank r: rows [r*Vl, min(V, (r+1)*Vl)), the rest zero padding).
#pragma once
#include <cstdint>
#include <vector>

#include "model/model_config.h"

namespace grt {

// This process's place in its tensor-parallel group; {0, 1} means no tensor parallelism.
struct TensorParallel {
  int rank = 0;
  int size = 1;
  bool enabled() const { return size > 1; }
};

// The local extents of one rank (all in elements of the full model's dimensions).
struct TpLocalSizes {
  int64_t head_dim = 0;
  int64_t q_heads = 0;        // nq / tp
  int64_t q_head_start = 0;   // first global query head of the rank
  int64_t kv_heads = 0;       // nkv / tp, or 1 when nkv < tp (replicated)
  int64_t kv_head_start = 0;  // first global KV head of the rank
  int64_t intermediate = 0;           // intermediate_size / tp (dense layers)
  int64_t intermediate_start = 0;     // rank * intermediate
  int64_t moe_intermediate = 0;       // moe_intermediate_size / tp (each expert)
  int64_t moe_intermediate_start = 0; // rank * moe_intermediate
  int64_t vocab_rows = 0;   // ceil(V / tp): rows of the embedding / lm_head shard
  int64_t vocab_start = 0;  // rank * vocab_rows: the first token id of the shard
  int64_t vocab_real = 0;   // rows of the shard that are real tokens (the rest are zero padding)

  int64_t q_size() const { return q_heads * head_dim; }
  int64_t kv_size() const { return kv_heads * head_dim; }
};

// Throws Error when tp is not a valid group position (size >= 1, 0 <= rank < size) or a config
// field does not split across `tp.size` ranks: the error names the field, its value, the tp size
// and the tp sizes the model allows. tp {0, 1} gives the full model's sizes.
TpLocalSizes tp_local_sizes(const ModelConfig& config, const TensorParallel& tp);

// The KV heads one rank's KV cache holds (its cache rows are tp_local_kv_heads * head_dim wide).
int64_t tp_local_kv_heads(const ModelConfig& config, const TensorParallel& tp);

// Every tp size in [1, max_size] this model can be split over.
std::vector<int> allowed_tp_sizes(const ModelConfig& config, int max_size = 64);

}  // namespace grt
