// The model on the GPU (bf16): against transformers' golden logits and greedy tokens, against
// our CPU float32 forward, and the batching semantics of the eager forward.
#include <gtest/gtest.h>

#include <cmath>

#include "device/device.h"
#include "golden_fixture.h"
#include "runtime/engine.h"
#include "runtime_test_util.h"

using namespace grt;
using namespace grt::testing;

namespace {
#define REQUIRE_GPU() \
  if (!cuda_available()) GTEST_SKIP() << "no GPU"
}  // namespace

class GoldenCuda : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenCuda, Bf16MatchesTransformers) {
  REQUIRE_GPU();
  const std::string dir = std::string(GRAPHRT_TEST_DATA) + "/" + GetParam();
  GoldenFixture g = GoldenFixture::load(dir);
  auto runner = tiny_runner(Device::cuda(0), 8, 128, 4096, dir);
  Engine engine(*runner);
  auto logits = engine.score(g.sequences);
  for (size_t s = 0; s < g.sequences.size(); ++s)
    EXPECT_LT(rel_error(logits[s], g.logits[s]), 3e-2f) << g.name << " sequence " << s;
  std::vector<GenerateRequest> reqs;
  for (size_t s = 0; s < g.sequences.size(); ++s)
    reqs.push_back({g.sequences[s], static_cast<int>(g.greedy[s].size()), {}});
  auto out = engine.generate(reqs);
  for (size_t s = 0; s < g.sequences.size(); ++s) EXPECT_EQ(out[s], g.greedy[s]) << g.name << " sequence " << s;
}

INSTANTIATE_TEST_SUITE_P(Architectures, GoldenCuda, ::testing::Values("llama", "mistral", "qwen2", "qwen3"),
                         [](const auto& info) { return std::string(info.param); });

TEST(ModelCuda, Bf16ForwardTracksCpuFloat32) {
  REQUIRE_GPU();
  auto cpu = tiny_runner(Device::cpu());
  auto gpu = tiny_runner(Device::cuda(0));
  std::vector<std::vector<int32_t>> prompts = {{1, 2, 3, 4, 5, 6, 7}, {9, 8, 7}, {100, 200, 300, 400, 500, 11, 12, 13, 14, 15, 16, 17, 18}};
  Engine ce(*cpu), ge(*gpu);
  auto a = ce.score(prompts), b = ge.score(prompts);
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::vector<std::vector<float>> want = {a[i]};
    EXPECT_LT(rel_error(b[i], want), 3e-2f) << "prompt " << i;
  }
}

TEST(ModelCuda, DecodeAfterExtendEqualsLongerExtend) {
  REQUIRE_GPU();
  auto r = tiny_runner(Device::cuda(0));
  const size_t vocab = static_cast<size_t>(r->model().config().vocab_size);
  std::vector<int32_t> p = {5, 17, 29, 41, 53, 65, 77, 89, 101, 113};
  HeldRequest whole = hold(*r, 10), a = hold(*r, 10);
  std::vector<float> ref = extend_all_logits(*r, {{&whole, p, 0}});
  extend_all_logits(*r, {{&a, {p.begin(), p.begin() + 4}, 0}});
  extend_all_logits(*r, {{&a, {p.begin() + 4, p.end() - 1}, 4}});
  std::vector<float> dec = decode_logits(*r, {{&a, p.back(), 9}});
  std::vector<float> last(ref.end() - static_cast<int64_t>(vocab), ref.end());
  EXPECT_LT(max_rel_diff(dec, last), 2e-2f);
}

TEST(ModelCuda, GenerateOnCudaMatchesCpuTokensMostly) {
  REQUIRE_GPU();
  auto cpu = tiny_runner(Device::cpu());
  auto gpu = tiny_runner(Device::cuda(0));
  Engine ce(*cpu), ge(*gpu);
  std::vector<GenerateRequest> reqs = {{{1, 2, 3}, 8, {}}, {{40, 50, 60, 70}, 8, {}}};
  auto a = ce.generate(reqs), b = ge.generate(reqs);
  // bf16 vs float32: the first tokens must agree; later ones may drift after a near tie.
  for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(a[i][0], b[i][0]) << "request " << i;
}
