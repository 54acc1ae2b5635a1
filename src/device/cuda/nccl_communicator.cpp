#ifdef GRAPHRT_WITH_NCCL  // else device/communicator.cpp says why there is no NCCL
#include "device/cuda/nccl_communicator.h"

#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "device/collective_checks.h"
#include "device/communicator_backends.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda/cuda_stream.h"
#include "device/stream.h"
#include "device/tcp_group.h"

namespace grt::cuda {
namespace {

constexpr int kHostChannel = 0;
constexpr int kWatchChannel = 1;  // nobody writes on it: readable means the peer is gone

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The NCCL entry points graphrt uses, from a dlopen'ed libnccl.
struct NcclApi {
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclCommAbort) CommAbort = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclCommFinalize) CommFinalize = nullptr;
  decltype(&::ncclAllReduce) AllReduce = nullptr;
  decltype(&::ncclAllGather) AllGather = nullptr;
  decltype(&::ncclBroadcast) Broadcast = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGetLastError) GetLastError = nullptr;
  int version = 0;

  static const NcclApi& get() {
    static const NcclApi api = load();
    return api;
  }

 private:
  static NcclApi load() {
    std::vector<std::string> candidates;
    if (const char* p = std::getenv("GRAPHRT_NCCL_LIBRARY"); p && *p) candidates.push_back(p);
    candidates.push_back("libnccl.so.2");
#ifdef GRAPHRT_NCCL_LIBRARY_HINT
    candidates.push_back(GRAPHRT_NCCL_LIBRARY_HINT);
#endif
    void* handle = nullptr;
    std::string tried;
    for (const auto& c : candidates) {
      handle = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) break;
      const char* e = ::dlerror();
      tried += fmt::format("\n  {}: {}", c, e ? e : "not found");
    }
    GRT_CHECK(handle,
              "loading NCCL for a CUDA tensor-parallel group failed (set GRAPHRT_NCCL_LIBRARY to libnccl.so.2):{}",
              tried);
    NcclApi a;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(handle, name));
      GRT_CHECK(fn, "NCCL has no {} (graphrt needs NCCL >= 2.18)", name);
    };
    sym(a.GetVersion, "ncclGetVersion");
    sym(a.GetUniqueId, "ncclGetUniqueId");
    sym(a.CommInitRankConfig, "ncclCommInitRankConfig");
    sym(a.CommGetAsyncError, "ncclCommGetAsyncError");
    sym(a.CommAbort, "ncclCommAbort");
    sym(a.CommDestroy, "ncclCommDestroy");
    sym(a.CommFinalize, "ncclCommFinalize");
    sym(a.AllReduce, "ncclAllReduce");
    sym(a.AllGather, "ncclAllGather");
    sym(a.Broadcast, "ncclBroadcast");
    sym(a.GetErrorString, "ncclGetErrorString");
    sym(a.GetLastError, "ncclGetLastError");
    a.GetVersion(&a.version);
    return a;
  }
};

ncclDataType_t nccl_type(DType dt) {
  switch (dt) {
    case DType::F32:
      return ncclFloat32;
    case DType::BF16:
      return ncclBfloat16;
    default:
      return ncclFloat16;
  }
}

class NcclCommunicator : public Communicator {
 public:
  explicit NcclCommunicator(const CommunicatorOptions& o)
      : Communicator(o.rank, o.size, o.device),
        api_(NcclApi::get()),
        group_(std::make_shared<TcpGroup>(o.rank, o.size, o.init_addr, o.timeout_seconds, 2, o.listen_fd)),
        timeout_s_(o.timeout_seconds) {
    use_device(o.device.index);
    // Rank 0's unique id, to everyone, over TCP.
    ncclUniqueId id{};
    {
      TcpGroup::Collective c(*group_, kHostChannel, {CollectiveOp::Bootstrap, sizeof id, "the NCCL unique id"});
      if (rank() == 0) {
        check(api_.GetUniqueId(&id), "ncclGetUniqueId", "the NCCL unique id");
        for (int r = 1; r < size(); ++r) c.recv_up(r, nullptr, 0);
        for (int r = 1; r < size(); ++r) c.send_down(r, &id, sizeof id);
      } else {
        c.send_up(nullptr, 0);
        c.recv_down(&id, sizeof id);
      }
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // so a missing rank can be given up on (wait_ready) instead of hanging
    const std::string what = fmt::format("rank {} of {} on {}", rank(), size(), device().str());
    ncclResult_t r = api_.CommInitRankConfig(&comm_, size(), id, rank(), &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      if (comm_) api_.CommAbort(comm_);
      comm_ = nullptr;
      check(r, "ncclCommInitRankConfig", what);
    }
    try {
      wait_ready("ncclCommInitRankConfig", what);
    } catch (...) {
      if (comm_) api_.CommAbort(comm_);
      comm_ = nullptr;
      throw;
    }
    watchdog_ = std::thread([this] { watch(); });
  }

  ~NcclCommunicator() override {
    stop_ = true;
    if (watchdog_.joinable()) watchdog_.join();
    std::lock_guard<std::mutex> lock(mu_);
    if (!comm_) return;  // aborted already
    // A healthy communicator is finalized (its pending work flushed; non-blocking, so polled,
    // and given up on like any wait) and destroyed; otherwise aborted, which never waits.
    try {
      ncclResult_t r = api_.CommFinalize(comm_);
      if (r != ncclInProgress) check(r, "ncclCommFinalize", "the communicator");
      wait_ready("ncclCommFinalize", "the communicator");
      api_.CommDestroy(comm_);
    } catch (const std::exception&) {
      if (comm_) api_.CommAbort(comm_);  // wait_ready aborted already where it gave up
    }
    comm_ = nullptr;
  }

  void all_reduce_sum_(const Tensor& t) override {
    check_collective_tensor(*this, "all_reduce_sum_", t);
    if (t.numel() == 0) return;
    const std::string what = describe_tensor(t);
    std::lock_guard<std::mutex> lock(mu_);
    check_usable("all_reduce_sum_", what);
    use_device(device().index);
    cudaStream_t s = native_stream(current_stream(device()));
    enqueued(
        api_.AllReduce(t.data(), t.data(), static_cast<size_t>(t.numel()), nccl_type(t.dtype()), ncclSum, comm_, s),
        "ncclAllReduce (all_reduce_sum_)", what);
  }

  void all_gather(const Tensor& in, const Tensor& out) override {
    check_all_gather(*this, in, out);
    if (out.numel() == 0) return;
    const std::string what = describe_tensor(in);
    std::lock_guard<std::mutex> lock(mu_);
    check_usable("all_gather", what);
    use_device(device().index);
    cudaStream_t s = native_stream(current_stream(device()));
    enqueued(api_.AllGather(in.data(), out.data(), static_cast<size_t>(in.numel()), nccl_type(in.dtype()), comm_, s),
             "ncclAllGather (all_gather)", what);
  }

  void broadcast_(const Tensor& t, int root) override {
    check_collective_tensor(*this, "broadcast_", t);
    check_root(*this, "broadcast_", root);
    if (t.numel() == 0) return;
    const std::string what = fmt::format("{} from rank {}", describe_tensor(t), root);
    std::lock_guard<std::mutex> lock(mu_);
    check_usable("broadcast_", what);
    use_device(device().index);
    cudaStream_t s = native_stream(current_stream(device()));
    enqueued(api_.Broadcast(t.data(), t.data(), static_cast<size_t>(t.numel()), nccl_type(t.dtype()), root, comm_, s),
             "ncclBroadcast (broadcast_)", what);
  }

  void barrier() override { group_->barrier(kHostChannel); }
  void broadcast_bytes(std::vector<uint8_t>& bytes, int root) override {
    group_->broadcast_bytes(kHostChannel, bytes, root);
  }
  std::vector<int64_t> all_reduce_min(const std::vector<int64_t>& values) override {
    return group_->all_reduce_min(kHostChannel, values);
  }

  void abort(const std::string& reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    abort_locked(reason);
  }

 private:
  std::string nccl_text(ncclResult_t r) const {
    const char* last = comm_ ? api_.GetLastError(comm_) : nullptr;
    return fmt::format("{}{}{}", api_.GetErrorString(r), last && *last ? ": " : "", last ? last : "");
  }

  void check(ncclResult_t r, const char* call, const std::string& what) const {
    GRT_CHECK(r == ncclSuccess, "{} on rank {} of {} ({}) failed: {}", call, rank(), size(), what, nccl_text(r));
  }

  // The failure that broke the group, if any, fails every later collective at once.
  void check_usable(const char* op, const std::string& what) const {
    if (!failed_.empty())
      GRT_FAIL("{} of {} on rank {} of {}: the group is down: {}", op, what, rank(), size(), failed_);
  }

  // After a collective call: success, or wait while non-blocking NCCL is still in progress.
  void enqueued(ncclResult_t r, const char* call, const std::string& what) {
    if (r == ncclInProgress) {
      wait_ready(call, what);
      return;
    }
    if (r != ncclSuccess) {
      std::string msg = fmt::format("{} of {} on rank {} of {} failed: {}", call, what, rank(), size(), nccl_text(r));
      abort_locked(msg);
      GRT_FAIL("{}", msg);
    }
  }

  // Polls the (non-blocking) communicator until it is ready; gives up after the timeout or when
  // a peer is gone (the TCP group broke or a connection closed), aborting NCCL. A collective's
  // enqueue is usually done within microseconds: the poll yields first, then backs off from 10 us
  // to 5 ms. (A flat 5 ms sleep made every collective cost >= 5 ms of host time: an eager
  // llama-3.1-8b decode step at --tp-size 2 took 345 ms instead of ~5, and recording the piecewise
  // schedule, 3,248 all-reduces, 17.8 s: bench/results/h200x2_2026-11-24_tp.)
  void wait_ready(const char* call, const std::string& what) {
    const double deadline = now_s() + timeout_s_;
    constexpr int kYieldPolls = 64;
    constexpr auto kMaxPause = std::chrono::microseconds(5000);
    int polls = 0;
    std::chrono::microseconds pause{0};
    for (;;) {
      ncclResult_t st = ncclSuccess;
      ncclResult_t r = api_.CommGetAsyncError(comm_, &st);
      if (r == ncclSuccess && st == ncclSuccess) return;
      std::string why;
      if (r != ncclSuccess)
        why = nccl_text(r);
      else if (st != ncclInProgress)
        why = nccl_text(st);
      else if (group_->broken())
        why = group_->broken_reason();
      else if (int closed = group_->wait_for_closed_peer(kWatchChannel, 0); closed >= 0)
        why = fmt::format("rank {} closed its connection (its process exited or died)", closed);
      else if (now_s() > deadline)
        why = fmt::format("not done within {} s (--dist-timeout)", timeout_s_);
      if (!why.empty()) {
        std::string msg = fmt::format("{} of {} on rank {} of {}: {}", call, what, rank(), size(), why);
        abort_locked(msg);
        GRT_FAIL("{}", msg);
      }
      if (++polls <= kYieldPolls) {
        std::this_thread::yield();
        continue;
      }
      pause = std::min(kMaxPause, std::max(std::chrono::microseconds(10), pause * 2));
      std::this_thread::sleep_for(pause);
    }
  }

  void abort_locked(const std::string& reason) {
    if (!failed_.empty()) return;
    failed_ = reason;
    group_->abort(reason);  // the peers see this rank leave
    if (comm_) api_.CommAbort(comm_);
    comm_ = nullptr;
  }

  // The watchdog: NCCL's asynchronous errors, and peers whose TCP connections close.
  void watch() {
    while (!stop_) {
      int closed = group_->wait_for_closed_peer(kWatchChannel, 100);
      std::lock_guard<std::mutex> lock(mu_);
      if (!failed_.empty() || stop_) return;  // nothing left to watch
      if (closed >= 0) {
        abort_locked(fmt::format("rank {}: rank {} closed its connection (its process exited or died); NCCL aborted",
                                 rank(), closed));
        continue;
      }
      if (group_->broken()) {
        abort_locked(group_->broken_reason());
        continue;
      }
      ncclResult_t st = ncclSuccess;
      ncclResult_t r = api_.CommGetAsyncError(comm_, &st);
      if (r != ncclSuccess || (st != ncclSuccess && st != ncclInProgress))
        abort_locked(
            fmt::format("rank {}: NCCL reported {}; NCCL aborted", rank(), nccl_text(r != ncclSuccess ? r : st)));
    }
  }

  const NcclApi& api_;
  std::shared_ptr<TcpGroup> group_;
  double timeout_s_;
  std::mutex mu_;  // every NCCL call on comm_, and failed_
  ncclComm_t comm_ = nullptr;
  std::string failed_;  // why the group broke ("" while healthy)
  std::atomic<bool> stop_{false};
  std::thread watchdog_;
};

}  // namespace

std::unique_ptr<Communicator> connect_nccl_communicator(const CommunicatorOptions& options) {
  GRT_CHECK(options.device.is_cuda(), "the NCCL communicator got device {}", options.device.str());
  GRT_CHECK(options.size >= 2, "the NCCL communicator needs size >= 2, got {}", options.size);
  ::setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
  return std::make_unique<NcclCommunicator>(options);
}

}  // namespace grt::cuda

namespace grt {
std::unique_ptr<Communicator> make_nccl_communicator(const CommunicatorOptions& options) {
  return cuda::connect_nccl_communicator(options);
}
}  // namespace grt
#endif  // GRAPHRT_WITH_NCCL
