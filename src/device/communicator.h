// Communicator: the collectives of one tensor-parallel group (issue 16). A rank is a process and
// holds one communicator for its device. Process-wide state below (allocator registry, cuBLASLt
// handles, split-op registry, capture thread-locals) stays per process for that reason.
//
// Device collectives are stream-ordered on current_stream(device()) and may be captured into
// graphs: on CUDA they are NCCL calls (NCCL captures), on the CPU a task on the CPU stream that
// exchanges the bytes with the other ranks when it runs (so a CPU graph replays it too). Every
// rank must call the same collectives in the same order with the same shapes; the sums are
// reduced in rank order on every backend, so every rank gets bitwise the same result.
//
// Host collectives are synchronous (they never touch a stream) and carry control: the batches
// rank 0 sends its followers, agreement on which graph shapes every rank captured.
//
// Faults: a peer that dies or stops answering within the timeout ends the call with an Error
// naming the op, this rank, the peer and the tensor's shape; the group never hangs past the timeout.
// One exception: in broadcast_bytes from root 0, the followers wait for rank 0's bytes without a
// deadline (that is how a follower waits for its leader's next batch, however idle the server);
// rank 0 dying or closing the group still ends that wait at once. How a device collective's
// fault reaches the caller is the backend's (device/cpu/cpu_communicator.h,
// device/cuda/nccl_communicator.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/device_id.h"
#include "core/tensor.h"

namespace grt {

// Where and how a rank joins its group.
struct CommunicatorOptions {
  int rank = 0;
  int size = 1;
  Device device = Device::cpu();
  // host:port that rank 0 listens on and the others connect to (--dist-init-addr).
  std::string init_addr = "127.0.0.1:0";
  // Seconds a collective may wait for a peer before failing (--dist-timeout).
  double timeout_seconds = 600;
  // Rank 0 only: a socket already listening at init_addr (device/tcp_group.h's listen_tcp), so
  // that an address handed to the other ranks before joining cannot be taken by anyone else
  // meanwhile. connect_communicator closes it, whatever happens. -1: rank 0 binds init_addr.
  // Needs size >= 2 (a group of one listens on nothing).
  int listen_fd = -1;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  Device device() const { return device_; }

  // t (contiguous, on device(); f32, bf16 or f16) becomes the sum over ranks, in place.
  virtual void all_reduce_sum_(const Tensor& t) = 0;
  // out = the ranks' `in` concatenated along dimension 0 (out: [size() * in.size(0), ...], same
  // dtype, contiguous, on device()).
  virtual void all_gather(const Tensor& in, const Tensor& out) = 0;
  // t on every rank becomes root's t.
  virtual void broadcast_(const Tensor& t, int root) = 0;

  // Host collectives (synchronous).
  virtual void barrier() = 0;
  // Every rank's `bytes` becomes root's (resized as needed).
  virtual void broadcast_bytes(std::vector<uint8_t>& bytes, int root) = 0;
  // Element-wise minimum over ranks (the same length on every rank): agreement, e.g. a shape is
  // kept only where every rank captured it.
  virtual std::vector<int64_t> all_reduce_min(const std::vector<int64_t>& values) = 0;

  // Breaks the group from any thread (e.g. a watcher that saw a rank die): this rank's pending
  // and later collectives fail with `reason`, and the peers' fail as they see this rank leave.
  // Idempotent; a no-op for a group of one.
  virtual void abort(const std::string& reason) { (void)reason; }

 protected:
  Communicator(int rank, int size, Device device) : rank_(rank), size_(size), device_(device) {}

 private:
  int rank_, size_;
  Device device_;
};

// Joins the group described by `options` (blocks until every rank has joined or the timeout
// passes). size 1 gives a communicator whose collectives are no-ops.
std::unique_ptr<Communicator> connect_communicator(const CommunicatorOptions& options);

}  // namespace grt
