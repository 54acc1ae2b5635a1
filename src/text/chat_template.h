// Chat templates of Hugging Face model folders, rendered as transformers' apply_chat_template
// renders them (jinja2 with trim_blocks and lstrip_blocks, its tojson, raise_exception and
// strftime_now, the {% generation %} block).
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace grt {

namespace jinja {
class Template;
}

class ChatTemplate {
 public:
  // From a model folder: chat_template.jinja, else tokenizer_config.json "chat_template"
  // (a string, or a list of {name, template}: "default" is used); bos_token/eos_token from
  // tokenizer_config.json (string or AddedToken object; "" when absent). Error when none.
  static ChatTemplate from_model_dir(const std::string& dir);
  // `origin` names the template in errors.
  ChatTemplate(std::string source, std::string bos_token, std::string eos_token,
               std::string origin = "chat template");
  // request: an OpenAI chat body: messages, tools (optional), add_generation_prompt
  // (default true), chat_template_kwargs (each entry a template variable). Template variables:
  // messages, tools (none when absent, as transformers passes it), documents (none),
  // add_generation_prompt, bos_token, eos_token, raise_exception(msg), strftime_now(fmt), and
  // the chat_template_kwargs entries. Keys of objects keep the request's order only with
  // ordered_json (nlohmann::json sorts them, which changes what tojson prints).
  // strftime_now uses the local time, or GRAPHRT_STRFTIME_NOW ("YYYY-MM-DD[THH:MM:SS]") when set.
  // Error naming the template line on render errors; raise_exception's message is carried.
  std::string render(const nlohmann::json& request) const;
  std::string render(const nlohmann::ordered_json& request) const;
  // Parses `request_json` (keys kept in order) and renders it; `origin` names it in errors.
  std::string render_text(const std::string& request_json, const std::string& origin = "request") const;

  const std::string& bos_token() const { return bos_; }
  const std::string& eos_token() const { return eos_; }
  const std::string& source() const { return source_; }

 private:
  std::string source_, bos_, eos_;
  std::shared_ptr<const jinja::Template> tmpl_;
};

}  // namespace grt
