// TEST DOUBLE, not a backend: a Communicator whose "ranks" are threads of this one process, each
// with its own CPU stream (StreamGuard). Collectives are CPU stream tasks that meet at a
// std::barrier when they run, so they are stream-ordered like the real CPU backend. It lets the
// sharded forward be checked in-process; the real multi-process backend is tp-comm's.
#pragma once
#include <barrier>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.h"
#include "device/communicator.h"
#include "device/cpu/cpu_launch.h"
#include "device/stream.h"

namespace grt::testing {

struct ThreadTestGroup {
  explicit ThreadTestGroup(int n) : size(n), meet(n), ptrs(static_cast<size_t>(n)) {}
  int size;
  std::barrier<> meet;
  std::vector<const void*> ptrs;
};

class ThreadTestCommunicator : public Communicator {
 public:
  ThreadTestCommunicator(std::shared_ptr<ThreadTestGroup> group, int rank)
      : Communicator(rank, group->size, Device::cpu()), group_(std::move(group)) {}

  void all_reduce_sum_(const Tensor& t) override {
    check(t, "all_reduce_sum_");
    std::shared_ptr<ThreadTestGroup> g = group_;
    const int r = rank();
    float* p = t.data_as<float>();
    const int64_t n = t.numel();
    cpu::launch(current_stream(device()), [g, r, p, n] {
      g->ptrs[static_cast<size_t>(r)] = p;
      g->meet.arrive_and_wait();
      std::vector<float> sum(static_cast<size_t>(n), 0.0f);
      for (int k = 0; k < g->size; ++k) {  // rank order: every rank gets the same bits
        const float* x = static_cast<const float*>(g->ptrs[static_cast<size_t>(k)]);
        for (int64_t i = 0; i < n; ++i) sum[static_cast<size_t>(i)] += x[i];
      }
      g->meet.arrive_and_wait();  // everyone has read every input before anyone writes
      std::memcpy(p, sum.data(), sum.size() * sizeof(float));
    });
  }

  void all_gather(const Tensor& in, const Tensor& out) override {
    check(in, "all_gather");
    check(out, "all_gather");
    GRT_CHECK(out.numel() == in.numel() * size(), "test all_gather: out {} for in {}", out.str(), in.str());
    std::shared_ptr<ThreadTestGroup> g = group_;
    const int r = rank();
    const void* src = in.data();
    void* dst = out.data();
    const size_t bytes = in.nbytes();
    cpu::launch(current_stream(device()), [g, r, src, dst, bytes] {
      g->ptrs[static_cast<size_t>(r)] = src;
      g->meet.arrive_and_wait();
      for (int k = 0; k < g->size; ++k)
        std::memcpy(static_cast<char*>(dst) + bytes * static_cast<size_t>(k), g->ptrs[static_cast<size_t>(k)], bytes);
      g->meet.arrive_and_wait();
    });
  }

  void broadcast_(const Tensor&, int) override { GRT_FAIL("the test communicator has no broadcast_"); }
  void barrier() override { group_->meet.arrive_and_wait(); }
  void broadcast_bytes(std::vector<uint8_t>&, int) override { GRT_FAIL("the test communicator has no broadcast_bytes"); }
  std::vector<int64_t> all_reduce_min(const std::vector<int64_t>&) override {
    GRT_FAIL("the test communicator has no all_reduce_min");
  }

 private:
  static void check(const Tensor& t, const char* op) {
    GRT_CHECK(t.device().is_cpu() && t.is_contiguous() && t.dtype() == DType::F32,
              "test {}: needs a contiguous float32 CPU tensor, got {}", op, t.str());
  }
  std::shared_ptr<ThreadTestGroup> group_;
};

}  // namespace grt::testing
