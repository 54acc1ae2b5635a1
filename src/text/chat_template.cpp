#include "text/chat_template.h"

#include <fmt/format.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "text/jinja_template.h"

namespace grt {

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  GRT_CHECK(f, "cannot read {}", p.string());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A special token of tokenizer_config.json: a string, an AddedToken object {"content": ...},
// or null/absent ("").
std::string special_token(const nlohmann::json& cfg, const char* key, const std::string& file) {
  if (!cfg.contains(key) || cfg[key].is_null()) return "";
  const auto& t = cfg[key];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("content") && t["content"].is_string()) return t["content"].get<std::string>();
  throw Error(fmt::format("{}: \"{}\" must be a string or an object with a string \"content\", not {}", file, key,
                          t.dump()));
}

std::tm now_tm() {
  std::tm tm{};
  if (const char* fixed = std::getenv("GRAPHRT_STRFTIME_NOW"); fixed && *fixed) {
    int y, mo, d, h = 0, mi = 0, s = 0;
    int n = std::sscanf(fixed, "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &s);
    if (n != 3 && n != 6)
      throw Error(fmt::format("GRAPHRT_STRFTIME_NOW='{}' is not YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS", fixed));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    tm.tm_isdst = -1;
    std::mktime(&tm);  // fills in the weekday and day of the year
    return tm;
  }
  std::time_t t = std::time(nullptr);
  localtime_r(&t, &tm);
  return tm;
}

template <class J>
jinja::Dict variables(const J& request, const std::string& bos, const std::string& eos) {
  if (!request.is_object())
    throw Error(fmt::format("chat request must be a JSON object, not {}", request.type_name()));
  if (!request.contains("messages")) throw Error("chat request has no \"messages\"");
  if (!request["messages"].is_array())
    throw Error(fmt::format("chat request \"messages\" must be a list, not {}", request["messages"].type_name()));
  for (size_t i = 0; i < request["messages"].size(); ++i)
    if (!request["messages"][i].is_object())
      throw Error(fmt::format("chat request \"messages\"[{}] must be an object, not {}", i,
                              request["messages"][i].type_name()));
  jinja::Dict vars;
  vars.set("messages", jinja::Value::from_json(request["messages"]));
  jinja::Value tools = jinja::Value::none();
  if (request.contains("tools") && !request["tools"].is_null()) {
    if (!request["tools"].is_array())
      throw Error(fmt::format("chat request \"tools\" must be a list, not {}", request["tools"].type_name()));
    tools = jinja::Value::from_json(request["tools"]);
  }
  vars.set("tools", tools);
  vars.set("documents", jinja::Value::none());
  bool agp = true;
  if (request.contains("add_generation_prompt")) {
    if (!request["add_generation_prompt"].is_boolean())
      throw Error(fmt::format("chat request \"add_generation_prompt\" must be true or false, not {}",
                              request["add_generation_prompt"].dump()));
    agp = request["add_generation_prompt"].template get<bool>();
  }
  vars.set("add_generation_prompt", jinja::Value(agp));
  vars.set("bos_token", jinja::Value(bos));
  vars.set("eos_token", jinja::Value(eos));
  vars.set("raise_exception", jinja::Value::function("raise_exception", [](const jinja::CallArgs& a) -> jinja::Value {
             throw Error(fmt::format("template raised an error: {}", a.pos.empty() ? "" : a.pos[0].str()));
           }));
  vars.set("strftime_now", jinja::Value::function("strftime_now", [](const jinja::CallArgs& a) {
             if (a.pos.empty() || !a.pos[0].is_string()) throw Error("strftime_now() takes a format string");
             std::tm tm = now_tm();
             char buf[512];
             size_t n = std::strftime(buf, sizeof buf, a.pos[0].as_string().c_str(), &tm);
             return jinja::Value(std::string(buf, n));
           }));
  if (request.contains("chat_template_kwargs") && !request["chat_template_kwargs"].is_null()) {
    const auto& kw = request["chat_template_kwargs"];
    if (!kw.is_object())
      throw Error(fmt::format("chat request \"chat_template_kwargs\" must be an object, not {}", kw.type_name()));
    for (auto it = kw.begin(); it != kw.end(); ++it) vars.set(it.key(), jinja::Value::from_json(it.value()));
  }
  return vars;
}

}  // namespace

ChatTemplate::ChatTemplate(std::string source, std::string bos_token, std::string eos_token, std::string origin)
    : source_(std::move(source)),
      bos_(std::move(bos_token)),
      eos_(std::move(eos_token)),
      tmpl_(std::make_shared<const jinja::Template>(source_, std::move(origin))) {}

ChatTemplate ChatTemplate::from_model_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path d(dir);
  GRT_CHECK(fs::is_directory(d), "model folder {} does not exist (a chat template needs chat_template.jinja or "
                                 "tokenizer_config.json in it)", dir);
  const fs::path cfg_path = d / "tokenizer_config.json";
  nlohmann::json cfg = nlohmann::json::object();
  if (fs::exists(cfg_path)) {
    try {
      cfg = nlohmann::json::parse(read_file(cfg_path));
    } catch (const nlohmann::json::exception& e) {
      throw Error(fmt::format("{}: not valid JSON: {}", cfg_path.string(), e.what()));
    }
    if (!cfg.is_object()) throw Error(fmt::format("{}: must hold a JSON object", cfg_path.string()));
  }
  std::string bos = special_token(cfg, "bos_token", cfg_path.string());
  std::string eos = special_token(cfg, "eos_token", cfg_path.string());
  const fs::path jinja_path = d / "chat_template.jinja";
  if (fs::exists(jinja_path)) return ChatTemplate(read_file(jinja_path), bos, eos, jinja_path.string());
  if (cfg.contains("chat_template") && !cfg["chat_template"].is_null()) {
    const auto& t = cfg["chat_template"];
    const std::string origin = cfg_path.string() + " \"chat_template\"";
    if (t.is_string()) return ChatTemplate(t.get<std::string>(), bos, eos, origin);
    if (t.is_array()) {
      for (const auto& e : t) {
        if (!e.is_object() || !e.contains("name") || !e.contains("template") || !e["template"].is_string())
          throw Error(fmt::format("{}: each entry of \"chat_template\" must be {{\"name\": ..., \"template\": \"...\"}}",
                                  cfg_path.string()));
        if (e["name"] == "default")
          return ChatTemplate(e["template"].get<std::string>(), bos, eos, origin + " \"default\"");
      }
      throw Error(fmt::format("{}: \"chat_template\" lists no template named \"default\"", cfg_path.string()));
    }
    throw Error(fmt::format("{}: \"chat_template\" must be a string or a list of {{name, template}}, not {}",
                            cfg_path.string(), t.type_name()));
  }
  throw Error(fmt::format("{} has no chat template: neither chat_template.jinja nor a \"chat_template\" entry in "
                          "tokenizer_config.json", dir));
}

std::string ChatTemplate::render(const nlohmann::json& request) const {
  return tmpl_->render(variables(request, bos_, eos_));
}

std::string ChatTemplate::render(const nlohmann::ordered_json& request) const {
  return tmpl_->render(variables(request, bos_, eos_));
}

std::string ChatTemplate::render_text(const std::string& request_json, const std::string& origin) const {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(request_json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
  try {
    return render(j);
  } catch (const Error& e) {
    throw e.with_context(origin);
  }
}

}  // namespace grt
