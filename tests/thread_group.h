// Test communicators for the runtime's tensor-parallel control path, without processes:
// ThreadGroup — ranks are threads of this process sharing host collectives (barrier,
// broadcast_bytes, all_reduce_min; a wait past 30 s is an Error, so a broken test fails rather
// than hangs); RiggedPeer — a one-thread rank 0 whose imagined peer answers all_reduce_min as the
// test says. Device collectives are refused: the models these tests run are not sharded.
#pragma once
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "core/error.h"
#include "device/communicator.h"

namespace grt::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), values_(static_cast<size_t>(size)) {}
  std::shared_ptr<Communicator> rank(int r);

  void barrier() {
    std::unique_lock<std::mutex> l(m_);
    const uint64_t gen = gen_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++gen_;
      cv_.notify_all();
      return;
    }
    GRT_CHECK(cv_.wait_for(l, std::chrono::seconds(30), [&] { return gen_ != gen; }),
              "thread group: a rank waited 30 s in a collective");
  }
  void broadcast_bytes(int me, std::vector<uint8_t>& bytes, int root) {
    if (me == root) {
      std::lock_guard<std::mutex> l(m_);
      bytes_ = bytes;
    }
    barrier();
    if (me != root) {
      std::lock_guard<std::mutex> l(m_);
      bytes = bytes_;
    }
    barrier();
  }
  std::vector<int64_t> all_reduce_min(int me, const std::vector<int64_t>& v) {
    {
      std::lock_guard<std::mutex> l(m_);
      values_[static_cast<size_t>(me)] = v;
    }
    barrier();
    std::vector<int64_t> out = v;
    {
      std::lock_guard<std::mutex> l(m_);
      for (const auto& o : values_) {
        GRT_CHECK(o.size() == v.size(), "thread group: all_reduce_min of {} values here, {} on another rank", v.size(),
                  o.size());
        for (size_t i = 0; i < v.size(); ++i) out[i] = std::min(out[i], o[i]);
      }
    }
    barrier();
    return out;
  }

 private:
  int size_;
  std::mutex m_;
  std::condition_variable cv_;
  uint64_t gen_ = 0;
  int arrived_ = 0;
  std::vector<uint8_t> bytes_;
  std::vector<std::vector<int64_t>> values_;
};

class HostOnlyCommunicator : public Communicator {
 public:
  HostOnlyCommunicator(int rank, int size) : Communicator(rank, size, Device::cpu()) {}
  void all_reduce_sum_(const Tensor&) override { GRT_FAIL("test communicator: no device collectives"); }
  void all_gather(const Tensor&, const Tensor&) override { GRT_FAIL("test communicator: no device collectives"); }
  void broadcast_(const Tensor&, int) override { GRT_FAIL("test communicator: no device collectives"); }
};

class ThreadRank : public HostOnlyCommunicator {
 public:
  ThreadRank(ThreadGroup& g, int rank, int size) : HostOnlyCommunicator(rank, size), g_(g) {}
  void barrier() override { g_.barrier(); }
  void broadcast_bytes(std::vector<uint8_t>& bytes, int root) override { g_.broadcast_bytes(rank(), bytes, root); }
  std::vector<int64_t> all_reduce_min(const std::vector<int64_t>& v) override { return g_.all_reduce_min(rank(), v); }

 private:
  ThreadGroup& g_;
};

inline std::shared_ptr<Communicator> ThreadGroup::rank(int r) { return std::make_shared<ThreadRank>(*this, r, size_); }

// Rank 0 of a group of 2 whose peer is imagined: broadcasts go nowhere (and are counted), and
// all_reduce_min is min(mine, peer(call index, mine)).
class RiggedPeer : public HostOnlyCommunicator {
 public:
  using Peer = std::function<std::vector<int64_t>(int call, const std::vector<int64_t>& mine)>;
  explicit RiggedPeer(Peer peer) : HostOnlyCommunicator(0, 2), peer_(std::move(peer)) {}
  void barrier() override { ++barriers; }
  void broadcast_bytes(std::vector<uint8_t>&, int) override { ++broadcasts; }
  std::vector<int64_t> all_reduce_min(const std::vector<int64_t>& v) override {
    std::vector<int64_t> p = peer_(calls++, v), out = v;
    for (size_t i = 0; i < v.size() && i < p.size(); ++i) out[i] = std::min(v[i], p[i]);
    return out;
  }
  int barriers = 0, broadcasts = 0, calls = 0;

 private:
  Peer peer_;
};

}  // namespace grt::testing
