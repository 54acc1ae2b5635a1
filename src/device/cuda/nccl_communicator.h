// The CUDA communicator: NCCL, one process per GPU (issue 16).
//
// Bootstrap: the group's TCP star (device/tcp_group.h) carries rank 0's ncclUniqueId to the
// others; then ncclCommInitRankConfig (non-blocking, so a rank that never arrives can be given up
// on after the timeout instead of hanging in NCCL). NCCL is loaded with dlopen when the first
// group of two or more is made (GRAPHRT_NCCL_LIBRARY, else libnccl.so.2 on the loader path, else
// the CUDA toolkit's copy found at build time), so graphrt still starts where there is none.
// NCCL_NVLS_ENABLE=0 is set unless the environment says otherwise (NVLink SHARP can take a
// shared host's GPUs out of service).
//
// Device collectives are NCCL calls on current_stream(device()): stream-ordered, and captured
// into CUDA graphs like kernels. NCCL's ring/tree reductions are deterministic for one group
// and shape, and every rank receives the same bytes. Host collectives run over TCP.
//
// Faults: a watchdog thread polls ncclCommGetAsyncError and the TCP connections (a peer whose
// process ends closes them at once). On either it aborts the NCCL communicator, which ends
// kernels stuck waiting for the dead peer instead of hanging the GPU, breaks the TCP group (so
// the peers learn too), and keeps the reason: the next collective on this rank throws it (naming
// the op, this rank, the peer or NCCL's error and the tensor), as do host collectives. Each NCCL
// call is checked; an error names the op, the rank and the shape with NCCL's own text.
#pragma once
#include <memory>

#include "device/communicator.h"

namespace grt::cuda {

// Joins the group (options.size >= 2, options.device cuda:N). Blocks until every rank has joined
// and NCCL is initialised, or throws after options.timeout_seconds.
std::unique_ptr<Communicator> connect_nccl_communicator(const CommunicatorOptions& options);

}  // namespace grt::cuda
