// The CPU communicator: ranks are processes joined by TCP through rank 0 (device/tcp_group.h), so
// CI can run real tensor-parallel groups on one machine without MPI or GPUs.
//
// Device collectives (all_reduce_sum_, all_gather, broadcast_) are tasks on the CPU stream
// (cpu::launch): stream-ordered after the work that produced their input, and recorded by a CPU
// graph capture like any kernel, so every replay exchanges the bytes again. They run on the
// stream's worker thread over the group's "device" connection; host collectives run on the
// calling thread over a second connection, so the two never interleave bytes whatever is still
// queued on the stream.
//
// Order: device collectives run one at a time, in the order their tasks run. As with NCCL, two
// collectives on streams not ordered with each other (e.g. forked lanes of one graph) may run in
// a different order on different ranks; the header check catches differing ops or sizes, not two
// same-sized collectives swapped, so keep a rank's collectives on one stream (or ordered).
//
// Sums: rank 0 receives every rank's tensor and adds them in rank order (f32 accumulation, one
// rounding for bf16/f16), then sends the result to everyone: every rank holds bitwise the same
// bytes.
//
// Errors: a collective failing inside a stream task (a peer died, a timeout, ranks calling
// different collectives) cannot throw to its caller, who has long returned. It throws inside the
// task, so the stream's error slot keeps it and the caller's next synchronize/copy_to_host on
// that stream throws it (naming the op, the rank, the peer and the tensor). It also breaks the
// group at once: this rank's sockets are shut down, so every peer's pending and later collectives
// fail within moments too (device ones at their next synchronize, host ones right away), and the
// processes exit non-zero through their normal error path. Nothing waits past the timeout.
#pragma once
#include <memory>

#include "device/communicator.h"

namespace grt::cpu {

// Joins the group (options.size >= 2, options.device cpu). Blocks until every rank has joined.
std::unique_ptr<Communicator> connect_cpu_communicator(const CommunicatorOptions& options);

}  // namespace grt::cpu
