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

}  // namespace grt::cuda
