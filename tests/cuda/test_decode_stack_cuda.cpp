// The one-kernel decode stack (ops/cuda/decode_stack.cu) against the model's decode forward (the
// op chain) on random-weight models with head_dim 128: logits and the K/V rows it stores, for
// contexts of no cached token, a few, and enough that a split runs several KV tiles.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "decode_stack_checks.h"
#include "device/device.h"
#include "model/make_model.h"

using namespace grt;
using namespace grt::testing;

namespace {

std::string stack_model_dir(const std::string& name, const ModelConfig& c) {
  const std::string dir = ::testing::TempDir() + "decode_stack_" + name + "_" + std::to_string(getpid());
  write_random_model(c, dir, /*seed=*/5, DType::BF16);
  return dir;
}

ModelConfig stack_config(Arch arch, int hidden, int inter, int layers, int q_heads, int kv_heads) {
  ModelConfig c = ModelConfig::preset("tiny");
  c.arch = arch;
  c.hidden_size = hidden;
  c.intermediate_size = inter;
  c.num_hidden_layers = layers;
  c.num_attention_heads = q_heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = 128;
  c.qk_norm = arch == Arch::Qwen3;
  c.attention_bias = arch == Arch::Qwen2;
  return c;
}

}  // namespace

TEST(DecodeStackCuda, KernelMatchesTheModelsDecodeChain) {
  ASSERT_TRUE(cuda_available()) << "the CUDA tests need a usable GPU";
  struct Case {
    const char* name;
    ModelConfig config;
  };
  const Case cases[] = {
      {"qwen3", stack_config(Arch::Qwen3, 256, 512, 3, 4, 2)},    // q/k norm, group 2
      {"qwen2", stack_config(Arch::Qwen2, 512, 768, 2, 8, 2)},    // qkv bias, group 4
      {"llama", stack_config(Arch::Llama, 256, 1024, 2, 8, 1)},   // group 8, one kv head
  };
  for (const Case& c : cases) {
    const std::string dir = stack_model_dir(c.name, c.config);
    for (int context : {0, 37, 1500}) {
      auto r = tiny_runner(Device::cuda(0), 4, 2048, 8192, dir);
      const DecodeStackRun a = run_decode_stack_against_model(*r, context, 11, /*with_stack=*/true);
      EXPECT_LT(max_rel_diff(a.stack_logits, a.model_logits), 2e-2f) << c.name << " context " << context;
      EXPECT_LT(max_rel_diff(a.stack_kv, a.model_kv), 2e-2f) << c.name << " context " << context;
      // Deterministic, and the grid barrier and split counters are left at zero: a second run on
      // another request gives the same bits.
      const DecodeStackRun b = run_decode_stack_against_model(*r, context, 11, /*with_stack=*/true);
      EXPECT_EQ(a.stack_logits, b.stack_logits) << c.name << " context " << context;
    }
    std::filesystem::remove_all(dir);
  }
}

TEST(DecodeStackCuda, FusableOnlyForHeadDim128Bf16OneRow) {
  ASSERT_TRUE(cuda_available()) << "the CUDA tests need a usable GPU";
  auto tiny = tiny_runner(Device::cuda(0), 4, 64, 256);  // head_dim 16
  HeldRequest req = hold(*tiny, 4);
  Tensor residual = zeros(Shape{1, tiny->model().config().hidden_size}, DType::BF16, Device::cuda(0));
  EXPECT_FALSE(ops::decode_stack_fusable(residual, decode_stack_layers(*tiny), decode_stack_inputs(*tiny, req, 3)));
  const std::string dir = stack_model_dir("rule", stack_config(Arch::Qwen3, 256, 512, 2, 4, 2));
  auto r = tiny_runner(Device::cuda(0), 4, 64, 256, dir);
  HeldRequest q = hold(*r, 4);
  const ops::DecodeStackInputs in = decode_stack_inputs(*r, q, 3);
  EXPECT_TRUE(ops::decode_stack_fusable(zeros(Shape{1, 256}, DType::BF16, Device::cuda(0)), decode_stack_layers(*r), in));
  EXPECT_FALSE(ops::decode_stack_fusable(zeros(Shape{2, 256}, DType::BF16, Device::cuda(0)), decode_stack_layers(*r), in));
  std::filesystem::remove_all(dir);
}
