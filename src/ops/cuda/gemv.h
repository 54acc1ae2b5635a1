// The small-M (decode-shaped) path of linear on CUDA: a weight-streaming kernel used instead of
// cuBLASLt, which reaches only about a third of the memory bandwidth when x has a few rows.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/device_id.h"
#include "core/dtype.h"

namespace grt::cuda {

// Most rows of x the narrow small-M kernel takes (two mma column tiles of 8; MoE's shapes).
constexpr int64_t kGemvMaxRows = 16;
// Most rows the wide kernel (gemv_wide.cu, 17..64 rows) takes.
constexpr int64_t kGemvWideMaxRows = 64;

// Most rows of x the small-M path takes; above, cuBLASLt. GRAPHRT_GEMV_MAX_ROWS=16|32|64 (read
// once; default 16: the wide kernel is opt-in, slower than cuBLASLt on the H100 in sessions 5
// and 6). A row's bits depend on its class only: 1..16 rows (the narrow kernel) or
// 17..64 (the wide one), never on M within a class.
int64_t gemv_max_rows();

// Tests: forces GRAPHRT_GEMV_NORM_ONE_PASS (0 row by row, 1 one pass; -1 back to the
// environment) of the small-M RMSNorm prologue. Host side, not thread-safe.
void set_gemv_norm_one_pass(int mode);
// Tests: forces GRAPHRT_GEMV_NORM_PACKED (0 a conversion an element, 1 packed pairs; -1 back to the
// environment) of the small-M RMSNorm'ed x. Host side, not thread-safe.
void set_gemv_norm_packed(int mode);
// Tests: forces the register budget of the one-tile small-M kernels (GRAPHRT_GEMV_OCC: 0 auto, 2 or
// 3 blocks an SM; -1 back to the environment). The same bits whichever. Host side, not thread-safe.
void set_gemv_occ(int mode);
// Tests: forces GRAPHRT_GEMV_CLUSTER_PUSH (0 the cluster's owners pull the sums between two
// barriers, 1 every block pushes them to their owners; -1 back to the environment). The same bits
// either way. Host side, not thread-safe.
void set_gemv_cluster_push(int mode);
// Tests: forces GRAPHRT_GEMV_STAGE (0 off, 2 / 3: the packed-norm kernels copy their warps' weights
// into shared memory before pdl_wait, at 2 / 3 blocks an SM; -1 back to the environment). The same
// bits whichever. Host side, not thread-safe.
void set_gemv_stage(int mode);
// The 1-row kernel (gemv_row1.cu): mode -1 the environment (GRAPHRT_GEMV_ROW1), 0 off, 1 weights
// held in registers, 2 in shared memory (the default); units
// a warp -1 the environment (GRAPHRT_GEMV_ROW1_UNITS), 0 auto, 1, 2 or 4. For tests and A/B.
void set_gemv_row1(int mode);
void set_gemv_row1_units(int units);
// Launches of the 1-row kernel in this process so far (tests: whether a call took it).
int64_t gemv_row1_launches();
// The few-row kernel (gemv_rows.cu, 3..16 rows of bf16): mode -1 the environment (GRAPHRT_GEMV_ROWS),
// 0 off, 1 on; units (8 output columns) a block -1 the environment (GRAPHRT_GEMV_ROWS_TB), 0 auto,
// 1, 2, 4 or 8 (never the bits: its K groups are fixed by K). For tests and A/B.
void set_gemv_rows(int mode);
void set_gemv_rows_tb(int tb);
// Launches of the few-row kernel in this process so far (tests: whether a call took it).
int64_t gemv_rows_launches();

// Bytes a weight needs for the wide kernel to take 17..64 rows (smaller ones: cuBLASLt, and no
// decode fusion): GRAPHRT_GEMV_WIDE_MIN_MB (read once; default 0, every weight). The rule reads
// only the weight's shape, so a row's bits still depend on M's class alone.
int64_t gemv_wide_min_bytes();

// out[M, N] = x[M, K] (row stride x_stride) * w[N, K]^T + bias[N] (bias may be null), launched on
// `stream` of device `d` (already current) when the small-M kernel handles the call: bf16/f16
// inputs, output of the input dtype or f32, bias f32/bf16/f16, 1 <= M <= gemv_max_rows(),
// K % 8 == 0, w and every row of x 16-byte aligned. Returns false, launching nothing, otherwise.
bool linear_small_m(Device d, cudaStream_t stream, const void* x, int64_t x_stride, DType in_dtype, const void* w,
                    const void* bias, DType bias_dtype, void* out, DType out_dtype, int64_t M, int64_t N, int64_t K);

}  // namespace grt::cuda
