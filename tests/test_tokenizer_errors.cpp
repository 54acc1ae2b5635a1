// Bad tokenizer input of every kind is a clear grt::Error.
#include <gtest/gtest.h>

#include "error_of.h"
#include "tokenizer_test_util.h"

namespace grt {
namespace {

using testing::error_of;

// A minimal valid byte-level tokenizer.json with one component replaced.
nlohmann::json small_tokenizer() {
  return nlohmann::json::parse(make_builtin_tokenizer_json(300));
}

std::string load_error(const nlohmann::json& j) {
  return error_of([&] { Tokenizer::from_json_text(j.dump(), "test.json"); });
}

TEST(TokenizerErrors, UnknownComponentTypeIsNamed) {
  auto j = small_tokenizer();
  j["normalizer"] = {{"type", "BertNormalizer"}};
  {
    std::string e = load_error(j);
    EXPECT_NE(e.find("normalizer type \"BertNormalizer\" is not implemented"), std::string::npos) << e;
    EXPECT_NE(e.find("test.json"), std::string::npos) << e;
  }
  j = small_tokenizer();
  j["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}}}};
  EXPECT_NE(load_error(j).find("pre_tokenizer type \"Digits\" is not implemented"), std::string::npos);
  j = small_tokenizer();
  j["decoder"] = {{"type", "WordPiece"}};
  EXPECT_NE(load_error(j).find("decoder type \"WordPiece\" is not implemented"), std::string::npos);
  j = small_tokenizer();
  j["post_processor"] = {{"type", "Fancy"}};
  EXPECT_NE(load_error(j).find("post_processor type \"Fancy\" is not implemented"), std::string::npos);
  j = small_tokenizer();
  j["model"]["type"] = "Unigram";
  EXPECT_NE(load_error(j).find("model type \"Unigram\" is not implemented"), std::string::npos);
}

TEST(TokenizerErrors, GarbledJson) {
  std::string e = error_of([] { Tokenizer::from_json_text("{\"model\": {\"vocab\": [1, 2", "broken.json"); });
  EXPECT_NE(e.find("broken.json is not valid JSON"), std::string::npos) << e;
  e = error_of([] { Tokenizer::from_json_text("[1, 2]", "list.json"); });
  EXPECT_NE(e.find("top level is not an object"), std::string::npos) << e;
}

TEST(TokenizerErrors, MergeNamingAnUnknownToken) {
  auto j = small_tokenizer();
  j["model"]["merges"].push_back({"Ġthe", "zzzz-not-a-token"});
  std::string e = load_error(j);
  EXPECT_NE(e.find("names token \"zzzz-not-a-token\", which is not in the vocabulary"), std::string::npos) << e;
  j = small_tokenizer();
  j["model"]["merges"] = {"a b c"};
  e = load_error(j);
  EXPECT_NE(e.find("merge #0 \"a b c\" is not two tokens separated by one space"), std::string::npos) << e;
}

TEST(TokenizerErrors, MergesInBothFormsReadAlike) {
  auto pairs = small_tokenizer();
  auto strings = pairs;
  for (auto& m : strings["model"]["merges"]) m = m[0].get<std::string>() + " " + m[1].get<std::string>();
  auto a = Tokenizer::from_json_text(pairs.dump(), "pairs");
  auto b = Tokenizer::from_json_text(strings.dump(), "strings");
  const char* text = "the model reads the tokens";
  EXPECT_EQ(a->encode(text), b->encode(text));
  EXPECT_LT(a->encode(text).size(), std::string(text).size());
}

TEST(TokenizerErrors, DecodeIdOutOfRange) {
  auto tok = testing::golden_tokenizer("phi-2");
  std::vector<int32_t> ids = {100, 50295};
  std::string e = error_of([&] { tok->decode(ids); });
  EXPECT_NE(e.find("token id 50295 is out of range"), std::string::npos) << e;
  ids = {-1};
  EXPECT_NE(error_of([&] { tok->decode(ids); }).find("token id -1 is out of range"), std::string::npos);
  IncrementalDetokenizer inc(tok);
  EXPECT_NE(error_of([&] { inc.push(1 << 20); }).find("out of range"), std::string::npos);
}

TEST(TokenizerErrors, InvalidUtf8Text) {
  auto tok = testing::golden_tokenizer("llama2");
  std::string e = error_of([&] { tok->encode("ok \xC3\x28 bad"); });
  EXPECT_NE(e.find("not valid UTF-8 (byte 3"), std::string::npos) << e;
}

TEST(TokenizerErrors, MissingFile) {
  std::string e = error_of([] { Tokenizer::from_file("/nonexistent/tokenizer.json"); });
  EXPECT_NE(e.find("cannot open tokenizer file /nonexistent/tokenizer.json"), std::string::npos) << e;
  e = error_of([] { Tokenizer::from_file(::testing::TempDir()); });
  EXPECT_NE(e.find("has no tokenizer.json"), std::string::npos) << e;
}

TEST(TokenizerErrors, BuiltinVocabularyTooSmall) {
  std::string e = error_of([] { make_builtin_tokenizer_json(258); });
  EXPECT_NE(e.find("at least 259 ids"), std::string::npos) << e;
}

}  // namespace
}  // namespace grt
