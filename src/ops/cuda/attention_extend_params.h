// Kernel parameters of paged extend attention, shared by the SIMT kernel (attention_extend.cu)
// and the tensor-core kernel (attention_extend_tc.cu).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace grt::cuda {

struct ExtendParams {
  const void* q;
  int64_t q_stride;
  const void* k_cache;
  const void* v_cache;
  int64_t num_slots, max_reqs, max_context, num_rows;
  const int32_t* req_to_token;
  const int32_t* req_pool_indices;
  const int32_t* prefix_lens;
  const int32_t* extend_lens;
  const int32_t* extend_start_loc;
  void* out;
  int nq, nkv, hd, group, num_reqs, max_extend_len, ld;  // ld: shared row pitch (SIMT kernel)
  float scale_log2;
};

// Launches the tensor-core kernel when it serves this case (bf16/f16, head_dim 64 or 128,
// 16-byte aligned rows) and returns true; false leaves the work to the SIMT kernel.
bool launch_extend_tensor_core(cudaStream_t stream, const ExtendParams& p, DType dtype);

}  // namespace grt::cuda
