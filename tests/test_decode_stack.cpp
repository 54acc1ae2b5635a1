// ops::decode_stack_ on the CPU: its op chain against the model's decode forward (the chain is
// the reference the CUDA kernel is tested against in tests/cuda/test_decode_stack_cuda.cpp), and
// the fusable rule.
#include <gtest/gtest.h>

#include "decode_stack_checks.h"

using namespace grt;
using namespace grt::testing;

TEST(DecodeStack, ChainEqualsTheModelsDecodeForward) {
  for (int context : {0, 5, 40}) {
    auto r = tiny_runner(Device::cpu(), 4, 64, 256);
    const DecodeStackRun run = run_decode_stack_against_model(*r, context, 11, /*with_stack=*/false);
    ASSERT_EQ(run.stack_logits.size(), run.model_logits.size());
    EXPECT_LT(max_rel_diff(run.stack_logits, run.model_logits), 1e-6f) << "context " << context;
    EXPECT_EQ(run.stack_kv, run.model_kv) << "context " << context;
    // The CPU op is the chain.
    const DecodeStackRun op = run_decode_stack_against_model(*r, context, 11, /*with_stack=*/false);
    EXPECT_EQ(op.stack_logits, run.stack_logits);
  }
}

TEST(DecodeStack, NeverFusableOnTheCpu) {
  auto r = tiny_runner(Device::cpu(), 4, 64, 256);
  HeldRequest req = hold(*r, 4);
  const ops::DecodeStackInputs in = decode_stack_inputs(*r, req, 3);
  Tensor residual = zeros(Shape{1, r->model().config().hidden_size}, DType::F32, Device::cpu());
  EXPECT_FALSE(ops::decode_stack_fusable(residual, decode_stack_layers(*r), in));
  // decode_stack_ on the CPU runs the chain whatever the rule says.
  ops::decode_stack_(residual, decode_stack_layers(*r), in);
}
