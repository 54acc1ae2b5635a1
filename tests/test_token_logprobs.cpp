// ops::token_logprobs on the CPU and the logprobs sample_batch returns, against a log_softmax
// and top-k computed here in double precision from the same logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "memory/tensor_alloc.h"
#include "ops/token_logprobs.h"
#include "runtime/batch_sampler.h"

namespace grt {
namespace {

const Device kCpu = Device::cpu();

struct Ref {
  double logprob;
  std::vector<int32_t> top;
  std::vector<double> top_lp;
};

Ref reference(const std::vector<float>& x, int64_t row, int64_t vocab, int32_t id, int k) {
  const float* r = x.data() + row * vocab;
  double mx = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i) mx = std::max(mx, static_cast<double>(r[i]));
  double sum = 0;
  for (int64_t i = 0; i < vocab; ++i) sum += std::exp(r[i] - mx);
  const double lse = mx + std::log(sum);
  Ref out{r[id] - lse, {}, {}};
  std::vector<int32_t> idx(static_cast<size_t>(vocab));
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return r[a] > r[b]; });
  for (int t = 0; t < k; ++t) {
    out.top.push_back(idx[static_cast<size_t>(t)]);
    out.top_lp.push_back(r[idx[static_cast<size_t>(t)]] - lse);
  }
  return out;
}

std::vector<float> random_logits(int64_t rows, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 3.0f);
  std::vector<float> x(static_cast<size_t>(rows * vocab));
  for (float& v : x) v = n(rng);
  // Ties: equal logits must rank by id.
  x[5] = x[9] = x[2] = 40.0f;
  return x;
}

TEST(TokenLogprobs, CpuMatchesDoublePrecisionReference) {
  const int64_t rows = 5, vocab = 1000;
  const auto x = random_logits(rows, vocab, 7);
  const std::vector<int32_t> ids = {3, 999, 0, 512, 77};
  const std::vector<int32_t> want = {4, 0, 2};
  const int k = 20;
  Tensor logits = from_vector(x, Shape{rows, vocab}, DType::F32, kCpu);
  auto out = ops::token_logprobs(logits, from_vector(ids, Shape{rows}, DType::I32, kCpu),
                                 from_vector(want, Shape{3}, DType::I32, kCpu), k);
  const auto lp = to_host_vector<float>(out.logprob);
  const auto top = to_host_vector<int32_t>(out.top_ids);
  const auto top_lp = to_host_vector<float>(out.top_logprob);
  ASSERT_EQ(lp.size(), 3u);
  ASSERT_EQ(top.size(), 3u * k);
  for (size_t j = 0; j < want.size(); ++j) {
    const Ref ref = reference(x, want[j], vocab, ids[static_cast<size_t>(want[j])], k);
    EXPECT_NEAR(lp[j], ref.logprob, 1e-4) << "row " << want[j];
    for (int t = 0; t < k; ++t) {
      EXPECT_EQ(top[j * k + t], ref.top[static_cast<size_t>(t)]) << "row " << want[j] << " rank " << t;
      EXPECT_NEAR(top_lp[j * k + t], ref.top_lp[static_cast<size_t>(t)], 1e-4);
    }
  }
  // Row 0 (asked second) has tied maxima: by id.
  EXPECT_EQ(top[k + 0], 2);
  EXPECT_EQ(top[k + 1], 5);
  EXPECT_EQ(top[k + 2], 9);
}

TEST(TokenLogprobs, FewerTokensThanKAndNoTop) {
  const std::vector<float> x = {1.0f, 2.0f, 3.0f};
  Tensor logits = from_vector(x, Shape{1, 3}, DType::F32, kCpu);
  Tensor ids = from_vector(std::vector<int32_t>{1}, Shape{1}, DType::I32, kCpu);
  Tensor rows = from_vector(std::vector<int32_t>{0}, Shape{1}, DType::I32, kCpu);
  auto out = ops::token_logprobs(logits, ids, rows, 5);
  const auto top = to_host_vector<int32_t>(out.top_ids);
  EXPECT_EQ(top, (std::vector<int32_t>{2, 1, 0, -1, -1}));
  auto none = ops::token_logprobs(logits, ids, rows, 0);
  EXPECT_FALSE(none.top_ids.defined());
  EXPECT_NEAR(to_host_vector<float>(none.logprob)[0], reference(x, 0, 3, 1, 0).logprob, 1e-6);
  EXPECT_THROW(ops::token_logprobs(logits, ids, rows, 21), Error);
  EXPECT_THROW(ops::token_logprobs(logits, from_vector(std::vector<int32_t>{1, 2}, Shape{2}, DType::I32, kCpu), rows, 1),
               Error);
}

TEST(TokenLogprobs, SampleBatchReturnsThemOnlyForRowsThatAsk) {
  const int64_t rows = 3, vocab = 300;
  const auto x = random_logits(rows, vocab, 11);
  std::vector<SampleRow> r(3);
  r[0].logprobs = true;
  r[0].top_logprobs = 3;
  r[2].logprobs = true;  // chosen token only
  r[1].params.temperature = 0.8f;
  r[1].params.seed = 5;
  Tensor logits = from_vector(x, Shape{rows, vocab}, DType::F32, kCpu);
  const SampleResult res = sample_batch(logits, r);
  ASSERT_EQ(res.ids.size(), 3u);
  for (int row : {0, 2}) {
    const Ref ref = reference(x, row, vocab, res.ids[static_cast<size_t>(row)], r[static_cast<size_t>(row)].top_logprobs);
    const TokenLogprob& got = res.logprobs[static_cast<size_t>(row)];
    EXPECT_EQ(got.id, res.ids[static_cast<size_t>(row)]);
    EXPECT_NEAR(got.logprob, ref.logprob, 1e-4);
    ASSERT_EQ(got.top.size(), ref.top.size());
    for (size_t t = 0; t < ref.top.size(); ++t) {
      EXPECT_EQ(got.top[t].id, ref.top[t]);
      EXPECT_NEAR(got.top[t].logprob, ref.top_lp[t], 1e-4);
    }
  }
  EXPECT_TRUE(res.logprobs[1].top.empty());
  r[0].top_logprobs = 21;
  EXPECT_THROW(sample_batch(logits, r), Error);
}

}  // namespace
}  // namespace grt
