#include "device/communicator.h"

#include <unistd.h>

#include "core/error.h"
#include "device/collective_checks.h"
#include "device/communicator_backends.h"
#include "device/device.h"
#include "device/stream.h"

namespace grt {
namespace {

// A group of one: nothing to exchange. The arguments are still checked, so code that is wrong
// for a group of two fails at TP 1 too.
class SoloCommunicator : public Communicator {
 public:
  explicit SoloCommunicator(Device device) : Communicator(0, 1, device) {}
  void all_reduce_sum_(const Tensor& t) override { check_collective_tensor(*this, "all_reduce_sum_", t); }
  void all_gather(const Tensor& in, const Tensor& out) override {
    check_all_gather(*this, in, out);
    current_stream(device()).copy_async(out.data(), in.data(), in.nbytes());
  }
  void broadcast_(const Tensor& t, int root) override {
    check_collective_tensor(*this, "broadcast_", t);
    check_root(*this, "broadcast_", root);
  }
  void barrier() override {}
  void broadcast_bytes(std::vector<uint8_t>&, int root) override { check_root(*this, "broadcast_bytes", root); }
  std::vector<int64_t> all_reduce_min(const std::vector<int64_t>& values) override { return values; }
};

}  // namespace

std::unique_ptr<Communicator> connect_communicator(const CommunicatorOptions& options) {
  // The listening socket is ours to close, whatever happens (the backends accept on a copy).
  struct Closer {
    int fd;
    ~Closer() {
      if (fd >= 0) ::close(fd);
    }
  } closer{options.listen_fd};
  GRT_CHECK(options.size >= 1, "a tensor-parallel group needs size >= 1, got {}", options.size);
  GRT_CHECK(options.rank >= 0 && options.rank < options.size, "rank {} is outside a group of size {}", options.rank,
            options.size);
  GRT_CHECK(options.timeout_seconds > 0, "the dist timeout must be > 0 seconds, got {}", options.timeout_seconds);
  check_device(options.device);
  if (options.size == 1) return std::make_unique<SoloCommunicator>(options.device);
  if (options.device.is_cpu()) return make_cpu_communicator(options);
  return make_nccl_communicator(options);
}

#ifndef GRAPHRT_WITH_NCCL
std::unique_ptr<Communicator> make_nccl_communicator(const CommunicatorOptions& options) {
  GRT_FAIL("rank {} of {} on {}: graphrt was built without {}, so it has no NCCL communicator", options.rank,
           options.size, options.device.str(),
#ifdef GRAPHRT_WITH_CUDA
           "nccl.h (configure with -DGRAPHRT_NCCL_ROOT=<folder with include/nccl.h>)"
#else
           "CUDA"
#endif
  );
}
#endif

}  // namespace grt
