// A decoder model's weights on a device, in the run dtype, laid out for the kernels: q/k/v
// fused into one [q+2kv, hidden] matrix and gate/up into one [2*intermediate, hidden] matrix.
// Under tensor parallelism (model/tensor_parallel.h) a rank holds only its shard: the shapes
// below with local extents (nq, nkv, I, Im of TpLocalSizes; V the shard's ceil(V/tp) rows, padding
// rows zero); norms and the router are whole.
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/model_config.h"
#include "model/tensor_parallel.h"

namespace grt {

struct LayerWeights {
  Tensor input_norm;     // [H]
  Tensor qkv;            // [(nq + 2 nkv) * hd, H]
  Tensor qkv_bias;       // [(nq + 2 nkv) * hd] (Qwen2) or undefined
  Tensor q_norm, k_norm; // [hd] (Qwen3) or undefined
  Tensor o_proj;         // [H, nq * hd]
  Tensor post_norm;      // [H]
  Tensor gate_up;        // [2 I, H] (dense layers)
  Tensor down;           // [H, I] (dense layers)
  // Sparse MoE layers (config.is_moe_layer): the router and every expert's MLP, grouped so one
  // launch serves all experts; expert e's gate rows are [e, 0:Im), its up rows [e, Im:2 Im).
  Tensor router;          // [E, H]
  Tensor expert_gate_up;  // [E, 2 Im, H]
  Tensor expert_down;     // [E, H, Im]
};

struct ModelWeights {
  Tensor embed;       // [V, H]
  Tensor final_norm;  // [H]
  Tensor lm_head;     // [V, H] (the embedding itself when tied)
  std::vector<LayerWeights> layers;

  // Bytes of all distinct weight tensors (a tied lm_head counted once).
  size_t bytes() const;
};

// Bytes of weights one decode step of `rows` tokens reads, a bytes roofline's numerator: every
// tensor of bytes() once, except
// - an embedding apart from lm_head: only the `rows` rows gathered from it (tied, it is read whole
//   as lm_head);
// - a sparse layer's experts: the share a batch of `rows` tokens is expected to route to when its
//   top-k choices are uniform and independent, 1 - (1 - k / E)^rows of them.
// Error when rows < 1.
double decode_step_weight_bytes(const ModelConfig& config, const ModelWeights& weights, int64_t rows);

// Loads a Hugging Face folder (config already parsed): every tensor checked, converted to
// `dtype`, fused and uploaded to `device`. Errors name the file and tensor. With tensor
// parallelism only the rank's slices are read from the files; `bytes_read` (if given) receives
// the tensor bytes read (SafetensorsFolder::bytes_read).
ModelWeights load_weights(const ModelConfig& config, const std::string& folder, Device device, DType dtype,
                          const TensorParallel& tp = {}, uint64_t* bytes_read = nullptr);

// Error naming the first Hugging Face tensor (and its shard-independent name) that holds a NaN or
// an infinity. One pass over every weight on its device, one flag per tensor, one copy back.
// `tp`: the shard `weights` holds (each tensor's rank slice is checked).
void check_weights_finite(const ModelConfig& config, const ModelWeights& weights, const TensorParallel& tp = {});

// Deterministic random weights made directly on the device (no host copy): the same values as
// make-model writes for the same config and seed, so builtin:<preset> and its folder agree. A
// tensor-parallel rank gets exactly its slices of those values (the full tensors are never made).
ModelWeights random_weights(const ModelConfig& config, Device device, DType dtype, uint64_t seed,
                            const TensorParallel& tp = {});

}  // namespace grt
