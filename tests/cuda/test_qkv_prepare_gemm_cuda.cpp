// The QKV GEMM with the attention prologue in its epilogue (ops/qkv_prepare_gemm.h) on an H100:
// bit for bit prepare_qkv_ over the same kernel's plain product (q, both caches, slots and
// positions out of range included), that product against cuBLASLt's linear and a double-sum
// reference, a row's bits independent of the other rows, replay of a captured graph equal to eager,
// and the shapes it refuses. Fails (never skips) on a device without sm_90a code.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "device/device.h"
#include "device/graph.h"
#include "device/stream.h"
#include "memory/graph_pool.h"
#include "memory/tensor_alloc.h"
#include "ops/copy.h"
#include "ops/linear.h"
#include "ops/prepare_qkv.h"
#include "ops/qkv_prepare_gemm.h"
#include "ops/rope.h"
#include "qkv_test_util.h"
#include "swiglu_reference.h"

namespace grt {
namespace {

const Device kGpu = Device::cuda(0);
using swiglu_test::bf16_values;
using swiglu_test::worst_error;
using testing::same_bits;

struct Case {
  int64_t rows, hidden, nq, nkv;
  bool norm;
};

std::string case_name(const Case& c) {
  return "T" + std::to_string(c.rows) + "_H" + std::to_string(c.hidden) + "_q" + std::to_string(c.nq) + "_kv" +
         std::to_string(c.nkv) + (c.norm ? "_norm" : "");
}

// Inputs of one case on the GPU: x, w_qkv, norm weights, rope table, positions (a few out of
// range: no rope for those rows), slots (distinct; a few out of range: nothing stored) and two
// identical caches filled with a pattern (so a stray or missing store shows).
struct Inputs {
  Tensor x, w, q_norm, k_norm, cos_sin, positions, slots;
  std::vector<float> cache_init;
  int64_t num_slots = 0;
  Tensor cache(int64_t nkv) const {
    return from_floats(cache_init, Shape{num_slots, nkv * 128}, DType::BF16, kGpu);
  }
};

Inputs make_inputs(const Case& c, uint32_t seed) {
  Inputs in;
  const int64_t n = (c.nq + 2 * c.nkv) * 128, P = 8192;
  in.x = from_floats(bf16_values(static_cast<size_t>(c.rows * c.hidden), seed, -1.0f, 1.0f), Shape{c.rows, c.hidden},
                     DType::BF16, kGpu);
  const float ws = 2.0f / std::sqrt(static_cast<float>(c.hidden));
  in.w = from_floats(bf16_values(static_cast<size_t>(n * c.hidden), seed + 1, -ws, ws), Shape{n, c.hidden},
                     DType::BF16, kGpu);
  in.q_norm = from_floats(bf16_values(128, seed + 2, 0.5f, 1.5f), Shape{128}, DType::BF16, kGpu);
  in.k_norm = from_floats(bf16_values(128, seed + 3, 0.5f, 1.5f), Shape{128}, DType::BF16, kGpu);
  ops::RopeParams p;
  p.head_dim = 128;
  p.theta = 1000000.0f;
  in.cos_sin = ops::rope_cos_sin_cache(p, P, kGpu);
  in.num_slots = 2 * c.rows + 5;
  std::vector<int32_t> pos(static_cast<size_t>(c.rows)), loc(static_cast<size_t>(c.rows));
  for (int64_t t = 0; t < c.rows; ++t) {
    pos[static_cast<size_t>(t)] = static_cast<int32_t>((t * 977 + 3) % P);
    loc[static_cast<size_t>(t)] = static_cast<int32_t>((2 * t + 7) % in.num_slots);  // distinct
  }
  if (c.rows > 3) {
    pos[1] = static_cast<int32_t>(P);  // out of range: no rope
    pos[3] = -2;
    loc[2] = -1;  // out of range: no cache store
    loc[3] = static_cast<int32_t>(in.num_slots);
  }
  const Shape s{c.rows};
  in.positions = from_vector(pos, s, DType::I32, kGpu);
  in.slots = from_vector(loc, s, DType::I32, kGpu);
  in.cache_init = bf16_values(static_cast<size_t>(in.num_slots * c.nkv * 128), seed + 4, -2.0f, 2.0f);
  return in;
}

class QkvPrepareGemmCuda : public ::testing::TestWithParam<Case> {};

// qwen3-0.6b's extend at 2048 tokens (16 q / 8 kv heads, K 1024); ragged row counts (partial last
// tiles); a k and a v head in one 256-column tile (nkv 1); llama's K 4096 without norms; one row.
INSTANTIATE_TEST_SUITE_P(Shapes, QkvPrepareGemmCuda,
                         ::testing::Values(Case{2048, 1024, 16, 8, true}, Case{300, 512, 4, 2, true},
                                           Case{77, 256, 2, 1, true}, Case{130, 4096, 4, 1, false},
                                           Case{1, 128, 2, 2, true}),
                         [](const ::testing::TestParamInfo<Case>& i) { return case_name(i.param); });

TEST_P(QkvPrepareGemmCuda, EqualsPrepareQkvOverItsGemmBitForBit) {
  const Case c = GetParam();
  const Inputs in = make_inputs(c, 11);
  const Tensor qn = c.norm ? in.q_norm : Tensor(), kn = c.norm ? in.k_norm : Tensor();
  const int64_t hd = 128;
  // The reference: the kernel's plain product, then prepare_qkv_ on its column slices.
  Tensor qkv = ops::qkv_gemm(in.x, in.w, 128, c.nq, c.nkv);
  ASSERT_EQ(qkv.shape(), (Shape{c.rows, (c.nq + 2 * c.nkv) * hd}));
  Tensor ref_k = in.cache(c.nkv), ref_v = in.cache(c.nkv);
  Tensor ref_q = qkv.slice(1, 0, c.nq * hd);
  ops::prepare_qkv_(ref_q, qkv.slice(1, c.nq * hd, (c.nq + c.nkv) * hd),
                    qkv.slice(1, (c.nq + c.nkv) * hd, (c.nq + 2 * c.nkv) * hd), qn, kn, 1e-6f, in.positions,
                    in.cos_sin, 128, in.slots, ref_k, ref_v);
  Tensor got_k = in.cache(c.nkv), got_v = in.cache(c.nkv);
  Tensor q = ops::qkv_prepare_gemm(in.x, in.w, qn, kn, 1e-6f, in.positions, in.cos_sin, 128, c.nq, c.nkv, in.slots,
                                   got_k, got_v);
  ASSERT_EQ(q.shape(), (Shape{c.rows, c.nq * hd}));
  const std::string what = case_name(c);
  EXPECT_TRUE(same_bits(to_host_floats(q), to_host_floats(ops::contiguous(ref_q)))) << what << ": q";
  EXPECT_TRUE(same_bits(to_host_floats(got_k), to_host_floats(ref_k))) << what << ": k cache";
  EXPECT_TRUE(same_bits(to_host_floats(got_v), to_host_floats(ref_v))) << what << ": v cache";
  // The slots out of range kept the pattern: the comparison above covers them (both start equal),
  // and a store that went to slot 0 instead would differ from the reference there.
}

TEST_P(QkvPrepareGemmCuda, GemmMatchesCublasAndDoubleSums) {
  const Case c = GetParam();
  const Inputs in = make_inputs(c, 21);
  const int64_t n = (c.nq + 2 * c.nkv) * 128;
  const std::vector<float> got = to_host_floats(ops::qkv_gemm(in.x, in.w, 128, c.nq, c.nkv));
  const std::vector<float> lt = to_host_floats(ops::linear(in.x, in.w));
  ASSERT_EQ(got.size(), lt.size());
  // Both are the bf16 rounding of a float sum over K in different orders: a rounding or two apart.
  EXPECT_LE(worst_error(got.data(), lt.data(), got.size()), 1e-2) << case_name(c) << " vs cuBLASLt";
  EXPECT_EQ(got, to_host_floats(ops::qkv_gemm(in.x, in.w, 128, c.nq, c.nkv))) << "not deterministic";
  // Double sums on a few rows (first, middle, last).
  const std::vector<float> xv = to_host_floats(in.x), wv = to_host_floats(in.w);
  for (int64_t r : {int64_t{0}, c.rows / 2, c.rows - 1}) {
    std::vector<float> ref(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t kk = 0; kk < c.hidden; ++kk)
        s += double(xv[static_cast<size_t>(r * c.hidden + kk)]) * wv[static_cast<size_t>(j * c.hidden + kk)];
      ref[static_cast<size_t>(j)] = static_cast<float>(s);
    }
    EXPECT_LE(worst_error(got.data() + r * n, ref.data(), ref.size()), 1e-2) << case_name(c) << " row " << r;
  }
}

// A row's bits do not depend on the other rows (piecewise graphs pad their token counts): the first
// 77 rows of a 300-row run give the bits of those rows alone, q and caches.
TEST(QkvPrepareGemmCudaRows, RowBitsIndependentOfOtherRows) {
  const Case c{300, 512, 4, 2, true};
  const Inputs in = make_inputs(c, 31);
  const int64_t part = 77;
  Tensor k_all = in.cache(c.nkv), v_all = in.cache(c.nkv), k_part = in.cache(c.nkv), v_part = in.cache(c.nkv);
  const std::vector<float> all = to_host_floats(ops::qkv_prepare_gemm(
      in.x, in.w, in.q_norm, in.k_norm, 1e-6f, in.positions, in.cos_sin, 128, c.nq, c.nkv, in.slots, k_all, v_all));
  const std::vector<float> alone = to_host_floats(ops::qkv_prepare_gemm(
      ops::contiguous(in.x.slice(0, 0, part)), in.w, in.q_norm, in.k_norm, 1e-6f, in.positions.slice(0, 0, part),
      in.cos_sin, 128, c.nq, c.nkv, in.slots.slice(0, 0, part), k_part, v_part));
  EXPECT_TRUE(same_bits(alone, std::vector<float>(all.begin(), all.begin() + part * c.nq * 128)));
  // The rows' slots hold the same bits in both caches (slots of rows >= 77 kept the pattern in k_part).
  const std::vector<int32_t> loc = to_host_vector<int32_t>(in.slots);
  const std::vector<float> ka = to_host_floats(k_all), kp = to_host_floats(k_part);
  const size_t width = static_cast<size_t>(c.nkv * 128);
  for (int64_t t = 0; t < part; ++t) {
    const int32_t s = loc[static_cast<size_t>(t)];
    if (s < 0 || s >= in.num_slots) continue;
    EXPECT_TRUE(same_bits(std::vector<float>(ka.begin() + s * width, ka.begin() + (s + 1) * width),
                          std::vector<float>(kp.begin() + s * width, kp.begin() + (s + 1) * width)))
        << "row " << t;
  }
}

// Captured in a graph, the kernel replays the eager bits on new inputs.
TEST(QkvPrepareGemmCudaCapture, ReplayEqualsEager) {
  const Case c{500, 1024, 16, 8, true};
  const Inputs in = make_inputs(c, 41);
  Tensor kc = in.cache(c.nkv), vc = in.cache(c.nkv);
  auto stream = new_stream(kGpu);
  StreamGuard guard(*stream);
  const auto run = [&](const Tensor& k, const Tensor& v) {
    return ops::qkv_prepare_gemm(in.x, in.w, in.q_norm, in.k_norm, 1e-6f, in.positions, in.cos_sin, 128, c.nq, c.nkv,
                                 in.slots, k, v);
  };
  (void)run(kc, vc);  // warm-up outside the capture (the kernel's attributes)
  auto pool = GraphPool::create(kGpu);
  Tensor out;
  std::unique_ptr<Graph> graph;
  stream->begin_capture();
  {
    PoolCaptureScope scope(pool, *stream);
    out = run(kc, vc);
    graph = stream->end_capture();
  }
  auto exec = graph->instantiate();
  for (int round = 0; round < 2; ++round) {
    ops::copy_(in.x, from_floats(bf16_values(static_cast<size_t>(c.rows * c.hidden), 50 + round, -1.0f, 1.0f),
                                 Shape{c.rows, c.hidden}, DType::BF16, kGpu));
    exec->launch(*stream);
    const std::vector<float> replayed = to_host_floats(out), k_replayed = to_host_floats(kc);
    Tensor k2 = in.cache(c.nkv), v2 = in.cache(c.nkv);
    EXPECT_TRUE(same_bits(replayed, to_host_floats(run(k2, v2)))) << "round " << round;
    EXPECT_TRUE(same_bits(k_replayed, to_host_floats(k2))) << "round " << round << ": k cache";
  }
}

// Shapes outside the rule are errors that name the reason, never a launch.
TEST(QkvPrepareGemmCudaChecks, RefusesUnfitShapes) {
  const Case c{64, 256, 2, 1, true};
  const Inputs in = make_inputs(c, 61);
  Tensor kc = in.cache(c.nkv), vc = in.cache(c.nkv);
  const auto prepare = [&](const Tensor& x, const Tensor& w, int hd, int64_t nq, int64_t nkv) {
    return ops::qkv_prepare_gemm(x, w, Tensor(), Tensor(), 1e-6f, in.positions, in.cos_sin, hd, nq, nkv, in.slots, kc,
                                 vc);
  };
  // head_dim 64 (four heads a tile).
  EXPECT_THROW((void)prepare(in.x, empty(Shape{4 * 128, 256}, DType::BF16, kGpu), 64, 4, 2), Error);
  // nq + 2 nkv odd (a tile would straddle the end): 3 q heads, 1 kv head.
  EXPECT_THROW((void)prepare(in.x, empty(Shape{5 * 128, 256}, DType::BF16, kGpu), 128, 3, 1), Error);
  // K not a multiple of 64.
  EXPECT_THROW((void)prepare(empty(Shape{64, 96}, DType::BF16, kGpu), empty(Shape{4 * 128, 96}, DType::BF16, kGpu),
                             128, 2, 1),
               Error);
  // f16.
  EXPECT_THROW((void)prepare(empty(Shape{64, 256}, DType::F16, kGpu), empty(Shape{4 * 128, 256}, DType::F16, kGpu),
                             128, 2, 1),
               Error);
  // w_qkv rows that do not match the heads.
  EXPECT_THROW((void)prepare(in.x, empty(Shape{6 * 128, 256}, DType::BF16, kGpu), 128, 2, 1), Error);
  // A cache of the wrong width.
  Tensor narrow = empty(Shape{in.num_slots, 64}, DType::BF16, kGpu);
  EXPECT_THROW((void)ops::qkv_prepare_gemm(in.x, in.w, Tensor(), Tensor(), 1e-6f, in.positions, in.cos_sin, 128, 2, 1,
                                           in.slots, narrow, narrow),
               Error);
}

}  // namespace
}  // namespace grt
