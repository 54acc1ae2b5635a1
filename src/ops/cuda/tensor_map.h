// TMA tensor maps of row-major bf16 matrices (sm_90), made on the host per launch through the
// driver's cuTensorMapEncodeTiled (device/cuda/driver_api.h), for the kernels that feed wgmma
// from bulk tensor copies (gate_up_swiglu_m192.cu, gate_up_swiglu_decode.cu; the device side of
// the copy is tensor_copy.cuh).
#pragma once
#include <cuda.h>

#include <cstdint>

namespace grt::cuda {

// Columns of every box: 64 bf16 = 128 bytes, the span of the 128-byte swizzle, so a box lands in
// shared memory in the layout of wg::sw128 (attention_wgmma.cuh) at a 1024-byte aligned address.
inline constexpr uint32_t kTensorMapBoxCols = 64;

// The tensor map of the bf16 [rows, cols] matrix at `base` (row stride `row_bytes`: a multiple of
// 16; base 16-byte aligned), read in boxes of kTensorMapBoxCols columns x `box_rows` rows
// (1..256) with the 128-byte swizzle and 256-byte L2 promotion. Box rows at or past `rows` (and
// columns past `cols`) read as zeros and still count their bytes towards the copy's barrier.
// Throws Error naming `what` and the shape when the driver refuses the map.
CUtensorMap bf16_tensor_map(const char* what, const void* base, int64_t rows, int64_t cols, int64_t row_bytes,
                            uint32_t box_rows);

}  // namespace grt::cuda
