#include "server/api_protocol.h"

#include <chrono>
#include <cmath>

namespace grt {
namespace {

using json = nlohmann::json;
using K = RequestRejected::Kind;

[[noreturn]] void bad(const std::string& field, const std::string& msg) { throw RequestRejected(K::kInvalid, field, msg); }

double number(const json& j, const std::string& field) {
  if (!j.is_number()) bad(field, fmt::format("'{}' must be a number, got {}", field, j.dump()));
  const double v = j.get<double>();
  if (!std::isfinite(v)) bad(field, fmt::format("'{}' must be finite", field));
  return v;
}
int64_t integer(const json& j, const std::string& field) {
  if (!j.is_number_integer()) bad(field, fmt::format("'{}' must be an integer, got {}", field, j.dump()));
  return j.get<int64_t>();
}
bool boolean(const json& j, const std::string& field) {
  if (!j.is_boolean()) bad(field, fmt::format("'{}' must be true or false, got {}", field, j.dump()));
  return j.get<bool>();
}
void in_range(double v, double lo, double hi, const std::string& field, const char* allowed) {
  if (!(v >= lo && v <= hi)) bad(field, fmt::format("'{}' is {} but must be {}", field, v, allowed));
}

std::vector<int32_t> id_list(const json& j, const std::string& field) {
  std::vector<int32_t> ids;
  for (const json& e : j) {
    if (!e.is_number_integer()) bad(field, fmt::format("'{}' must hold token ids (integers), got {}", field, e.dump()));
    const int64_t v = e.get<int64_t>();
    if (v < 0 || v > INT32_MAX) bad(field, fmt::format("token id {} in '{}' is out of range", v, field));
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

std::vector<int32_t> encode(const TextSupport& t, const std::string& s, const std::string& field, bool special) {
  if (!t.encode) bad(field, fmt::format("'{}' is text but this model has no tokenizer: send token ids", field));
  return t.encode(s, special);
}

// The prompt of a completion: a string, token ids, or a one-element list of either.
std::vector<int32_t> prompt_of(const json& p, const TextSupport& t) {
  if (p.is_string()) return encode(t, p.get<std::string>(), "prompt", true);
  if (p.is_array() && !p.empty() && p.size() == 1 && (p[0].is_string() || p[0].is_array())) return prompt_of(p[0], t);
  if (p.is_array() && !p.empty() && p[0].is_array()) bad("prompt", "only one prompt per request is supported");
  if (p.is_array() && !p.empty() && p[0].is_string()) bad("prompt", "only one prompt per request is supported");
  if (p.is_array()) return id_list(p, "prompt");
  bad("prompt", "'prompt' must be a string or a list of token ids");
}

// Sampling fields shared by every API (OpenAI names; SGLang's extras).
void sampling_fields(const json& b, RequestParams& p, const std::string& prefix) {
  SamplingParams& s = p.sampling;
  auto f = [&](const char* name) { return prefix + name; };
  if (b.contains("temperature") && !b["temperature"].is_null()) {
    s.temperature = static_cast<float>(number(b["temperature"], f("temperature")));
    in_range(s.temperature, 0, 100, f("temperature"), ">= 0");
  }
  if (b.contains("top_p") && !b["top_p"].is_null()) {
    s.top_p = static_cast<float>(number(b["top_p"], f("top_p")));
    if (!(s.top_p > 0 && s.top_p <= 1)) bad(f("top_p"), fmt::format("'{}' is {} but must be in (0, 1]", f("top_p"), s.top_p));
  }
  if (b.contains("top_k") && !b["top_k"].is_null()) {
    const int64_t k = integer(b["top_k"], f("top_k"));
    in_range(static_cast<double>(k), -1, 1 << 30, f("top_k"), "-1 (no limit) or positive");
    s.top_k = k < 0 ? 0 : static_cast<int>(k);
  }
  if (b.contains("min_p") && !b["min_p"].is_null()) {
    s.min_p = static_cast<float>(number(b["min_p"], f("min_p")));
    in_range(s.min_p, 0, 1, f("min_p"), "in [0, 1]");
  }
  if (b.contains("frequency_penalty") && !b["frequency_penalty"].is_null()) {
    s.frequency_penalty = static_cast<float>(number(b["frequency_penalty"], f("frequency_penalty")));
    in_range(s.frequency_penalty, -2, 2, f("frequency_penalty"), "in [-2, 2]");
  }
  if (b.contains("presence_penalty") && !b["presence_penalty"].is_null()) {
    s.presence_penalty = static_cast<float>(number(b["presence_penalty"], f("presence_penalty")));
    in_range(s.presence_penalty, -2, 2, f("presence_penalty"), "in [-2, 2]");
  }
  if (b.contains("repetition_penalty") && !b["repetition_penalty"].is_null()) {
    s.repetition_penalty = static_cast<float>(number(b["repetition_penalty"], f("repetition_penalty")));
    if (!(s.repetition_penalty > 0 && s.repetition_penalty <= 2))
      bad(f("repetition_penalty"), fmt::format("'{}' is {} but must be in (0, 2]", f("repetition_penalty"), s.repetition_penalty));
  }
  for (const char* seed_name : {"seed", "sampling_seed"})
    if (b.contains(seed_name) && !b[seed_name].is_null()) {
      const int64_t v = integer(b[seed_name], f(seed_name));
      s.seed = static_cast<uint64_t>(v);
    }
  // The one rule of allowed values (runtime/sampling_params.h), e.g. a negative seed; the checks
  // above name the field in the body's own terms first.
  try {
    s.validate();
  } catch (const Error& e) {
    bad(f("sampling"), e.what());
  }
  if (b.contains("stop") && !b["stop"].is_null()) {
    const json& st = b["stop"];
    if (st.is_string()) p.stop.push_back(st.get<std::string>());
    else if (st.is_array()) {
      for (const json& e : st) {
        if (!e.is_string()) bad(f("stop"), "'stop' must be a string or a list of strings");
        p.stop.push_back(e.get<std::string>());
      }
    } else bad(f("stop"), "'stop' must be a string or a list of strings");
    if (p.stop.size() > 16) bad(f("stop"), "at most 16 stop strings");
    for (const auto& s2 : p.stop)
      if (s2.empty()) bad(f("stop"), "a stop string is empty");
  }
  if (b.contains("stop_token_ids") && !b["stop_token_ids"].is_null()) {
    if (!b["stop_token_ids"].is_array()) bad(f("stop_token_ids"), "'stop_token_ids' must be a list of token ids");
    p.stop_token_ids = id_list(b["stop_token_ids"], f("stop_token_ids"));
  }
  if (b.contains("ignore_eos") && !b["ignore_eos"].is_null()) p.ignore_eos = boolean(b["ignore_eos"], f("ignore_eos"));
  if (b.contains("skip_special_tokens") && !b["skip_special_tokens"].is_null())
    p.skip_special_tokens = boolean(b["skip_special_tokens"], f("skip_special_tokens"));
}

int max_tokens_field(const json& b, const char* name, int dflt) {
  if (!b.contains(name) || b[name].is_null()) return dflt;
  const int64_t v = integer(b[name], name);
  if (v < 0 || v > INT32_MAX) bad(name, fmt::format("'{}' is {} but must be >= 0", name, v));
  return static_cast<int>(v);
}

void common_openai(const json& b, ApiRequest& r) {
  if (b.contains("model") && !b["model"].is_null() && !b["model"].is_string()) bad("model", "'model' must be a string");
  if (b.contains("n") && !b["n"].is_null()) {
    const int64_t n = integer(b["n"], "n");
    if (n < 1 || n > kMaxChoices) bad("n", fmt::format("'n' is {} but must be in [1, {}]", n, kMaxChoices));
    r.n = static_cast<int>(n);
  }
  if (b.contains("stream") && !b["stream"].is_null()) r.stream = boolean(b["stream"], "stream");
  if (b.contains("stream_options") && b["stream_options"].is_object() &&
      b["stream_options"].contains("include_usage"))
    r.include_usage = boolean(b["stream_options"]["include_usage"], "stream_options.include_usage");
  if (b.contains("return_token_ids") && !b["return_token_ids"].is_null())
    r.return_token_ids = boolean(b["return_token_ids"], "return_token_ids");
  r.params.sampling.temperature = 1.0f;  // OpenAI's default
  sampling_fields(b, r.params, "");
}

}  // namespace

json error_body(const std::string& message, const std::string& type, const std::string& param, int code) {
  return {{"error", {{"message", message}, {"type", type}, {"param", param.empty() ? json() : json(param)}, {"code", code}}}};
}

ApiRequest parse_api_request(ApiKind kind, const std::string& body, const TextSupport& text) {
  json b;
  try {
    b = json::parse(body);
  } catch (const json::parse_error& e) {
    bad("", fmt::format("the body is not valid JSON: {}", e.what()));
  }
  if (!b.is_object()) bad("", "the body must be a JSON object");
  ApiRequest r;
  r.kind = kind;
  RequestParams& p = r.params;
  if (kind == ApiKind::kCompletion) {
    common_openai(b, r);
    if (!b.contains("prompt")) bad("prompt", "'prompt' is required");
    p.prompt = prompt_of(b["prompt"], text);
    p.max_tokens = max_tokens_field(b, "max_tokens", 16);
    if (b.contains("echo") && !b["echo"].is_null() && boolean(b["echo"], "echo")) bad("echo", "echo is not supported");
    if (b.contains("logprobs") && !b["logprobs"].is_null()) {
      const int64_t n = integer(b["logprobs"], "logprobs");
      if (n < 0 || n > 20) bad("logprobs", fmt::format("'logprobs' is {} but must be in [0, 20]", n));
      r.completion_logprobs = static_cast<int>(n);
      p.logprobs = true;
      p.top_logprobs = static_cast<int>(n);
    }
  } else if (kind == ApiKind::kChat) {
    common_openai(b, r);
    if (!b.contains("messages") || !b["messages"].is_array() || b["messages"].empty())
      bad("messages", "'messages' must be a non-empty list");
    for (const json& m : b["messages"])
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
        bad("messages", "every message needs a string 'role'");
    if (!text.render_chat) bad("messages", "this model has no chat template (or no tokenizer)");
    std::string prompt;
    try {
      prompt = text.render_chat(b);
    } catch (const RequestRejected&) {
      throw;
    } catch (const std::exception& e) {
      bad("messages", fmt::format("the chat template failed: {}", e.what()));
    }
    // The template writes BOS itself where the model wants one.
    p.prompt = encode(text, prompt, "messages", false);
    p.max_tokens = max_tokens_field(b, "max_completion_tokens", max_tokens_field(b, "max_tokens", -1));
    if (b.contains("logprobs") && !b["logprobs"].is_null()) p.logprobs = boolean(b["logprobs"], "logprobs");
    if (b.contains("top_logprobs") && !b["top_logprobs"].is_null()) {
      const int64_t n = integer(b["top_logprobs"], "top_logprobs");
      if (n < 0 || n > 20) bad("top_logprobs", fmt::format("'top_logprobs' is {} but must be in [0, 20]", n));
      p.top_logprobs = static_cast<int>(n);
    }
  } else {
    // SGLang's native body: {"text" | "input_ids", "sampling_params": {...}, "stream", "return_logprob"}.
    if (b.contains("input_ids") && !b["input_ids"].is_null()) {
      if (!b["input_ids"].is_array()) bad("input_ids", "'input_ids' must be a list of token ids");
      p.prompt = id_list(b["input_ids"], "input_ids");
    } else if (b.contains("text") && b["text"].is_string()) {
      p.prompt = encode(text, b["text"].get<std::string>(), "text", true);
    } else {
      bad("text", "'text' (a string) or 'input_ids' is required");
    }
    if (b.contains("stream") && !b["stream"].is_null()) r.stream = boolean(b["stream"], "stream");
    r.return_token_ids = true;
    p.sampling.temperature = 1.0f;
    p.max_tokens = 128;
    if (b.contains("sampling_params") && !b["sampling_params"].is_null()) {
      const json& sp = b["sampling_params"];
      if (!sp.is_object()) bad("sampling_params", "'sampling_params' must be an object");
      sampling_fields(sp, p, "sampling_params.");
      p.max_tokens = max_tokens_field(sp, "max_new_tokens", 128);
    }
    if (b.contains("return_logprob") && !b["return_logprob"].is_null())
      p.logprobs = boolean(b["return_logprob"], "return_logprob");
    if (b.contains("top_logprobs_num") && !b["top_logprobs_num"].is_null()) {
      const int64_t n = integer(b["top_logprobs_num"], "top_logprobs_num");
      if (n < 0 || n > 20) bad("top_logprobs_num", "'top_logprobs_num' must be in [0, 20]");
      p.top_logprobs = static_cast<int>(n);
    }
  }
  return r;
}

RequestParams choice_params(const ApiRequest& req, int i) {
  RequestParams p = req.params;
  // Seeds are in [0, 2^63): wrap there.
  p.sampling.seed = (p.sampling.seed + static_cast<uint64_t>(i)) & ((uint64_t{1} << 63) - 1);
  return p;
}

ApiResponse::ApiResponse(const ApiRequest& req, std::string id, std::string model, const TextSupport& text, int index,
                         bool closes)
    : req_(req), id_(std::move(id)), model_(std::move(model)), text_(text), index_(index), closes_(closes) {
  created_ = static_cast<long>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  prompt_tokens_ = static_cast<int>(req.params.prompt.size());
}

void ApiResponse::add(const RequestEvent& ev) {
  text_out_ += ev.text;
  ids_.insert(ids_.end(), ev.ids.begin(), ev.ids.end());
  lps_.insert(lps_.end(), ev.logprobs.begin(), ev.logprobs.end());
  completion_tokens_ = ev.completion_tokens;
  if (ev.finish) {
    finish_ = finish_reason_name(*ev.finish);
    matched_ = ev.matched_stop;
  }
}

json ApiResponse::usage() const {
  return {{"prompt_tokens", prompt_tokens_},
          {"completion_tokens", completion_tokens_},
          {"total_tokens", prompt_tokens_ + completion_tokens_}};
}

json ApiResponse::logprobs_json(const std::vector<TokenLogprob>& lps) const {
  auto tok = [&](int32_t id) {
    return text_.decode ? text_.decode({id}, false) : fmt::format("token_id:{}", id);
  };
  if (req_.kind == ApiKind::kChat) {
    json content = json::array();
    for (const TokenLogprob& lp : lps) {
      json top = json::array();
      for (const TopLogprob& t : lp.top) top.push_back({{"token", tok(t.id)}, {"logprob", t.logprob}, {"id", t.id}});
      content.push_back({{"token", tok(lp.id)}, {"logprob", lp.logprob}, {"id", lp.id}, {"top_logprobs", top}});
    }
    return {{"content", content}};
  }
  json tokens = json::array(), token_lps = json::array(), tops = json::array();
  for (const TokenLogprob& lp : lps) {
    tokens.push_back(tok(lp.id));
    token_lps.push_back(lp.logprob);
    json top = json::object();
    for (const TopLogprob& t : lp.top) top[tok(t.id)] = t.logprob;
    tops.push_back(top);
  }
  return {{"tokens", tokens}, {"token_logprobs", token_lps}, {"top_logprobs", tops}};
}

json ApiResponse::body() const {
  const json finish = finish_.empty() ? json() : json(finish_);
  if (req_.kind == ApiKind::kGenerate) {
    json meta = {{"id", id_},
                 {"finish_reason", {{"type", finish_}}},
                 {"prompt_tokens", prompt_tokens_},
                 {"completion_tokens", completion_tokens_}};
    if (!matched_.empty()) meta["finish_reason"]["matched"] = matched_;
    if (req_.params.logprobs) {
      json out = json::array();
      for (const auto& lp : lps_) out.push_back({lp.logprob, lp.id});
      meta["output_token_logprobs"] = out;
    }
    return {{"text", text_out_}, {"output_ids", ids_}, {"meta_info", meta}};
  }
  json choice = {{"index", index_}, {"finish_reason", finish}};
  if (!matched_.empty()) choice["matched_stop"] = matched_;
  choice["logprobs"] = req_.params.logprobs ? logprobs_json(lps_) : json();
  if (req_.return_token_ids) choice["token_ids"] = ids_;
  if (req_.kind == ApiKind::kChat) choice["message"] = {{"role", "assistant"}, {"content", text_out_}};
  else choice["text"] = text_out_;
  return {{"id", id_},
          {"object", req_.kind == ApiKind::kChat ? "chat.completion" : "text_completion"},
          {"created", created_},
          {"model", model_},
          {"choices", json::array({choice})},
          {"usage", usage()}};
}

json ApiResponse::chunk(const RequestEvent& ev) {
  if (req_.kind == ApiKind::kGenerate) {
    json j = body();
    return j;
  }
  json choice = {{"index", index_}, {"finish_reason", ev.finish ? json(finish_reason_name(*ev.finish)) : json()}};
  if (!ev.matched_stop.empty()) choice["matched_stop"] = ev.matched_stop;
  choice["logprobs"] = req_.params.logprobs && !ev.logprobs.empty() ? logprobs_json(ev.logprobs) : json();
  if (req_.return_token_ids) choice["token_ids"] = ev.ids;
  if (req_.kind == ApiKind::kChat) {
    json delta = {{"content", ev.text}};
    if (!sent_role_) delta["role"] = "assistant";
    sent_role_ = true;
    choice["delta"] = delta;
  } else {
    choice["text"] = ev.text;
  }
  return {{"id", id_},
          {"object", req_.kind == ApiKind::kChat ? "chat.completion.chunk" : "text_completion"},
          {"created", created_},
          {"model", model_},
          {"choices", json::array({choice})}};
}

std::string ApiResponse::sse(const RequestEvent& ev) {
  add(ev);
  std::string out;
  if (ev.finish && *ev.finish == FinishReason::kAbort) {
    out += "data: " + error_body(ev.error.empty() ? "request aborted" : ev.error, "server_error", "", 503).dump() + "\n\n";
    out += "data: [DONE]\n\n";
    return out;
  }
  out += "data: " + chunk(ev).dump() + "\n\n";
  if (ev.finish && closes_) {
    if (req_.include_usage && req_.kind != ApiKind::kGenerate) {
      json u = {{"id", id_},
                {"object", req_.kind == ApiKind::kChat ? "chat.completion.chunk" : "text_completion"},
                {"created", created_},
                {"model", model_},
                {"choices", json::array()},
                {"usage", usage()}};
      out += "data: " + u.dump() + "\n\n";
    }
    out += "data: [DONE]\n\n";
  }
  return out;
}

json ApiResponse::merge(const std::vector<std::unique_ptr<ApiResponse>>& choices) {
  json out = choices.front()->body();
  int completion = 0;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out["choices"].push_back(choices[i]->body()["choices"][0]);
    completion += choices[i]->completion_tokens_;
  }
  const int prompt = choices.front()->prompt_tokens_;
  out["usage"] = {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
  return out;
}

std::string ApiResponse::close_stream(const std::vector<std::unique_ptr<ApiResponse>>& choices) {
  std::string out;
  const ApiResponse& first = *choices.front();
  if (first.req_.include_usage && first.req_.kind != ApiKind::kGenerate) {
    int completion = 0;
    for (const auto& c : choices) completion += c->completion_tokens_;
    json u = {{"id", first.id_},
              {"object", first.req_.kind == ApiKind::kChat ? "chat.completion.chunk" : "text_completion"},
              {"created", first.created_},
              {"model", first.model_},
              {"choices", json::array()},
              {"usage",
               {{"prompt_tokens", first.prompt_tokens_},
                {"completion_tokens", completion},
                {"total_tokens", first.prompt_tokens_ + completion}}}};
    out += "data: " + u.dump() + "\n\n";
  }
  out += "data: [DONE]\n\n";
  return out;
}

}  // namespace grt
