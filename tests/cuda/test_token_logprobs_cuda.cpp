// ops::token_logprobs on CUDA against the CPU implementation on the same logits (a vocabulary
// the size of Llama 3's, ties, rows picked out of order).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "memory/tensor_alloc.h"
#include "ops/token_logprobs.h"

namespace grt {
namespace {

TEST(TokenLogprobsCuda, MatchesCpu) {
  const int64_t rows = 6, vocab = 128256;
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.0f, 4.0f);
  std::vector<float> x(static_cast<size_t>(rows * vocab));
  for (float& v : x) v = n(rng);
  x[100] = x[50] = x[7] = 60.0f;  // ties in row 0
  const std::vector<int32_t> ids = {7, 1, 128255, 40, 0, 99};
  const std::vector<int32_t> want = {5, 0, 2, 3};
  for (int k : {0, 1, 20}) {
    ops::TokenLogprobTensors out[2];
    int i = 0;
    for (Device d : {Device::cpu(), Device::cuda(0)}) {
      out[i++] = ops::token_logprobs(from_vector(x, Shape{rows, vocab}, DType::F32, d),
                                     from_vector(ids, Shape{rows}, DType::I32, d),
                                     from_vector(want, Shape{4}, DType::I32, d), k);
    }
    const auto lp_cpu = to_host_vector<float>(out[0].logprob), lp_gpu = to_host_vector<float>(out[1].logprob);
    for (size_t j = 0; j < want.size(); ++j) EXPECT_NEAR(lp_gpu[j], lp_cpu[j], 1e-4) << "k " << k << " row " << j;
    if (k == 0) continue;
    EXPECT_EQ(to_host_vector<int32_t>(out[1].top_ids), to_host_vector<int32_t>(out[0].top_ids)) << "k " << k;
    const auto t_cpu = to_host_vector<float>(out[0].top_logprob), t_gpu = to_host_vector<float>(out[1].top_logprob);
    for (size_t j = 0; j < t_cpu.size(); ++j) EXPECT_NEAR(t_gpu[j], t_cpu[j], 1e-4) << "k " << k << " at " << j;
  }
}

}  // namespace
}  // namespace grt
