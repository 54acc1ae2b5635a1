// Small extends replayed on decode graphs as rows (runtime/extend_rows.h): the conversion, the
// rule, and the runner's dispatch on the CPU backend (bitwise equal to the eager forward, whose
// extend attention the rows must reproduce).
#include <gtest/gtest.h>

#include "runtime_test_util.h"
#include "piecewise_model_checks.h"
#include "extend_rows_checks.h"
#include "runtime/extend_rows.h"

namespace grt {
namespace {

const Device kCpu = Device::cpu();

// Request 0: 3 new tokens after a prefix of 5; request 1: 2 after none; request 2: a decode
// (1 token after 7), as a MIXED step puts its decodes last.
ForwardBatch mixed_extend() {
  ForwardBatch b;
  b.mode = ForwardMode::EXTEND;
  b.input_ids = {10, 11, 12, 20, 21, 30};
  b.positions = {5, 6, 7, 0, 1, 7};
  b.out_cache_loc = {105, 106, 107, 200, 201, 307};
  b.req_pool_indices = {4, 2, 9};
  b.prefix_lens = {5, 0, 7};
  b.extend_lens = {3, 2, 1};
  b.extend_start_loc = {0, 3, 5};
  b.seq_lens = {8, 2, 8};
  b.sampling.resize(3);
  b.sampling[1].temperature = 0.5f;
  b.sample_steps = {0, 3, 9};
  b.logit_requests = {0, 2};
  return b;
}

TEST(ExtendRows, EachTokenBecomesARowWithItsCausalLengthAndItsRequestsPrefix) {
  const ForwardBatch b = mixed_extend();
  b.validate();
  const ForwardBatch r = extend_as_decode_rows(b);
  EXPECT_EQ(r.mode, ForwardMode::DECODE);
  EXPECT_EQ(r.input_ids, b.input_ids);
  EXPECT_EQ(r.positions, b.positions);
  EXPECT_EQ(r.out_cache_loc, b.out_cache_loc);
  EXPECT_EQ(r.req_pool_indices, (std::vector<int32_t>{4, 4, 4, 2, 2, 9}));
  EXPECT_EQ(r.seq_lens, (std::vector<int32_t>{6, 7, 8, 1, 2, 8}));
  EXPECT_EQ(r.prefix_lens, (std::vector<int32_t>{5, 5, 5, 0, 0, 7}));
  EXPECT_EQ(r.sample_steps, (std::vector<int32_t>{0, 0, 0, 3, 3, 9}));
  ASSERT_EQ(r.sampling.size(), 6u);
  EXPECT_EQ(r.sampling[3].temperature, 0.5f);
  // The logits come back in the extend's order: the last row of requests 0 and 2.
  EXPECT_EQ(r.logit_rows(), b.logit_rows());
  EXPECT_EQ(r.logit_rows(), (std::vector<int32_t>{2, 5}));
  EXPECT_NO_THROW(r.validate());
  ForwardBatch bad = r;
  bad.prefix_lens[2] = 8;  // not below the row's seq len 8
  EXPECT_THROW(bad.validate(), Error);
  bad.prefix_lens.pop_back();
  EXPECT_THROW(bad.validate(), Error);
  ForwardBatch all = mixed_extend();
  all.return_all_logits = true;
  EXPECT_EQ(extend_as_decode_rows(all).logit_rows(), all.logit_rows());
}

TEST(ExtendRows, RuleNamesWhatRefusesABatch) {
  const ForwardBatch b = mixed_extend();
  EXPECT_EQ(extend_rows_refusal(b, {6, 100}), "");
  EXPECT_NE(extend_rows_refusal(b, {0, 100}).find("--decode-graph-extend-max-tokens 0"), std::string::npos);
  EXPECT_NE(extend_rows_refusal(b, {5, 100}).find("6 tokens exceed --decode-graph-extend-max-tokens 5"),
            std::string::npos);
  // Rows read 6 + 7 + 8 + 1 + 2 + 8 = 32 positions, of which 8 + 2 + 8 once: 14 re-reads (the decode none).
  EXPECT_EQ(extend_rows_refusal(b, {6, 14}), "");
  EXPECT_NE(extend_rows_refusal(b, {6, 13}).find("re-read 14 cached positions (beyond reading each once), more than 13"),
            std::string::npos);
  ForwardBatch decodes_only = b;  // as a mixed step whose extends are all single tokens: nothing re-read
  decodes_only.extend_lens = {1, 1, 1};
  decodes_only.input_ids.resize(3);
  decodes_only.positions.resize(3);
  decodes_only.out_cache_loc.resize(3);
  decodes_only.extend_start_loc = {0, 1, 2};
  decodes_only.seq_lens = {6, 1, 8};
  EXPECT_EQ(extend_rows_refusal(decodes_only, {6, 0}), "");
  ForwardBatch d = extend_as_decode_rows(b);
  EXPECT_NE(extend_rows_refusal(d, {6, 100}).find("forward mode is decode"), std::string::npos);
  EXPECT_THROW(extend_as_decode_rows(d), Error);
}

std::unique_ptr<ModelRunner> make(ModelRunnerOptions o) { return testing::extend_rows_runner(kCpu, o); }

TEST(ExtendRows, SmallExtendsReplayDecodeGraphsAndEqualTheEagerExtend) {
  testing::check_small_extends_on_decode_graphs(kCpu, 0.0f);
}

TEST(ExtendRows, VerificationReplaysRowsOfAnExtendInDecodeGraphs) {
  ModelRunnerOptions o = testing::small_graph_options();
  o.verify_cuda_graph = true;
  auto g = make(o);
  for (const CapturedShape& s : g->decode_graphs()->runner().stats()) {
    EXPECT_TRUE(s.verified) << s.shape;
    EXPECT_EQ(s.max_abs_diff, 0.0) << s.shape;
  }
}

TEST(ExtendRows, NegativeMaxTokensIsAnErrorNamingTheFlag) {
  ModelRunnerOptions o = testing::small_graph_options();
  o.decode_graph_extend_max_tokens = -1;
  try {
    make(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--decode-graph-extend-max-tokens -1 must be >= 0"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace grt
