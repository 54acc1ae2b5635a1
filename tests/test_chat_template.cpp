// Chat templates: golden prompts from Python jinja2 set up as transformers sets it up
// (scripts/make_chat_template_goldens.py), model folders, the CLI, and bad input.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_runner.h"
#include "error_of.h"
#include "text/chat_template.h"

using grt::ChatTemplate;
using grt::testing::error_of;
using grt::testing::run_graphrt;
namespace fs = std::filesystem;

namespace {

const std::string kData = std::string(GRAPHRT_TEST_DATA) + "/chat_templates";
// The date the goldens were rendered with (FIXED_NOW in the golden script).
const char* kNow = "2026-11-23T12:00:00";

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

nlohmann::ordered_json expected() { return nlohmann::ordered_json::parse(slurp(kData + "/expected.json")); }

struct FixedNow : ::testing::Environment {
  void SetUp() override { setenv("GRAPHRT_STRFTIME_NOW", kNow, 1); }
};
const auto* const kFixedNow = ::testing::AddGlobalTestEnvironment(new FixedNow);

// A fresh folder under the test temp dir.
std::string temp_dir(const std::string& name) {
  fs::path d = fs::path(::testing::TempDir()) / ("chat_template_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace

// Every template x request against jinja2: the same prompt, or an error where jinja2 raised one
// (with raise_exception's message carried).
TEST(ChatTemplateGolden, EveryTemplateAndRequestMatchesJinja2) {
  auto exp = expected();
  ASSERT_GE(exp.size(), 7u);
  int renders = 0;
  for (auto& [model, reqs] : exp.items()) {
    ChatTemplate t = ChatTemplate::from_model_dir(kData + "/models/" + model);
    for (auto& [req, want] : reqs.items()) {
      SCOPED_TRACE(model + " x " + req);
      const std::string body = slurp(kData + "/requests/" + req + ".json");
      if (want.contains("prompt")) {
        std::string got;
        std::string err = error_of([&] { got = t.render_text(body, req); });
        EXPECT_EQ(err, "");
        EXPECT_EQ(got, want["prompt"].get<std::string>());
      } else {
        std::string err = error_of([&] { t.render_text(body, req); });
        EXPECT_NE(err, "") << "jinja2 failed with: " << want["error"];
        if (want["error_type"] == "TemplateError") {
          EXPECT_NE(err.find(want["error"].get<std::string>()), std::string::npos) << err;
        }
      }
      ++renders;
    }
  }
  EXPECT_GE(renders, 100);
}

// Interpreter snippets (snippets_in.json) against jinja2: Python floats and reprs, tojson spacing,
// whitespace control, scoping, filters, tests, methods, errors.
TEST(ChatTemplateGolden, InterpreterSnippetsMatchJinja2) {
  auto snippets = nlohmann::ordered_json::parse(slurp(kData + "/snippets.json"));
  ASSERT_GE(snippets.size(), 60u);
  for (size_t i = 0; i < snippets.size(); ++i) {
    const auto& s = snippets[i];
    const std::string src = s["template"].get<std::string>();
    SCOPED_TRACE("snippet " + std::to_string(i) + ": " + src);
    nlohmann::ordered_json req = {{"messages", nlohmann::ordered_json::array()}, {"chat_template_kwargs", s["vars"]}};
    std::string got;
    std::string err = error_of([&] { got = ChatTemplate(src, "", "", "snippet").render(req); });
    if (s.contains("output")) {
      EXPECT_EQ(err, "");
      EXPECT_EQ(got, s["output"].get<std::string>());
    } else {
      EXPECT_NE(err, "") << "jinja2 failed with: " << s["error"];
      if (s["error_type"] == "TemplateError") {
        EXPECT_NE(err.find(s["error"].get<std::string>()), std::string::npos) << err;
      }
    }
  }
}

TEST(ChatTemplateGolden, NlohmannJsonOverloadRendersTheSame) {
  ChatTemplate t = ChatTemplate::from_model_dir(kData + "/models/qwen3");
  auto req = nlohmann::json::parse(slurp(kData + "/requests/multi_turn.json"));
  EXPECT_EQ(t.render(req), expected()["qwen3"]["multi_turn"]["prompt"].get<std::string>());
}

TEST(ChatTemplate, SpecialTokensFromConfig) {
  // llama2's config holds AddedToken objects, qwen3's a string and a null bos.
  ChatTemplate l2 = ChatTemplate::from_model_dir(kData + "/models/llama2");
  EXPECT_EQ(l2.bos_token(), "<s>");
  EXPECT_EQ(l2.eos_token(), "</s>");
  ChatTemplate q3 = ChatTemplate::from_model_dir(kData + "/models/qwen3");
  EXPECT_EQ(q3.bos_token(), "");
  EXPECT_EQ(q3.eos_token(), "<|im_end|>");
}

TEST(ChatTemplate, JinjaFileWinsOverConfigAndListFormUsesDefault) {
  std::string d = temp_dir("pick");
  write(d + "/tokenizer_config.json",
        R"({"eos_token": {"content": "E"}, "chat_template": [{"name": "tool_use", "template": "T"},
            {"name": "default", "template": "D{{ eos_token }}"}]})");
  EXPECT_EQ(ChatTemplate::from_model_dir(d).render(nlohmann::json{{"messages", nlohmann::json::array()}}), "DE");
  write(d + "/chat_template.jinja", "J{{ messages | length }}");
  EXPECT_EQ(ChatTemplate::from_model_dir(d).render(nlohmann::json{{"messages", nlohmann::json::array()}}), "J0");
}

TEST(ChatTemplate, VariablesOfTheRequest) {
  ChatTemplate t("{{ add_generation_prompt }}|{{ tools is none }}|{{ enable_thinking }}|{{ bos_token }}{{ eos_token }}|"
                 "{{ messages[0].content }}",
                 "<s>", "</s>");
  nlohmann::ordered_json req = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  EXPECT_EQ(t.render(req), "True|True||<s></s>|hi");
  req["add_generation_prompt"] = false;
  req["tools"] = nlohmann::ordered_json::array();
  req["chat_template_kwargs"] = {{"enable_thinking", false}};
  EXPECT_EQ(t.render(req), "False|False|False|<s></s>|hi");
}

TEST(ChatTemplate, StrftimeNowFollowsTheEnvironment) {
  ChatTemplate t("{{ strftime_now('%d %B %Y %H:%M') }}", "", "");
  EXPECT_EQ(t.render(nlohmann::json{{"messages", nlohmann::json::array()}}), "23 November 2026 12:00");
}

TEST(ChatTemplateErrors, SyntaxErrorNamesTheLine) {
  std::string d = temp_dir("syntax");
  write(d + "/chat_template.jinja", "{% for m in messages %}\n{{ m.content }}\n{% if %}\n{% endfor %}\n");
  std::string e = error_of([&] { ChatTemplate::from_model_dir(d); });
  EXPECT_NE(e.find("chat_template.jinja line 3"), std::string::npos) << e;
  EXPECT_NE(e.find("syntax error"), std::string::npos) << e;
}

TEST(ChatTemplateErrors, RaiseExceptionCarriesItsMessageAndLine) {
  ChatTemplate t("x\n{% if messages | length == 0 %}{{ raise_exception('no messages, sorry') }}{% endif %}", "", "",
                 "my.jinja");
  std::string e = error_of([&] { t.render(nlohmann::json{{"messages", nlohmann::json::array()}}); });
  EXPECT_NE(e.find("no messages, sorry"), std::string::npos) << e;
  EXPECT_NE(e.find("my.jinja line 2"), std::string::npos) << e;
}

TEST(ChatTemplateErrors, MissingTemplate) {
  std::string d = temp_dir("missing");
  std::string e = error_of([&] { ChatTemplate::from_model_dir(d); });
  EXPECT_NE(e.find("has no chat template"), std::string::npos) << e;
  write(d + "/tokenizer_config.json", R"({"eos_token": "x"})");
  e = error_of([&] { ChatTemplate::from_model_dir(d); });
  EXPECT_NE(e.find("has no chat template"), std::string::npos) << e;
  e = error_of([&] { ChatTemplate::from_model_dir(d + "/nope"); });
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;
}

TEST(ChatTemplateErrors, BadConfigFields) {
  std::string d = temp_dir("badcfg");
  write(d + "/tokenizer_config.json", R"({"chat_template": 5})");
  std::string e = error_of([&] { ChatTemplate::from_model_dir(d); });
  EXPECT_NE(e.find("\"chat_template\" must be a string or a list"), std::string::npos) << e;
  write(d + "/tokenizer_config.json", R"({"bos_token": 3, "chat_template": "x"})");
  e = error_of([&] { ChatTemplate::from_model_dir(d); });
  EXPECT_NE(e.find("\"bos_token\" must be a string"), std::string::npos) << e;
  write(d + "/tokenizer_config.json", "{ not json");
  e = error_of([&] { ChatTemplate::from_model_dir(d); });
  EXPECT_NE(e.find("tokenizer_config.json: not valid JSON"), std::string::npos) << e;
}

TEST(ChatTemplateErrors, MalformedRequest) {
  ChatTemplate t("{{ messages | length }}", "", "");
  std::string e = error_of([&] { t.render_text("{\"messages\": [", "req.json"); });
  EXPECT_NE(e.find("req.json: not valid JSON"), std::string::npos) << e;
  e = error_of([&] { t.render_text("{\"model\": \"x\"}", "req.json"); });
  EXPECT_NE(e.find("has no \"messages\""), std::string::npos) << e;
  e = error_of([&] { t.render_text("{\"messages\": {}}", "req.json"); });
  EXPECT_NE(e.find("\"messages\" must be a list"), std::string::npos) << e;
  e = error_of([&] { t.render_text("{\"messages\": [], \"add_generation_prompt\": \"yes\"}", "req.json"); });
  EXPECT_NE(e.find("\"add_generation_prompt\" must be true or false"), std::string::npos) << e;
  e = error_of([&] { t.render_text("{\"messages\": [], \"chat_template_kwargs\": [1]}", "req.json"); });
  EXPECT_NE(e.find("\"chat_template_kwargs\" must be an object"), std::string::npos) << e;
}

TEST(ChatTemplateCli, JsonPromptThroughTheBinary) {
  auto r = run_graphrt("chat-template --model " + kData + "/models/qwen3 --request-file " + kData +
                       "/requests/tool_calls.json --json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["prompt"].get<std::string>(), expected()["qwen3"]["tool_calls"]["prompt"].get<std::string>());
}

TEST(ChatTemplateCli, PlainPromptAndFixedDate) {
  auto r = run_graphrt("chat-template --model " + kData + "/models/smollm3 --request-file " + kData +
                       "/requests/basic.json");
  ASSERT_EQ(r.exit_code, 0) << r.all;
  EXPECT_EQ(r.out, expected()["smollm3"]["basic"]["prompt"].get<std::string>());
}

TEST(ChatTemplateCli, ErrorsAreClear) {
  auto r = run_graphrt("chat-template --model " + kData + "/models/mistral --request-file " + kData +
                       "/requests/roles_not_alternating.json --json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.all.find("Conversation roles must alternate"), std::string::npos) << r.all;
  r = run_graphrt("chat-template --model " + kData + "/models/qwen3 --request-file /nonexistent/req.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.all.find("cannot read request file /nonexistent/req.json"), std::string::npos) << r.all;
}
