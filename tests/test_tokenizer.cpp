// Tokenizer goldens (from @huggingface/tokenizers, committed) and properties: decode round
// trips, streaming detokenization, the builtin tokenizer.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>

#include "text/utf8.h"
#include "tokenizer_test_util.h"

namespace grt {
namespace {

using testing::golden_strings;
using testing::golden_tokenizer;

class TokenizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerGolden, MatchesReferenceIdsAndText) {
  auto tok = golden_tokenizer(GetParam());
  auto g = testing::read_json_file(testing::tokenizer_dir(GetParam()) + "/goldens.json");
  ASSERT_GE(g["cases"].size(), 40u);
  for (const auto& c : g["cases"]) {
    const std::string text = c["text"];
    SCOPED_TRACE("text: " + text);
    auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok->encode(text), ids);
    EXPECT_EQ(tok->encode(text, false), c["ids_no_special"].get<std::vector<int32_t>>());
    EXPECT_EQ(tok->decode(ids), c["decoded"].get<std::string>());
    EXPECT_EQ(tok->decode(ids, true), c["decoded_skip_special"].get<std::string>());
  }
}

// Byte-level tokenizers without a normalizer give back exactly the text.
TEST_P(TokenizerGolden, DecodeOfEncodeGivesTheTextBack) {
  if (GetParam() == "phi2-qwen2-split") GTEST_SKIP() << "NFC changes the text";
  auto tok = golden_tokenizer(GetParam());
  for (const std::string& text : golden_strings()) {
    if (GetParam() == "llama2" && (text.empty() || text[0] == ' ' || text.find("<s>") != std::string::npos ||
                                   text.find("</s>") != std::string::npos))
      continue;  // the Strip decoder drops one leading space; <s> is matched in normalized text
    EXPECT_EQ(tok->decode(tok->encode(text, false)), text);
  }
}

TEST_P(TokenizerGolden, StreamingDeltasAreValidAndAddUpToDecode) {
  auto tok = golden_tokenizer(GetParam());
  for (bool skip : {false, true}) {
    for (const std::string& text : golden_strings()) {
      SCOPED_TRACE("text: " + text);
      auto ids = tok->encode(text);
      IncrementalDetokenizer inc(tok, skip);
      std::string all;
      for (int32_t id : ids) {
        std::string d = inc.push(id);
        EXPECT_EQ(text::find_invalid_utf8(d), std::string::npos);
        EXPECT_FALSE(text::ends_incomplete(d)) << d;
        all += d;
      }
      all += inc.finish();
      EXPECT_EQ(all, tok->decode(ids, skip));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, TokenizerGolden, ::testing::ValuesIn(testing::golden_tokenizer_names()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

TEST(Tokenizer, StreamingHoldsBackSplitCharacters) {
  auto tok = golden_tokenizer("phi-2");
  auto ids = tok->encode("👨‍👩‍👧", false);  // several byte-level tokens per character
  IncrementalDetokenizer inc(tok);
  std::vector<std::string> deltas;
  for (int32_t id : ids) deltas.push_back(inc.push(id));
  deltas.push_back(inc.finish());
  size_t empty = 0;
  for (const auto& d : deltas) empty += d.empty();
  EXPECT_GT(empty, 0u) << "some tokens end inside a character, so some pushes release nothing";
}

TEST(Tokenizer, SpecialTokensAndVocabulary) {
  auto tok = golden_tokenizer("phi-2");
  ASSERT_TRUE(tok->token_to_id("<|endoftext|>").has_value());
  int32_t eot = *tok->token_to_id("<|endoftext|>");
  EXPECT_EQ(eot, 50256);
  EXPECT_TRUE(tok->is_special(eot));
  EXPECT_FALSE(tok->is_special(100));
  EXPECT_EQ(tok->vocab_size(), 50295);
  auto llama = golden_tokenizer("llama2");
  EXPECT_EQ(llama->vocab_size(), 32000);
  EXPECT_EQ(llama->encode("hi").front(), 1);  // BOS from TemplateProcessing
}

TEST(Tokenizer, ThreadsEncodeAtOnce) {
  auto tok = golden_tokenizer("phi2-llama3-split");
  auto strings = golden_strings();
  std::vector<std::vector<int32_t>> expect;
  for (const auto& s : strings) expect.push_back(tok->encode(s));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int rep = 0; rep < 5; ++rep)
        for (size_t i = 0; i < strings.size(); ++i)
          if (tok->encode(strings[i]) != expect[i]) ++mismatches;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

class BuiltinTokenizer : public ::testing::TestWithParam<int32_t> {};

TEST_P(BuiltinTokenizer, FillsTheVocabularyAndRoundTrips) {
  const int32_t n = GetParam();
  auto tok = Tokenizer::from_json_text(make_builtin_tokenizer_json(n), "builtin");
  EXPECT_EQ(tok->vocab_size(), n);
  EXPECT_EQ(tok->token_to_id("<|endoftext|>"), n - 3);
  EXPECT_EQ(tok->token_to_id("<|im_start|>"), n - 2);
  EXPECT_EQ(tok->token_to_id("<|im_end|>"), n - 1);
  EXPECT_TRUE(tok->is_special(n - 1));
  for (const std::string& text : golden_strings()) EXPECT_EQ(tok->decode(tok->encode(text)), text);
  auto ids = tok->encode("<|im_start|>user\nthe tokens of the model<|im_end|>");
  EXPECT_EQ(ids.front(), n - 2);
  EXPECT_EQ(ids.back(), n - 1);
  if (n >= 512) EXPECT_LT(ids.size(), 30u) << "common English merges";
  for (int32_t id : ids) EXPECT_LT(id, n);
}

// 259: the smallest; 512: preset tiny; 128256 llama-3.1-8b; 151936 qwen3-0.6b.
INSTANTIATE_TEST_SUITE_P(Sizes, BuiltinTokenizer, ::testing::Values(259, 512, 128256, 151936));

TEST(BuiltinTokenizerJson, IsDeterministic) {
  EXPECT_EQ(make_builtin_tokenizer_json(1000), make_builtin_tokenizer_json(1000));
}

}  // namespace
}  // namespace grt
