#include "ops/cuda/tensor_map.h"

#include "core/error.h"
#include "device/cuda/driver_api.h"

namespace grt::cuda {

CUtensorMap bf16_tensor_map(const char* what, const void* base, int64_t rows, int64_t cols, int64_t row_bytes,
                            uint32_t box_rows) {
  CUtensorMap map;
  cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  cuuint64_t strides[1] = {static_cast<cuuint64_t>(row_bytes)};
  cuuint32_t box[2] = {kTensorMapBoxCols, box_rows};
  cuuint32_t elem_strides[2] = {1, 1};
  // FLOAT_OOB_FILL_NONE: out-of-range elements are zeros (the other choice is NaN).
  const CUresult r = driver_api().tensor_map_encode_tiled(
      &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box, elem_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  GRT_CHECK(r == CUDA_SUCCESS, "{}: cuTensorMapEncodeTiled([{}, {}], row bytes {}, box {} x {}) failed: {}", what, rows,
            cols, row_bytes, kTensorMapBoxCols, box_rows, static_cast<int>(r));
  return map;
}

}  // namespace grt::cuda
