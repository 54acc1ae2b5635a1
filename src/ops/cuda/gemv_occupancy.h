// Occupancy of the weight-holding small-M GEMV kernels (gemv_row1.cu, gemv_rows.cu), which keep
// their blocks' weights in shared memory and must fit one wave.
#pragma once
#include <cstddef>

namespace grt::cuda::gemv_detail {

// Blocks of `kernel` (a __global__ function, `threads` a block) an SM holds with `smem` bytes of
// dynamic shared memory a block, on device `index`; computed once per (device, kernel, smem) and
// cached (thread-safe). Where smem > 0 the kernel is first allowed the most shared memory a block
// may take and the largest carveout (session 22 call E: the driver's own carveout made qwen3-0.6b
// bs 1 0.861-0.887 -> 0.897-0.927 ms). 0 where smem exceeds what a block may take. `what` names
// the kernel in errors.
int gemv_blocks_per_sm(int index, const void* kernel, int threads, size_t smem, const char* what);

}  // namespace grt::cuda::gemv_detail
