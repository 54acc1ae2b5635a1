// Checks of the graph layer (segmented capture, decode graph runner) written once for any
// device: tests/test_graph.cpp runs them on the CPU backend, tests/cuda/ on a GPU.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "device/capture_state.h"
#include "device/stream.h"
#include "device/event.h"
#include "error_of.h"
#include "graph/breakable.h"
#include "graph/shape_graph_runner.h"
#include "graph/split_ops.h"
#include "graph/segmented_capture.h"
#include "graph/write_back.h"
#include "memory/caching_allocator.h"
#include "memory/graph_pool.h"
#include "memory/tensor_alloc.h"
#include "ops/activation.h"
#include "ops/copy.h"
#include "ops/random_fill.h"
#include "ops/rms_norm.h"

namespace grt::testing {

inline DType graph_test_dtype(Device d) { return d.is_cuda() ? DType::BF16 : DType::F32; }

// Toy models fill their weights on the current stream, then capture and replay on others:
// like a model load, the constructor waits for the fills (else a replay may read them unset).
inline void weights_ready(Device d) { current_stream(d).synchronize(); }

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
    weights_ready(d);
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
    weights_ready(d);
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
  ShapeGraphOptions o;
  o.shapes = sizes;
  o.progress = false;
  ShapeGraphRunner runner(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)), o);
  runner.capture([&](int bs) { return toy(bs); });
  EXPECT_EQ(runner.shapes(), sizes);
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
  ShapeGraphOptions o;
  o.shapes = {1, 2, 4, 8, 16};
  o.progress = false;
  ShapeGraphRunner runner(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)), o);
  runner.capture([&](int bs) { return toy(bs); });
  EXPECT_EQ(runner.shapes(), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(runner.padded_size(5), 0);
  StreamGuard guard(*cap_stream);
  Tensor got = runner.replay(3, *cap_stream);
  EXPECT_EQ(to_host_floats(ops::contiguous(got)), to_host_floats(toy(3)));
}

}  // namespace grt::testing

namespace grt::testing {

// A toy decode step with an op that reads a device value on the host and branches on it:
// out[:bs] = rms_norm(branch(rms_norm(x[:bs], w1)), w3), where branch takes silu_and_mul of its
// input or of its input normed again, depending on the sign of element [0, 0].
struct BranchyDecode {
  Tensor x, w1, w2, w3;
  int host_reads = 0;
  BranchyDecode(Device d, int max_bs) {
    DType dt = graph_test_dtype(d);
    x = empty(Shape{max_bs, 64}, dt, d);
    w1 = empty(Shape{64}, dt, d);
    w2 = empty(Shape{64}, dt, d);
    w3 = empty(Shape{32}, dt, d);
    set_sign(1, 0);
    ops::fill_hash_uniform_(w1, 21, 1.0f, 0.5f);
    ops::fill_hash_uniform_(w2, 22, 1.0f, 0.5f);
    ops::fill_hash_uniform_(w3, 23, 1.0f, 0.5f);
    weights_ready(d);
  }
  // New inputs whose element [0, 0] (and so the branch) has the given sign.
  void set_sign(int sign, uint64_t seed) { ops::fill_hash_uniform_(x, 300 + seed, sign > 0 ? 1.0f : -1.0f, 0.5f); }
  Tensor branch_eager(const Tensor& y) {
    ++host_reads;
    const float first = to_host_floats(ops::contiguous(y.narrow(0, 0, 1)))[0];  // a host read
    return first > 0 ? ops::silu_and_mul(y) : ops::silu_and_mul(ops::rms_norm(y, w2, 1e-6f));
  }
  Tensor forward(int bs) {
    Tensor y = ops::rms_norm(x.narrow(0, 0, bs), w1, 1e-6f);
    auto branch = eager_on_graph("host_branch", [this](const Tensor& t) { return branch_eager(t); });
    return ops::rms_norm(branch(y), w3, 1e-6f);
  }
};

inline ShapeGraphOptions toy_options(std::vector<int> sizes, bool breakable) {
  ShapeGraphOptions o;
  o.shapes = std::move(sizes);
  o.progress = false;
  o.policy = CapturePolicies{.breakable = breakable};
  return o;
}

// A segmented graph recorded without instantiation refuses replay, and instantiated on another
// thread replays its segments and steps like an eager run.
inline void check_segmented_graph_instantiated_on_another_thread(Device d) {
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  ToyDecode toy(d, 8);
  Tensor out = empty(Shape{8, 32}, graph_test_dtype(d), d);
  std::unique_ptr<SegmentedGraph> g;
  {
    SegmentedCapture cap(*stream, CaptureMemory::of_pool(GraphPool::create(d)));
    Tensor y = ops::rms_norm(toy.x, toy.w, 1e-6f);
    cap.eager_step("silu", [y, out] { ops::copy_(out, ops::silu_and_mul(y)); });
    g = cap.finish(/*instantiate=*/false);
  }
  EXPECT_FALSE(g->instantiated());
  EXPECT_EQ(g->segment_count(), 1u);
  EXPECT_GT(g->node_count(), 0u);
  EXPECT_NE(error_of([&] { g->replay(*stream); }).find("before it was instantiated"), std::string::npos);
  std::thread worker([&] { g->instantiate(); });
  worker.join();
  EXPECT_TRUE(g->instantiated());
  ops::fill_hash_uniform_(toy.x, 77, 0.0f, 2.0f);
  g->replay(*stream);
  EXPECT_EQ(to_host_floats(out), to_host_floats(toy(8)));
}

// Graphs instantiated on worker threads while later shapes are captured (or after all are, when
// deferred), without waiting for the device between shapes, replay equal to eager and to a runner
// that instantiates inline and waits after every shape (the behaviour before overlap).
inline void check_runner_with_instantiation_workers_equals_eager(Device d) {
  const std::vector<int> sizes{1, 2, 4, 8, 12, 16};
  ToyDecode toy(d, 16);
  BranchyDecode branchy(d, 16);  // several segments per shape, host decisions between them
  auto run = [&](int threads, bool sync, bool breakable, bool defer = false) {
    auto cap_stream = new_stream(d);
    ShapeGraphOptions o = toy_options(sizes, breakable);
    o.instantiate_threads = threads;
    o.sync_each_shape = sync;
    o.defer_instantiation = defer;
    auto runner = std::make_unique<ShapeGraphRunner>(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)), o);
    runner->capture([&](int bs) { return breakable ? branchy.forward(bs) : toy(bs); });
    EXPECT_EQ(runner->shapes(), sizes) << threads << " threads, breakable " << breakable;
    EXPECT_GT(runner->phases().record, 0.0);
    for (const CapturedShape& s : runner->stats()) EXPECT_GT(s.nodes, 0u) << "shape " << s.shape;
    return std::make_pair(std::move(cap_stream), std::move(runner));
  };
  for (bool breakable : {false, true}) {
    auto [s_new, overlapped] = run(3, false, breakable);
    auto [s_old, inline_sync] = run(0, true, breakable);
    auto [s_def, deferred] = run(2, false, breakable, /*defer=*/true);
    EXPECT_EQ(overlapped->stats().front().segments, inline_sync->stats().front().segments);
    auto stream = new_stream(d);
    StreamGuard guard(*stream);
    const std::vector<int> order{16, 1, 5, 12, 3, 9, 2, 16};
    for (size_t i = 0; i < order.size(); ++i) {
      const int bs = order[i];
      if (breakable) {
        branchy.set_sign(i % 2 ? -1 : 1, 40 + i);
      } else {
        ops::fill_hash_uniform_(toy.x, 400 + i, 0.0f, 2.0f);
      }
      const std::vector<float> a = to_host_floats(ops::contiguous(overlapped->replay(bs, *stream)));
      const std::vector<float> b = to_host_floats(ops::contiguous(inline_sync->replay(bs, *stream)));
      const std::vector<float> c = to_host_floats(ops::contiguous(deferred->replay(bs, *stream)));
      const std::vector<float> want = to_host_floats(breakable ? branchy.forward(bs) : toy(bs));
      ASSERT_EQ(a, want) << "bs " << bs << ", breakable " << breakable;
      ASSERT_EQ(b, want) << "bs " << bs << ", breakable " << breakable;
      ASSERT_EQ(c, want) << "deferred, bs " << bs << ", breakable " << breakable;
    }
  }
}

// With instantiation workers, a failed capture still drops that size and every larger one.
inline void check_runner_with_instantiation_workers_degrades_per_size(Device d) {
  auto cap_stream = new_stream(d);
  ToyDecode toy(d, 16);
  toy.fail_from = 8;
  ShapeGraphOptions o;
  o.shapes = {1, 2, 4, 8, 16};
  o.progress = false;
  o.instantiate_threads = 2;
  o.sync_each_shape = false;
  ShapeGraphRunner runner(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)), o);
  runner.capture([&](int bs) { return toy(bs); });
  EXPECT_EQ(runner.shapes(), (std::vector<int>{1, 2, 4}));
  EXPECT_NE(runner.capture_error().find("toy op refuses capture"), std::string::npos) << runner.capture_error();
  StreamGuard guard(*cap_stream);
  Tensor got = runner.replay(3, *cap_stream);
  EXPECT_EQ(to_host_floats(ops::contiguous(got)), to_host_floats(toy(3)));
}

// Without breakable mode the host read fails the capture of every size, with a clear error.
inline void check_uncapturable_op_fails_capture_without_breakable(Device d) {
  auto cap_stream = new_stream(d);
  BranchyDecode m(d, 8);
  ShapeGraphRunner runner(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)), toy_options({1, 4, 8}, false));
  runner.capture([&](int bs) { return m.forward(bs); });
  EXPECT_TRUE(runner.shapes().empty());
  EXPECT_NE(runner.capture_error().find("not allowed during stream capture"), std::string::npos)
      << runner.capture_error();
  EXPECT_FALSE(cap_stream->is_capturing());
}

// With it, the host read runs eagerly between two segments; replays on inputs taking either
// branch equal the eager forward.
inline void check_breakable_replay_takes_both_branches(Device d) {
  auto cap_stream = new_stream(d);
  BranchyDecode m(d, 8);
  ShapeGraphRunner runner(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)), toy_options({1, 4, 8}, true));
  runner.capture([&](int bs) { return m.forward(bs); });
  ASSERT_EQ(runner.shapes(), (std::vector<int>{1, 4, 8})) << runner.capture_error();
  for (const CapturedShape& s : runner.stats()) {
    EXPECT_EQ(s.segments, 2u) << "bs " << s.shape;
  }
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  const int signs[] = {-1, 1, -1, -1, 1};
  const int sizes[] = {3, 8, 1, 4, 2};
  for (int i = 0; i < 5; ++i) {
    m.set_sign(signs[i], static_cast<uint64_t>(i));
    const int reads = m.host_reads;
    std::vector<float> got = to_host_floats(ops::contiguous(runner.replay(sizes[i], *stream)));
    EXPECT_EQ(m.host_reads, reads + 1) << "the branch must run eagerly at replay";
    std::vector<float> want = to_host_floats(m.forward(sizes[i]));
    ASSERT_EQ(got, want) << "replay " << i << " (sign " << signs[i] << ", bs " << sizes[i] << ")";
  }
}

// No break: one segment, results bitwise equal to a plain (non-breakable) capture.
inline void check_breakable_without_breaks_is_a_plain_graph(Device d) {
  auto s1 = new_stream(d), s2 = new_stream(d);
  ToyDecode toy(d, 8);
  ShapeGraphRunner plain(*s1, CaptureMemory::of_pool(GraphPool::create(d)), toy_options({2, 8}, false));
  ShapeGraphRunner breakable(*s2, CaptureMemory::of_pool(GraphPool::create(d)), toy_options({2, 8}, true));
  plain.capture([&](int bs) { return toy(bs); });
  breakable.capture([&](int bs) { return toy(bs); });
  ASSERT_EQ(breakable.stats().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(breakable.stats()[i].segments, 1u);
    EXPECT_EQ(breakable.stats()[i].nodes, plain.stats()[i].nodes);
  }
  StreamGuard guard(*s1);
  ops::fill_hash_uniform_(toy.x, 77, 0.0f, 1.0f);
  std::vector<float> a = to_host_floats(ops::contiguous(plain.replay(5, *s1)));
  std::vector<float> b = to_host_floats(ops::contiguous(breakable.replay(5, *s1)));
  EXPECT_EQ(a, b);
}

// Debug mode: the whole forward is one eager step (no segment records work); results as eager.
inline void check_debug_mode_runs_forward_eagerly(Device d) {
  auto cap_stream = new_stream(d);
  BranchyDecode m(d, 8);  // uncapturable, yet fine in debug mode
  ShapeGraphOptions o = toy_options({2, 8}, false);
  o.debug_eager = true;
  ShapeGraphRunner runner(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)), o);
  runner.capture([&](int bs) { return m.forward(bs); });
  ASSERT_EQ(runner.shapes(), (std::vector<int>{2, 8})) << runner.capture_error();
  EXPECT_EQ(runner.stats()[0].segments, 0u);
  StreamGuard guard(*cap_stream);
  for (int sign : {1, -1}) {
    m.set_sign(sign, 9);
    std::vector<float> got = to_host_floats(ops::contiguous(runner.replay(5, *cap_stream)));
    EXPECT_EQ(got, to_host_floats(m.forward(5)));
  }
}

// A toy step that forks a side stream, breaks while the side stream is forked, and joins it
// after the break.
struct ForkingDecode {
  Tensor x, w1, w2;
  std::shared_ptr<Stream> side;
  explicit ForkingDecode(Device d, int max_bs) : side(new_stream(d)) {
    DType dt = graph_test_dtype(d);
    x = empty(Shape{max_bs, 64}, dt, d);
    w1 = empty(Shape{64}, dt, d);
    w2 = empty(Shape{32}, dt, d);
    ops::fill_hash_uniform_(x, 41, 0.0f, 1.0f);
    ops::fill_hash_uniform_(w1, 42, 1.0f, 0.5f);
    ops::fill_hash_uniform_(w2, 43, 1.0f, 0.5f);
    weights_ready(d);
  }
  Tensor forward(int bs) {
    Stream& main = current_stream(x.device());
    Tensor y = ops::rms_norm(x.narrow(0, 0, bs), w1, 1e-6f);
    auto forked = new_event(x.device());
    forked->record(main);
    side->wait(*forked);  // fork
    Tensor a, b;
    {
      StreamGuard on_side(*side);
      a = ops::silu_and_mul(y);
    }
    break_graph();  // while `side` is forked
    {
      StreamGuard on_side(*side);
      b = ops::rms_norm(a, w2, 1e-6f);
    }
    auto done = new_event(x.device());
    done->record(*side);
    main.wait(*done);  // join
    return ops::silu_and_mul(b);
  }
};

inline void check_fork_join_across_a_break(Device d) {
  auto cap_stream = new_stream(d);
  ForkingDecode m(d, 8);
  ShapeGraphRunner runner(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)), toy_options({4, 8}, true));
  runner.capture([&](int bs) { return m.forward(bs); });
  ASSERT_EQ(runner.shapes(), (std::vector<int>{4, 8})) << runner.capture_error();
  EXPECT_EQ(runner.stats()[0].segments, 2u);
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  for (uint64_t round = 0; round < 3; ++round) {
    ops::fill_hash_uniform_(m.x, 500 + round, 0.0f, 2.0f);
    std::vector<float> got = to_host_floats(ops::contiguous(runner.replay(6, *stream)));
    std::vector<float> want = to_host_floats(m.forward(6));
    ASSERT_EQ(got, want) << "round " << round;
  }
}

// Write-back of a tensor, a struct of tensors with a non-tensor field, and a map.
struct StepOutput {
  Tensor logits;
  Tensor hidden;
  int chosen = 0;
  template <class F>
  void for_each_tensor(F&& f) {
    f("logits", logits);
    f("hidden", hidden);
  }
};

// An F32 tensor of hashed values in [0, 1).
inline Tensor filled_f32(Shape s, uint64_t seed, Device d) {
  Tensor t = empty(s, DType::F32, d);
  ops::fill_hash_uniform_(t, seed, 0.0f, 1.0f);
  return t;
}

inline void check_write_back(Device d) {
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  auto filled = [d](Shape s, uint64_t seed) { return filled_f32(std::move(s), seed, d); };
  // Tensor.
  Tensor dst = filled(Shape{4, 8}, 1);
  const void* where = dst.data();
  Tensor src = filled(Shape{4, 8}, 2);
  write_back(dst, src, "tensor");
  EXPECT_EQ(dst.data(), where);
  EXPECT_EQ(to_host_floats(dst), to_host_floats(src));
  EXPECT_NE(error_of([&] { write_back(dst, filled(Shape{4, 9}, 3), "tensor"); }).find("tensor"),
            std::string::npos);
  // Struct: tensor fields in place, the int replaced.
  StepOutput so{filled(Shape{2, 16}, 4), filled(Shape{2, 8}, 5), 1};
  const void* logits_at = so.logits.data();
  StepOutput fresh{filled(Shape{2, 16}, 6), filled(Shape{2, 8}, 7), 42};
  write_back(so, fresh, "step");
  EXPECT_EQ(so.logits.data(), logits_at);
  EXPECT_EQ(so.chosen, 42);
  EXPECT_EQ(to_host_floats(so.logits), to_host_floats(fresh.logits));
  EXPECT_EQ(to_host_floats(so.hidden), to_host_floats(fresh.hidden));
  StepOutput wrong{filled(Shape{2, 16}, 8), filled(Shape{3, 8}, 9), 0};
  EXPECT_NE(error_of([&] { write_back(so, wrong, "step"); }).find("step.hidden"), std::string::npos);
  // Map: entry by entry; a missing key is an error naming it.
  std::map<std::string, Tensor> m{{"a", filled(Shape{3}, 10)}, {"b", filled(Shape{5}, 11)}};
  const void* b_at = m["b"].data();
  std::map<std::string, Tensor> n{{"a", filled(Shape{3}, 12)}, {"b", filled(Shape{5}, 13)}};
  write_back(m, n, "map");
  EXPECT_EQ(m["b"].data(), b_at);
  EXPECT_EQ(to_host_floats(m["b"]), to_host_floats(n["b"]));
  std::map<std::string, Tensor> bad{{"a", filled(Shape{3}, 14)}, {"c", filled(Shape{5}, 15)}};
  EXPECT_NE(error_of([&] { write_back(m, bad, "map"); }).find("'c'"), std::string::npos);
}


// Write-back of pair, tuple, vector and optional results, nested: tensors in place, plain values
// replaced, a length or engagement that differs from capture time an error naming the element.
inline void check_write_back_containers(Device d) {
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  auto filled = [d](Shape s, uint64_t seed) { return filled_f32(std::move(s), seed, d); };
  using Nested = std::tuple<std::pair<Tensor, int>, std::vector<Tensor>, std::optional<StepOutput>>;
  Nested dst{{filled(Shape{4}, 1), 1}, {filled(Shape{2}, 2), filled(Shape{3}, 3)},
             StepOutput{filled(Shape{2, 16}, 4), filled(Shape{2, 8}, 5), 1}};
  const void* first_at = std::get<0>(dst).first.data();
  const void* vec1_at = std::get<1>(dst)[1].data();
  const void* hidden_at = std::get<2>(dst)->hidden.data();
  Nested src{{filled(Shape{4}, 6), 7}, {filled(Shape{2}, 8), filled(Shape{3}, 9)},
             StepOutput{filled(Shape{2, 16}, 10), filled(Shape{2, 8}, 11), 42}};
  write_back(dst, src, "step");
  EXPECT_EQ(std::get<0>(dst).first.data(), first_at) << "pair: replaced instead of written back";
  EXPECT_EQ(std::get<1>(dst)[1].data(), vec1_at) << "vector: replaced instead of written back";
  EXPECT_EQ(std::get<2>(dst)->hidden.data(), hidden_at) << "optional: replaced instead of written back";
  EXPECT_EQ(to_host_floats(std::get<0>(dst).first), to_host_floats(std::get<0>(src).first));
  EXPECT_EQ(std::get<0>(dst).second, 7);
  EXPECT_EQ(to_host_floats(std::get<1>(dst)[1]), to_host_floats(std::get<1>(src)[1]));
  EXPECT_EQ(to_host_floats(std::get<2>(dst)->hidden), to_host_floats(std::get<2>(src)->hidden));
  EXPECT_EQ(std::get<2>(dst)->chosen, 42);
  Nested shorter = src;
  std::get<1>(shorter).pop_back();
  EXPECT_NE(error_of([&] { write_back(dst, shorter, "step"); }).find("step[1]: 1 elements"), std::string::npos);
  Nested empty_opt = src;
  std::get<2>(empty_opt).reset();
  EXPECT_NE(error_of([&] { write_back(dst, empty_opt, "step"); }).find("step[2]: none at replay"), std::string::npos);
  Nested wrong = src;
  std::get<0>(wrong).first = filled(Shape{5}, 12);
  EXPECT_NE(error_of([&] { write_back(dst, wrong, "step"); }).find("step[0].first"), std::string::npos);
}

// An eager step whose capture-time result is one of its inputs (an identity branch) or a
// persistent buffer: the result is cloned into graph memory at capture, so a replay that takes
// the other branch writes its result there and leaves the input and the persistent buffer as
// they were.
struct AliasingDecode {
  Tensor x, w, kept;  // x: the persistent input; kept: a persistent buffer a step may return
  int mode = 0;       // 0: identity (returns its input), 1: a new tensor, 2: returns `kept`
  explicit AliasingDecode(Device d, int max_bs) {
    DType dt = graph_test_dtype(d);
    x = empty(Shape{max_bs, 64}, dt, d);
    w = empty(Shape{64}, dt, d);
    kept = empty(Shape{max_bs, 64}, dt, d);
    ops::fill_hash_uniform_(x, 81, 0.0f, 1.0f);
    ops::fill_hash_uniform_(w, 82, 1.0f, 0.5f);
    ops::fill_hash_uniform_(kept, 83, 0.0f, 1.0f);
    weights_ready(d);
  }
  Tensor forward(int bs) {
    auto step = eager_on_graph("maybe_identity", [this](const Tensor& t) {
      if (mode == 0) return t;
      if (mode == 2) return kept.narrow(0, 0, t.size(0));
      return ops::rms_norm(t, w, 1e-6f);
    });
    return ops::silu_and_mul(step(x.narrow(0, 0, bs)));
  }
};

inline void check_aliasing_result_is_cloned(Device d) {
  for (int capture_mode : {0, 2}) {
    auto cap_stream = new_stream(d);
    AliasingDecode m(d, 8);
    m.mode = capture_mode;
    ShapeGraphRunner runner(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)), toy_options({8}, true));
    runner.capture([&](int bs) { return m.forward(bs); });
    ASSERT_EQ(runner.shapes(), (std::vector<int>{8})) << runner.capture_error();
    auto stream = new_stream(d);
    StreamGuard guard(*stream);
    for (int round = 0; round < 3; ++round) {
      m.mode = round % 2 == 0 ? 1 : capture_mode;
      ops::fill_hash_uniform_(m.x, 810 + static_cast<uint64_t>(round), 0.0f, 1.0f);
      const std::vector<float> x_before = to_host_floats(m.x), kept_before = to_host_floats(m.kept);
      std::vector<float> got = to_host_floats(ops::contiguous(runner.replay(8, *stream)));
      EXPECT_EQ(to_host_floats(m.x), x_before)
          << "captured in mode " << capture_mode << ", replay " << round << " wrote over the persistent input";
      EXPECT_EQ(to_host_floats(m.kept), kept_before)
          << "captured in mode " << capture_mode << ", replay " << round << " wrote over a persistent buffer";
      ASSERT_EQ(got, to_host_floats(m.forward(8))) << "captured in mode " << capture_mode << ", replay " << round;
    }
  }
}

}  // namespace grt::testing

namespace grt::testing {

// A toy extend step split at a split op: out[:n] = rms_norm(op(rms_norm(x[:n]))), where the split
// op scales each real row by the live row count it reads through a pointer (so padded metadata
// would change the answer) and zeroes the padding rows.
struct ToyPiecewise {
  Tensor x, w1, w2;
  int live_rows = 0;       // what the runner sets before every replay
  int seen_rows = -1;      // what the split op read last
  bool capturing = false;  // set by before_capture
  int fail_from = 0;       // the split op throws at capture from this token count on (0: never)
  ToyPiecewise(Device d, int max_n) {
    DType dt = graph_test_dtype(d);
    x = empty(Shape{max_n, 64}, dt, d);
    w1 = empty(Shape{64}, dt, d);
    w2 = empty(Shape{64}, dt, d);
    ops::fill_hash_uniform_(x, 61, 0.0f, 1.0f);
    ops::fill_hash_uniform_(w1, 62, 1.0f, 0.5f);
    ops::fill_hash_uniform_(w2, 63, 1.0f, 0.5f);
    weights_ready(d);
  }
  Tensor forward(int n) {
    Tensor y = ops::rms_norm(x.narrow(0, 0, n), w1, 1e-6f);
    auto op = split_op("attention", [this](const Tensor& t, const int* rows) {
      seen_rows = *rows;
      if (capturing && fail_from > 0 && t.size(0) >= fail_from) GRT_FAIL("toy split op refuses {} rows", t.size(0));
      Tensor out = zeros(t.shape(), t.dtype(), t.device());
      // Real rows: t * (1 + rows / 8), computed as t plus a scaled copy.
      Tensor real = out.narrow(0, 0, *rows);
      std::vector<float> scale(static_cast<size_t>(t.size(1)), 1.0f + static_cast<float>(*rows) / 8.0f);
      ops::copy_(real, ops::rms_norm(t.narrow(0, 0, *rows), from_floats(scale, Shape{t.size(1)}, t.dtype(), t.device()),
                                     1e-6f));
      return out;
    });
    return ops::rms_norm(op(y, host_ref("rows", &live_rows)), w2, 1e-6f);
  }
};

inline ShapeGraphOptions piecewise_toy_options(std::vector<int> counts, ToyPiecewise& m) {
  ShapeGraphOptions o;
  o.shapes = std::move(counts);
  o.progress = false;
  o.policy = CapturePolicies{.split_ops = true};
  o.prepare = [&m](int n) {
    m.capturing = false;
    m.live_rows = n;
  };
  o.before_capture = [&m](int) { m.capturing = true; };
  return o;
}

// The split op runs eagerly between pieces at replay and sees the real row count.
inline void check_piecewise_split_op_sees_real_metadata(Device d) {
  auto cap_stream = new_stream(d);
  ToyPiecewise m(d, 32);
  ShapeGraphRunner runner(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)),
                          piecewise_toy_options({4, 8, 16, 32}, m));
  runner.capture([&](int n) { return m.forward(n); });
  ASSERT_EQ(runner.shapes(), (std::vector<int>{4, 8, 16, 32})) << runner.capture_error();
  EXPECT_EQ(runner.stats().front().segments, 2u);
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  for (int n : {3, 8, 13, 1, 32, 17}) {
    ops::fill_hash_uniform_(m.x, 700 + static_cast<uint64_t>(n), 0.0f, 1.0f);
    m.live_rows = n;  // the real batch, not the padded one
    std::vector<float> got = to_host_floats(ops::contiguous(runner.replay(n, *stream)));
    EXPECT_EQ(m.seen_rows, n);
    std::vector<float> want = to_host_floats(m.forward(n));
    ASSERT_EQ(got, want) << n << " rows padded to " << runner.padded_size(n);
  }
}

// A host value given to a split op by value is frozen at capture. In debug mode (check_args) a
// replay whose live value differs fails naming the step and the argument; without it the replay
// runs with the frozen value (which is why such values must be declared and checked).
inline void check_split_op_host_value_checked_in_debug(Device d) {
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  Tensor x = empty(Shape{4, 8}, DType::F32, d);
  ops::fill_hash_uniform_(x, 91, 0.0f, 1.0f);
  weights_ready(d);
  float scale = 2.0f;  // the live host scalar
  float seen = 0.0f;
  auto op = split_op("attention", [&seen](const Tensor& t, float s) {
    seen = s;
    Tensor out = empty_like(t);
    ops::copy_(out, t);
    return out;
  });
  auto pool = GraphPool::create(d);  // outlives the graph: it holds the graph's memory
  std::unique_ptr<SegmentedGraph> g;
  {
    SegmentedCapture cap(*stream, CaptureMemory::of_pool(pool), CapturePolicies{.split_ops = true, .check_args = true});
    Tensor y = op(ops::silu_and_mul(x), host_value("scale", &scale));
    g = cap.finish();
  }
  ASSERT_EQ(g->step_count(), 1u);
  EXPECT_TRUE(g->check_args());
  g->replay(*stream);  // unchanged: fine
  stream->synchronize();
  scale = 3.0f;
  const std::string msg = error_of([&] { g->replay(*stream); });
  EXPECT_NE(msg.find("'attention'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'scale'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("was 2 at capture and is 3 now"), std::string::npos) << msg;
  stream->synchronize();
  g->set_check_args(false);
  seen = 0.0f;
  g->replay(*stream);
  stream->synchronize();
  EXPECT_EQ(seen, 2.0f) << "without the check the frozen capture-time value is used";
}

// A split op failing at capture drops that token count and larger ones; the rest replay fine.
inline void check_piecewise_failure_degrades_per_size(Device d) {
  auto cap_stream = new_stream(d);
  ToyPiecewise m(d, 32);
  m.fail_from = 16;
  ShapeGraphRunner runner(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)),
                          piecewise_toy_options({4, 8, 16, 32}, m));
  runner.capture([&](int n) { return m.forward(n); });
  EXPECT_EQ(runner.shapes(), (std::vector<int>{4, 8}));
  EXPECT_NE(runner.capture_error().find("toy split op refuses"), std::string::npos) << runner.capture_error();
  m.capturing = false;
  StreamGuard guard(*cap_stream);
  m.live_rows = 6;
  std::vector<float> got = to_host_floats(ops::contiguous(runner.replay(6, *cap_stream)));
  EXPECT_EQ(got, to_host_floats(m.forward(6)));
}


// Policies compose: a piecewise capture that also honours breakable marks runs an eager_on_graph
// step (a host decision) eagerly between pieces, next to the split op, and writes its result back.
struct PiecewiseWithBranch {
  ToyPiecewise pw;
  BranchyDecode br;
  PiecewiseWithBranch(Device d, int max_n) : pw(d, max_n), br(d, max_n) {}
  void set_sign(int sign, uint64_t seed) { ops::fill_hash_uniform_(pw.x, 900 + seed, sign > 0 ? 1.0f : -1.0f, 0.5f); }
  Tensor forward(int n) {
    Tensor y = pw.forward(n);
    auto branch = eager_on_graph("host_branch", [this](const Tensor& t) { return br.branch_eager(t); });
    return ops::rms_norm(branch(y), br.w3, 1e-6f);
  }
};

inline void check_eager_on_graph_inside_piecewise(Device d) {
  auto cap_stream = new_stream(d);
  PiecewiseWithBranch m(d, 16);
  ShapeGraphOptions o = piecewise_toy_options({4, 16}, m.pw);
  // Split ops alone capture the host read, which fails every shape.
  {
    ShapeGraphRunner split_only(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)), o);
    split_only.capture([&](int n) { return m.forward(n); });
    EXPECT_TRUE(split_only.shapes().empty());
    EXPECT_NE(split_only.capture_error().find("not allowed during stream capture"), std::string::npos)
        << split_only.capture_error();
  }
  o.policy = CapturePolicies{.split_ops = true, .breakable = true};
  ShapeGraphRunner runner(*cap_stream, CaptureMemory::of_pool(GraphPool::create(d)), o);
  runner.capture([&](int n) { return m.forward(n); });
  ASSERT_EQ(runner.shapes(), (std::vector<int>{4, 16})) << runner.capture_error();
  EXPECT_EQ(runner.stats().front().segments, 3u);  // piece | attention | piece | host_branch | piece
  auto stream = new_stream(d);
  StreamGuard guard(*stream);
  const int signs[] = {1, -1, -1, 1};
  const int counts[] = {3, 16, 9, 4};
  for (int i = 0; i < 4; ++i) {
    m.set_sign(signs[i], static_cast<uint64_t>(i));
    m.pw.live_rows = counts[i];
    const int reads = m.br.host_reads;
    std::vector<float> got = to_host_floats(ops::contiguous(runner.replay(counts[i], *stream)));
    EXPECT_EQ(m.br.host_reads, reads + 1) << "the eager_on_graph step must run eagerly at replay";
    std::vector<float> want = to_host_floats(m.forward(counts[i]));
    ASSERT_EQ(got, want) << "replay " << i << " (sign " << signs[i] << ", " << counts[i] << " tokens)";
  }
}

}  // namespace grt::testing
