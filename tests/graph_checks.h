// Checks of the graph layer (segmented capture, decode graph runner) written once for any
// device: tests/test_graph.cpp runs them on the CPU backend, tests/cuda/ on a GPU.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "core/error.h"
#include "device/capture_state.h"
#include "device/stream.h"
#include "graph/decode_graph_runner.h"
#include "graph/segmented_capture.h"
#include "memory/caching_allocator.h"
#include "memory/graph_pool.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/copy.h"
#include "ops/random_fill.h"
#include "ops/rms_norm.h"

namespace grt::testing {

inline DType graph_test_dtype(Device d) { return d.is_cuda() ? DType::BF16 : DType::F32; }

// A two-segment computation: norm | eager step (silu_and_mul into a buffer) | norm.
struct TwoPieceModel {
  Tensor x, w1, w2;
  explicit TwoPieceModel(Device d) {
    DType dt = graph_test_dtype(d);
    x = empty(Shape{8, 256}, dt, d);
    w1 = empty(Shape{256}, dt, d);
    w2 = empty(Shape{128}, dt, d);
    ops::fill_hash_uniform_(x, 1, 0.0f, 1.0f);
    ops::fill_hash_uniform_(w1, 2, 1.0f, 0.5f);
    ops::fill_hash_uniform_(w2, 3, 1.0f, 0.5f);
  }
  Tensor eager() const { return ops::rms_norm(ops::silu_and_mul(ops::rms_norm(x, w1, 1e-6f)), w2, 1e-6f); }
};

// Segments replay with the eager step between them, on new inputs, equal to eager; the step's
// allocation during capture comes from the graph pool.
inline void check_segmented_capture_replays_steps(Device d) {
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  TwoPieceModel m(d);
  m.eager();  // warm-up
  stream->synchronize();
  auto pool = GraphPool::create(d);
  Tensor out;
  auto buf = std::make_shared<Tensor>();  // outlives the capture: the step closure holds it
  std::unique_ptr<SegmentedGraph> graph;
  size_t pool_bytes_in_step = 0;
  {
    SegmentedCapture cap(*stream, CaptureMemory::of_pool(pool));
    EXPECT_EQ(SegmentedCapture::current(), &cap);
    Tensor y = ops::rms_norm(m.x, m.w1, 1e-6f);
    cap.eager_step("silu_and_mul", [y, buf, &pool_bytes_in_step, pool] {
      Tensor r = ops::silu_and_mul(y);
      if (!buf->defined()) {  // at capture: the buffer later segments read
        size_t before = pool->stats().allocated;
        *buf = empty_like(r);
        pool_bytes_in_step = pool->stats().allocated - before;
      }
      ops::copy_(*buf, r);
    });
    out = ops::rms_norm(*buf, m.w2, 1e-6f);
    graph = cap.finish();
    EXPECT_EQ(SegmentedCapture::current(), nullptr);
  }
  EXPECT_GT(pool_bytes_in_step, 0u) << "the eager step's buffer must live in graph memory";
  EXPECT_EQ(graph->segment_count(), 2u);
  EXPECT_EQ(graph->step_count(), 1u);
  EXPECT_GT(graph->node_count(), 0u);
  for (uint64_t round = 0; round < 3; ++round) {
    ops::fill_hash_uniform_(m.x, 100 + round, 0.0f, 2.0f);
    graph->replay(*stream);
    std::vector<float> got = to_host_floats(out);
    std::vector<float> want = to_host_floats(m.eager());
    ASSERT_EQ(got, want) << "round " << round;
  }
}

// A step first and a step last leave empty segments, which are dropped; replay still runs the
// steps in order.
inline void check_empty_segments_are_dropped(Device d) {
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  Tensor a = zeros(Shape{4}, DType::F32, d);
  auto pool = GraphPool::create(d);
  std::unique_ptr<SegmentedGraph> g;
  {
    SegmentedCapture cap(*stream, CaptureMemory::of_pool(pool));
    cap.eager_step("first", [a] { ops::fill_hash_uniform_(a, 7, 0.0f, 1.0f); });
    cap.eager_step("second", [] {});
    g = cap.finish();
  }
  EXPECT_EQ(g->segment_count(), 0u);
  EXPECT_EQ(g->step_count(), 2u);
  ops::copy_(a, zeros(Shape{4}, DType::F32, d));
  g->replay(*stream);
  std::vector<float> v = to_host_floats(a);
  EXPECT_NE(v, std::vector<float>(4, 0.0f));
}

// An error inside the captured code discards the capture; the stream works eagerly after.
inline void check_failed_capture_leaves_stream_usable(Device d) {
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  TwoPieceModel m(d);
  m.eager();
  auto pool = GraphPool::create(d);
  bool threw = false;
  try {
    SegmentedCapture cap(*stream, CaptureMemory::of_pool(pool));
    Tensor y = ops::rms_norm(m.x, m.w1, 1e-6f);
    (void)to_host_floats(y);  // a host read: refused during capture
    cap.finish();
  } catch (const Error& e) {
    threw = true;
  }
  EXPECT_TRUE(threw);
  EXPECT_FALSE(stream->is_capturing());
  EXPECT_EQ(SegmentedCapture::current(), nullptr);
  std::vector<float> v = to_host_floats(m.eager());
  EXPECT_EQ(v.size(), 8u * 128u);
}

// A toy decode forward over persistent rows: out[:bs] = silu_and_mul(rms_norm(x[:bs])).
struct ToyDecode {
  Tensor x, w;
  int fail_from = 0;  // sizes >= this throw at capture (0: never)
  explicit ToyDecode(Device d, int max_bs) {
    DType dt = graph_test_dtype(d);
    x = empty(Shape{max_bs, 64}, dt, d);
    w = empty(Shape{64}, dt, d);
    ops::fill_hash_uniform_(x, 11, 0.0f, 1.0f);
    ops::fill_hash_uniform_(w, 12, 1.0f, 0.5f);
  }
  Tensor operator()(int bs) const {
    if (fail_from > 0 && bs >= fail_from && this_thread_capture_stream())
      GRT_FAIL("toy op refuses capture at batch size {}", bs);
    return ops::silu_and_mul(ops::rms_norm(x.narrow(0, 0, bs), w, 1e-6f));
  }
};

// Every size replays its own graph correctly in random order, padded sizes return the real rows.
inline void check_decode_runner_sizes_and_padding(Device d) {
  auto cap_stream = new_stream(d);
  const std::vector<int> sizes{1, 2, 4, 8, 16};
  ToyDecode toy(d, 16);
  DecodeGraphOptions o;
  o.batch_sizes = sizes;
  o.progress = false;
  DecodeGraphRunner runner(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)), o);
  runner.capture([&](int bs) { return toy(bs); });
  EXPECT_EQ(runner.batch_sizes(), sizes);
  EXPECT_EQ(runner.padded_size(3), 4);
  EXPECT_EQ(runner.padded_size(9), 16);
  EXPECT_EQ(runner.padded_size(17), 0);
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  const std::vector<int> order{5, 1, 16, 3, 8, 2, 13, 4, 1, 16, 7};
  for (size_t i = 0; i < order.size(); ++i) {
    int bs = order[i];
    ops::fill_hash_uniform_(toy.x, 200 + i, 0.0f, 2.0f);
    Tensor got = runner.replay(bs, *stream);
    ASSERT_EQ(got.size(0), bs);
    std::vector<float> g = to_host_floats(ops::contiguous(got));
    std::vector<float> want = to_host_floats(toy(bs));
    ASSERT_EQ(g, want) << "bs " << bs << " (padded to " << runner.padded_size(bs) << ")";
  }
}

// A size whose capture fails is dropped with every larger one; smaller ones keep working.
inline void check_decode_runner_degrades_per_size(Device d) {
  auto cap_stream = new_stream(d);
  ToyDecode toy(d, 16);
  toy.fail_from = 8;
  DecodeGraphOptions o;
  o.batch_sizes = {1, 2, 4, 8, 16};
  o.progress = false;
  DecodeGraphRunner runner(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)), o);
  runner.capture([&](int bs) { return toy(bs); });
  EXPECT_EQ(runner.batch_sizes(), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(runner.padded_size(5), 0);
  StreamGuard guard(*cap_stream);
  Tensor got = runner.replay(3, *cap_stream);
  EXPECT_EQ(to_host_floats(ops::contiguous(got)), to_host_floats(toy(3)));
}

}  // namespace grt::testing
