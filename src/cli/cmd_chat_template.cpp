// graphrt chat-template: the prompt a model folder's chat template makes of an OpenAI chat request.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"
#include "text/chat_template.h"

namespace grt {

void register_chat_template(CLI::App& app) {
  struct Opts {
    std::string model;
    std::string request_file;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("chat-template", "render a model's chat template for an OpenAI chat request");
  cmd->add_option("--model", opts->model, "model folder with chat_template.jinja or tokenizer_config.json")
      ->required();
  cmd->add_option("--request-file", opts->request_file,
                  "OpenAI chat request body (messages, tools, add_generation_prompt, chat_template_kwargs)")
      ->required();
  cmd->add_flag("--json", opts->json, "print {\"prompt\": \"...\"}");
  cmd->callback([opts] {
    ChatTemplate tmpl = ChatTemplate::from_model_dir(opts->model);
    std::ifstream f(opts->request_file, std::ios::binary);
    GRT_CHECK(f, "cannot read request file {}", opts->request_file);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string prompt = tmpl.render_text(ss.str(), opts->request_file);
    if (opts->json) {
      nlohmann::json j;
      j["prompt"] = prompt;
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict).c_str());
    } else {
      std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    }
  });
}

}  // namespace grt
