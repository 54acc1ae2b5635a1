// decode_step_weight_bytes (model/model_weights.h): the bytes a decode step reads, which the
// benches' rooflines divide by the copy rate.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "error_of.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace grt {
namespace {

double row_bytes(const Tensor& t) { return static_cast<double>(t.nbytes()) / static_cast<double>(t.size(0)); }

TEST(DecodeStepWeightBytes, TiedEmbeddingIsReadWholeAsLmHead) {
  ModelConfig c = ModelConfig::preset("tiny");
  c.tie_word_embeddings = true;
  const ModelWeights w = random_weights(c, Device::cpu(), DType::F32, 1);
  ASSERT_EQ(w.embed.data(), w.lm_head.data());
  EXPECT_DOUBLE_EQ(decode_step_weight_bytes(c, w, 1), static_cast<double>(w.bytes()));
  EXPECT_DOUBLE_EQ(decode_step_weight_bytes(c, w, 64), static_cast<double>(w.bytes()));
}

TEST(DecodeStepWeightBytes, SeparateEmbeddingCountsOnlyTheGatheredRows) {
  const ModelConfig c = ModelConfig::preset("tiny");
  ASSERT_FALSE(c.tie_word_embeddings);
  const ModelWeights w = random_weights(c, Device::cpu(), DType::F32, 1);
  const double rest = static_cast<double>(w.bytes()) - static_cast<double>(w.embed.nbytes());
  EXPECT_DOUBLE_EQ(decode_step_weight_bytes(c, w, 1), rest + row_bytes(w.embed));
  EXPECT_DOUBLE_EQ(decode_step_weight_bytes(c, w, 5), rest + 5 * row_bytes(w.embed));
  // More rows than the vocabulary: the table is read at most once.
  EXPECT_DOUBLE_EQ(decode_step_weight_bytes(c, w, 100000), static_cast<double>(w.bytes()));
}

TEST(DecodeStepWeightBytes, ExpertsCountAsTheShareABatchRoutesTo) {
  const ModelConfig c = ModelConfig::preset("tiny-qwen3-moe");
  ASSERT_FALSE(c.tie_word_embeddings);
  const ModelWeights w = random_weights(c, Device::cpu(), DType::F32, 1);
  double experts = 0;
  int sparse = 0;
  for (const LayerWeights& l : w.layers) {
    if (!l.expert_gate_up.defined()) continue;
    experts += static_cast<double>(l.expert_gate_up.nbytes() + l.expert_down.nbytes());
    ++sparse;
  }
  ASSERT_GT(sparse, 0);
  ASSERT_LT(sparse, c.num_hidden_layers);  // the preset's dense layer keeps its whole MLP
  const double k = c.num_experts_per_tok, e = c.num_experts;
  const double fixed = static_cast<double>(w.bytes()) - static_cast<double>(w.embed.nbytes()) - experts;
  for (int64_t rows : {1, 2, 7}) {
    const double share = 1.0 - std::pow(1.0 - k / e, static_cast<double>(rows));
    EXPECT_NEAR(decode_step_weight_bytes(c, w, rows), fixed + rows * row_bytes(w.embed) + share * experts, 1e-6 * experts)
        << rows << " rows";
  }
  // One token reads k of E experts; a large batch nearly all of them.
  EXPECT_NEAR(decode_step_weight_bytes(c, w, 1) - fixed - row_bytes(w.embed), experts * k / e, 1e-6 * experts);
  EXPECT_NEAR(decode_step_weight_bytes(c, w, 512) - fixed - 512 * row_bytes(w.embed), experts, 1e-6 * experts);
}

TEST(DecodeStepWeightBytes, RowsBelowOneAreRefused) {
  const ModelConfig c = ModelConfig::preset("tiny");
  const ModelWeights w = random_weights(c, Device::cpu(), DType::F32, 1);
  const std::string err = testing::error_of([&] { decode_step_weight_bytes(c, w, 0); });
  EXPECT_NE(err.find("0 rows: rows must be >= 1"), std::string::npos) << err;
}

}  // namespace
}  // namespace grt
