#include "device/cpu/cpu_communicator.h"

#include <algorithm>
#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "device/collective_checks.h"
#include "device/communicator_backends.h"
#include "device/cpu/cpu_launch.h"
#include "device/stream.h"
#include "device/tcp_group.h"

namespace grt::cpu {
namespace {

constexpr int kHostChannel = 0;
constexpr int kDeviceChannel = 1;

float load(const void* p, DType dt, size_t i) {
  switch (dt) {
    case DType::F32:
      return static_cast<const float*>(p)[i];
    case DType::BF16:
      return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    default:
      return f16_to_float(static_cast<const uint16_t*>(p)[i]);
  }
}

void store(void* p, DType dt, size_t i, float v) {
  switch (dt) {
    case DType::F32:
      static_cast<float*>(p)[i] = v;
      break;
    case DType::BF16:
      static_cast<uint16_t*>(p)[i] = float_to_bf16(v);
      break;
    default:
      static_cast<uint16_t*>(p)[i] = float_to_f16(v);
      break;
  }
}

// What every rank must agree on for a tensor collective: its bytes and dtype (and a root).
uint64_t tensor_check(size_t bytes, DType dt, int root = 0) {
  return (static_cast<uint64_t>(bytes) << 16) ^ (static_cast<uint64_t>(dt) << 8) ^ static_cast<uint64_t>(root);
}

class CpuCommunicator : public Communicator {
 public:
  explicit CpuCommunicator(const CommunicatorOptions& o)
      : Communicator(o.rank, o.size, o.device),
        group_(std::make_shared<TcpGroup>(o.rank, o.size, o.init_addr, o.timeout_seconds, 2, o.listen_fd)) {}

  // Device collectives still queued (or captured in graphs) hold the group through their own
  // shared_ptr: they run, or fail, by themselves after the communicator is gone.
  ~CpuCommunicator() override = default;

  void abort(const std::string& reason) override { group_->abort(reason); }

  void all_reduce_sum_(const Tensor& t) override {
    check_collective_tensor(*this, "all_reduce_sum_", t);
    if (t.numel() == 0) return;
    launch(current_stream(device()), [g = group_, data = t.data(), n = static_cast<size_t>(t.numel()), dt = t.dtype(),
                                      bytes = t.nbytes(), what = describe_tensor(t)] {
      TcpGroup::Collective c(*g, kDeviceChannel, {CollectiveOp::AllReduceSum, tensor_check(bytes, dt), what});
      if (g->rank() != 0) {
        c.send_up(data, bytes);
        c.recv_down(data, bytes);
        return;
      }
      std::vector<float> acc(n);
      for (size_t i = 0; i < n; ++i) acc[i] = load(data, dt, i);
      std::vector<uint8_t> peer(bytes);
      for (int r = 1; r < g->size(); ++r) {
        c.recv_up(r, peer.data(), bytes);
        for (size_t i = 0; i < n; ++i) acc[i] += load(peer.data(), dt, i);
      }
      for (size_t i = 0; i < n; ++i) store(data, dt, i, acc[i]);
      for (int r = 1; r < g->size(); ++r) c.send_down(r, data, bytes);
    });
  }

  void all_gather(const Tensor& in, const Tensor& out) override {
    check_all_gather(*this, in, out);
    if (out.numel() == 0) return;
    launch(current_stream(device()), [g = group_, src = in.data(), dst = static_cast<char*>(out.data()),
                                      bytes = in.nbytes(), dt = in.dtype(), what = describe_tensor(in)] {
      TcpGroup::Collective c(*g, kDeviceChannel, {CollectiveOp::AllGather, tensor_check(bytes, dt), what});
      const size_t total = bytes * static_cast<size_t>(g->size());
      if (g->rank() != 0) {
        c.send_up(src, bytes);
        c.recv_down(dst, total);
        return;
      }
      std::memmove(dst, src, bytes);
      for (int r = 1; r < g->size(); ++r) c.recv_up(r, dst + bytes * static_cast<size_t>(r), bytes);
      for (int r = 1; r < g->size(); ++r) c.send_down(r, dst, total);
    });
  }

  void broadcast_(const Tensor& t, int root) override {
    check_collective_tensor(*this, "broadcast_", t);
    check_root(*this, "broadcast_", root);
    if (t.numel() == 0) return;
    launch(current_stream(device()),
           [g = group_, data = t.data(), bytes = t.nbytes(), dt = t.dtype(), root, what = describe_tensor(t)] {
             TcpGroup::Collective c(
                 *g, kDeviceChannel,
                 {CollectiveOp::Broadcast, tensor_check(bytes, dt, root), fmt::format("{} from rank {}", what, root)});
             if (g->rank() != 0) {
               c.send_up(data, g->rank() == root ? bytes : 0);
               c.recv_down(data, bytes);
               return;
             }
             for (int r = 1; r < g->size(); ++r) {
               if (r == root)
                 c.recv_up(r, data, bytes);
               else
                 c.recv_up(r, nullptr, 0);
             }
             for (int r = 1; r < g->size(); ++r) c.send_down(r, data, bytes);
           });
  }

  void barrier() override { group_->barrier(kHostChannel); }
  void broadcast_bytes(std::vector<uint8_t>& bytes, int root) override {
    group_->broadcast_bytes(kHostChannel, bytes, root);
  }
  std::vector<int64_t> all_reduce_min(const std::vector<int64_t>& values) override {
    return group_->all_reduce_min(kHostChannel, values);
  }

 private:
  std::shared_ptr<TcpGroup> group_;
};

}  // namespace

std::unique_ptr<Communicator> connect_cpu_communicator(const CommunicatorOptions& options) {
  GRT_CHECK(options.device.is_cpu(), "the CPU communicator got device {}", options.device.str());
  GRT_CHECK(options.size >= 2, "the CPU communicator needs size >= 2, got {}", options.size);
  return std::make_unique<CpuCommunicator>(options);
}

}  // namespace grt::cpu

namespace grt {
std::unique_ptr<Communicator> make_cpu_communicator(const CommunicatorOptions& options) {
  return cpu::connect_cpu_communicator(options);
}
}  // namespace grt
