// graphrt tokenize / detokenize / make-model's tokenizer, through the real binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_runner.h"
#include "tokenizer_test_util.h"

namespace grt {
namespace {

using testing::run_graphrt;
using testing::tokenizer_dir;

std::string write_temp(const std::string& name, const std::string& content) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

TEST(TokenizerCli, TokenizeTextAndFileAsGoldens) {
  auto g = testing::read_json_file(tokenizer_dir("llama2") + "/goldens.json");
  const auto& c = g["cases"][1];
  std::string text = c["text"];
  // A model folder as PATH; --text.
  auto r = run_graphrt("tokenize --tokenizer " + tokenizer_dir("llama2") + " --text '" + text + "' --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], c["ids"]);
  // A tokenizer.json as PATH; --text-file; --no-special-tokens.
  std::string file = write_temp("tok_text.txt", text);
  r = run_graphrt("tokenize --tokenizer " + tokenizer_dir("llama2") + "/tokenizer.json --text-file " + file +
                  " --no-special-tokens --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ids"], c["ids_no_special"]);
  r = run_graphrt("tokenize --tokenizer " + tokenizer_dir("phi-2") + " --text 'Hello world'");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  EXPECT_EQ(r.out, "15496 995\n");
}

TEST(TokenizerCli, DetokenizeWithAndWithoutSpecials) {
  auto r = run_graphrt("detokenize --tokenizer " + tokenizer_dir("llama2") + " --ids 1,15043,3186 --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  EXPECT_EQ(nlohmann::json::parse(r.out)["text"], "<s> Hello world");
  r = run_graphrt("detokenize --tokenizer " + tokenizer_dir("llama2") + " --ids 1,15043,3186 --skip-special-tokens --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  EXPECT_EQ(nlohmann::json::parse(r.out)["text"], "Hello world");
  r = run_graphrt("detokenize --tokenizer " + tokenizer_dir("phi-2") + " --ids 15496,995");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  EXPECT_EQ(r.out, "Hello world\n");
}

TEST(TokenizerCli, BadInputIsAClearError) {
  std::string bad = write_temp("bad_utf8.txt", "fine \xFF\xFE not");
  auto r = run_graphrt("tokenize --tokenizer " + tokenizer_dir("phi-2") + " --text-file " + bad + " --json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.all.find("while tokenizing " + bad + ": the text to encode is not valid UTF-8 (byte 5"), std::string::npos)
      << r.all;
  r = run_graphrt("detokenize --tokenizer " + tokenizer_dir("phi-2") + " --ids 5,99999999");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.all.find("token id 99999999 is out of range"), std::string::npos) << r.all;
  r = run_graphrt("detokenize --tokenizer " + tokenizer_dir("phi-2") + " --ids 5,x");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.all.find("'x' in '5,x' is not a token id"), std::string::npos) << r.all;
  std::string garbled = write_temp("garbled_tokenizer.json", "{\"model\": ");
  r = run_graphrt("tokenize --tokenizer " + garbled + " --text hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.all.find("is not valid JSON"), std::string::npos) << r.all;
  r = run_graphrt("tokenize --tokenizer " + tokenizer_dir("phi-2"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.all.find("needs --text or --text-file"), std::string::npos) << r.all;
}

TEST(TokenizerCli, MakeModelWritesATokenizerThatFitsTheVocabulary) {
  std::string dir = ::testing::TempDir() + "tok_make_model_tiny";
  std::filesystem::remove_all(dir);
  auto r = run_graphrt("make-model --preset tiny --out " + dir);
  ASSERT_EQ(r.exit_code, 0) << r.all;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + f)) << f;
  auto config = testing::read_json_file(dir + "/config.json");
  auto tok = Tokenizer::from_file(dir);
  EXPECT_EQ(tok->vocab_size(), config["vocab_size"].get<int>());
  auto tc = testing::read_json_file(dir + "/tokenizer_config.json");
  EXPECT_EQ(tc["eos_token"], "<|im_end|>");
  EXPECT_NE(tc["chat_template"].get<std::string>().find("<|im_start|>"), std::string::npos);
  auto gen = testing::read_json_file(dir + "/generation_config.json");
  EXPECT_EQ(gen["eos_token_id"][0], *tok->token_to_id("<|im_end|>"));
  r = run_graphrt("tokenize --tokenizer " + dir + " --text 'hello <|im_end|>' --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ids"].back(), config["vocab_size"].get<int>() - 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace grt
