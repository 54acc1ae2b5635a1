// The small-batch expert MLPs of moe_experts on CUDA (ops/moe.h): grouped GEMVs for few rows per
// expert, used by moe.cu when the host-known slot count is small (decode).
#pragma once
#include <cuda_runtime_api.h>

#include "ops/moe_args.h"

namespace grt::cuda {

// Same contract as the tiled grouped GEMMs: reads the device-side groups (sorted_slots,
// block_expert), writes act rows and out rows of used blocks only, and sizes its grids from
// host values (a.slots, a.max_rows), so it is capture-safe and right for any routing. Each
// active expert's weights are streamed from memory once per (up to) 4 of its rows.
// Needs a.block_rows <= 32, bf16, hidden and inter multiples of 8.
void moe_experts_gemv(cudaStream_t s, const ops::MoeExpertsArgs& a);

// The gate_up half alone (a.act written, a.out untouched). pdl_device >= 0: launched with PDL
// on that device (ops/cuda/pdl.cuh; the kernel waits before its first read of the groups and
// triggers right after, so the next kernel's weight prefetch overlaps this one).
void moe_experts_gemv_gate_up(cudaStream_t s, const ops::MoeExpertsArgs& a, int pdl_device);

}  // namespace grt::cuda
