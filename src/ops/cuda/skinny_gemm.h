// The skinny GEMM kernel (sm_90a; the host rules are ops/skinny_gemm.h): out[M, N] = x[M, K] ·
// w[N, K]ᵀ for M <= 64, bf16 in and out, f32 accumulation. One 64-row wgmma tile, `tile_n` output
// columns a block, K split over the `split` blocks of a thread block cluster whose f32 partial
// sums meet in distributed shared memory in cluster-rank order (deterministic). Weights stream
// through TMA tensor copies from one producer thread (requested before the PDL wait), x after it.
#pragma once
#include <cstdint>

#include "core/device_id.h"

namespace grt::cuda {

// True when this process can run the kernel on the current device (an sm_90 GPU, sm_90a code built).
bool skinny_gemm_device_ok();

// The SM count of cuda:`index` (read once per device), for the plan rule.
int skinny_gemm_sms(int index);

// x: [rows, k] bf16 with row stride x_stride (elements); w: [n, k] bf16 contiguous; out: contiguous
// [rows, n] bf16. tile_n 64 or 128 dividing n; split 1, 2, 4 or 8 with k / 64 >= 2 * split;
// `opt`: launch choices that never change the bits (see SkinnyLaunch); rows
// >= 1 (more than 64 run more row tiles); 16-byte aligned rows; n, k < 2^31. Callers have
// checked ops::skinny_gemm_unfit (not re-checked here beyond tile_n / split). Output (r, c) is
// the f32 sum over the splits' partials in split order, rounded to bf16 once: its bits depend on
// x row r, w, n, k, tile_n and split only (not on rows). Launches on the device's current stream
// (capturable, PDL).
struct SkinnyLaunch {
  // The most x slices in flight a block, 1..8 (the weight ring gets the rest of the shared memory
  // that keeps the grid in one wave).
  int x_stages = 3;
  // Ask the driver for the largest shared-memory carveout (cudaSharedmemCarveoutMaxShared) before
  // the launch; false leaves the driver's choice (session 11's run1). Sticks to the kernel for the
  // rest of the process once set.
  bool max_carveout = false;
};
void skinny_gemm(Device d, const void* x, int64_t x_stride, const void* w, void* out, int64_t rows, int64_t n,
                 int64_t k, int tile_n, int split, SkinnyLaunch opt = {});

}  // namespace grt::cuda
