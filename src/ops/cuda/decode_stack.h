// Every dense decoder layer of one token in one persistent kernel (decode_stack.cu): the bs-1
// decode of a small model, where a layer's six kernels each pay their dependent trips (launch,
// landing, reading their input, a reduction) on top of ~10 us of weight bytes (qwen3-0.6b: 30.7
// us a layer for 11.9 us of bytes, issue 18). One block an SM; each block streams its slice of
// the next stage's weights into shared memory by bulk copies while the grid computes the current
// stage, and the stages (qkv, attention, o_proj, gate_up, down) meet at grid barriers.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/device_id.h"

namespace grt::cuda {

inline constexpr int kDecodeStackMaxLayers = 64;
inline constexpr int kDecodeStackHeadDim = 128;

// One layer's tensors (bf16, contiguous): the HF decoder layer with a fused qkv ([q; k; v] rows)
// and a fused gate_up ([gate; up] rows). qkv_bias, q_norm, k_norm may be null (absent).
struct DecodeStackLayer {
  const void* input_norm = nullptr;  // [hidden]
  const void* qkv = nullptr;         // [(q_heads + 2 kv_heads) * 128, hidden]
  const void* qkv_bias = nullptr;    // [(q_heads + 2 kv_heads) * 128] or null
  const void* q_norm = nullptr;      // [128] or null
  const void* k_norm = nullptr;      // [128] or null
  const void* o_proj = nullptr;      // [hidden, q_heads * 128]
  const void* post_norm = nullptr;   // [hidden]
  const void* gate_up = nullptr;     // [2 inter, hidden]
  const void* down = nullptr;        // [hidden, inter]
  void* k_cache = nullptr;           // [kv_slots, kv_heads * 128]
  void* v_cache = nullptr;
};

struct DecodeStackArgs {
  DecodeStackLayer layers[kDecodeStackMaxLayers];
  int num_layers = 0;
  int hidden = 0, inter = 0, q_heads = 0, kv_heads = 0;
  float eps = 0.0f;    // every RMSNorm's epsilon
  float scale = 0.0f;  // attention's softmax scale
  void* residual = nullptr;                 // bf16 [hidden]: the embedding in, the last layer's residual out
  const int32_t* positions = nullptr;       // [1]
  const int32_t* out_cache_loc = nullptr;   // [1]: the new token's KV slot
  const float* cos_sin = nullptr;           // [cos_sin_rows, 128] (ops::rope_cos_sin_cache)
  int64_t cos_sin_rows = 0;
  int64_t kv_slots = 0;
  const int32_t* req_to_token = nullptr;    // [*, table_width]
  int64_t table_width = 0;
  const int32_t* req_pool_indices = nullptr;  // [1]
  const int32_t* seq_lens = nullptr;          // [1]: cached tokens including the new one
};

// Whether the kernel runs a model of these sizes on device `d`: sm_90+ (bulk copies), head_dim
// 128, 1..16 query heads a kv head, hidden and inter multiples of 8, at most
// kDecodeStackMaxLayers layers, one block an SM resident with two stages of the largest weight
// slice (rows / SMs of the widest matrix) in shared memory. Reads device attributes once.
bool decode_stack_supported(Device d, int64_t hidden, int64_t inter, int64_t q_heads, int64_t kv_heads, int64_t layers);

// Bytes of device workspace decode_stack_one_token needs for these sizes (16-byte aligned).
size_t decode_stack_workspace_bytes(Device d, int64_t hidden, int64_t inter, int64_t q_heads, int64_t kv_heads);

// Runs a.num_layers layers on one token on the current stream of `d`: a.residual ends as the
// residual after the last layer (before the final norm); each layer's k/v caches get the token's
// K and V at out_cache_loc. Requires decode_stack_supported and 16-byte aligned tensors;
// `workspace` holds decode_stack_workspace_bytes. CUDA-graph capturable (lengths, positions and
// slots are read on the device; the grid is the SM count). Two stacks must not run concurrently
// on one device (the grid barrier and the split counters are per device).
void decode_stack_one_token(Device d, const DecodeStackArgs& a, void* workspace);

}  // namespace grt::cuda
