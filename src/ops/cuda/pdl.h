// Programmatic dependent launch (PDL) of the decode-path kernels: whether it is on, for the host.
// With PDL a kernel is launched while its predecessor on the stream still runs; it runs what does
// not depend on the predecessor (weight prefetches) and then waits in griddepcontrol.wait until
// the predecessor has finished and its writes are visible. Stream capture turns these launches
// into programmatic edges of the graph. Kernels, the launch helper and the device-side rules are
// in ops/cuda/pdl.cuh.
#pragma once

namespace grt::cuda {

// True when kernels launched through launch_pdl on CUDA device `index` carry the programmatic
// stream serialization attribute: compute capability 9.0 or newer, and neither the environment
// (GRAPHRT_DISABLE_PDL set to anything but "" or "0", read once) nor set_pdl_override turned it off.
bool pdl_enabled(int index);

// Tests and benchmarks: 1 forces PDL on (where the device supports it), 0 off, -1 back to the
// environment. Affects launches made after the call (captured graphs keep what they captured).
void set_pdl_override(int mode);

// Kernels that may let their dependents launch BEFORE their own griddepcontrol.wait ("trigger
// first", ops/cuda/pdl.cuh point 3), chosen by GRAPHRT_PDL_TRIGGER_FIRST (read once):
//  0: none (every kernel waits, then triggers); prepare: prepare_qkv's kernels, so the decode
//  attention's blocks launch while the qkv GEMV still runs and do their pre-wait part (metadata,
//  the K/V preload of old positions) under it; norms: the RMSNorm kernels (rms_norm,
//  fused_add_rms_norm_), so the next GEMV's weight reads start under the norm's predecessor;
//  all: both. Default prepare: measured on the H100 (bench/results/h100_2026-11-24_s12_pdlfirst,
//  graph step, three interleaved rounds against 0): qwen3-0.6b bs 1 / 8 / 64 -0.018 / +0.004 (one
//  outlier process aside) / -0.007 ms, qwen3-30b-a3b bs 1 -0.054, llama-3.1-8b bs 1 -0.033. norms
//  measured slower (MoE bs 1 +0.120, llama +0.049, qwen +0.004: a GEMV launched under a
//  bandwidth-bound predecessor slows both, the lm_head most), so it stays off, and all lost
//  with it (MoE +0.185).
enum class TriggerFirstSite { prepare = 1, norms = 2 };
bool pdl_trigger_first(TriggerFirstSite site);

// Tests: a GRAPHRT_PDL_TRIGGER_FIRST mode (0 none, 1 prepare, 2 norms, 3 all) for launches made
// after the call, or -1 back to the environment.
void set_pdl_trigger_first(int mode);

}  // namespace grt::cuda
