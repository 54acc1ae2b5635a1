// The OpenAI (/v1/completions, /v1/chat/completions) and SGLang-native (/generate) request bodies
// turned into scheduler requests, and the scheduler's events turned into response bodies and SSE
// chunks. Bad bodies are RequestRejected naming the field (the server answers 400).
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "runtime/request.h"
#include "server/text_support.h"

namespace grt {

enum class ApiKind { kCompletion, kChat, kGenerate };

struct ApiRequest {
  ApiKind kind = ApiKind::kCompletion;
  RequestParams params;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool return_token_ids = false;
  int completion_logprobs = -1;  // completions: `logprobs` (top count), -1: off
  // OpenAI's `n`: choices per request, each its own scheduler request; choice i samples with
  // seed + i (greedy choices are all the same).
  int n = 1;
};

// Most choices one request may ask for.
constexpr int kMaxChoices = 16;

// The scheduler request of choice `i` (its seed moved by i).
RequestParams choice_params(const ApiRequest& req, int i);

// Parses the body; RequestRejected(kInvalid, field) on any bad value.
ApiRequest parse_api_request(ApiKind kind, const std::string& body, const TextSupport& text);

// Accumulates one request's events into its response.
class ApiResponse {
 public:
  // `index`: the choice this response carries; `closes`: its stream ends with the usage chunk and
  // [DONE] (false when it is one of several choices: close_stream() ends the stream then).
  ApiResponse(const ApiRequest& req, std::string id, std::string model, const TextSupport& text, int index = 0,
              bool closes = true);
  // Non-streamed: adds the event to the result.
  void add(const RequestEvent& ev);
  nlohmann::json body() const;
  // Streamed: the SSE "data: ..." lines this event produces (usage and [DONE] after the last).
  std::string sse(const RequestEvent& ev);
  int completion_tokens() const { return completion_tokens_; }

  // Several choices of one request: one body with every choice and the usage summed.
  static nlohmann::json merge(const std::vector<std::unique_ptr<ApiResponse>>& choices);
  // The end of a stream of several choices: the usage chunk (when asked) and [DONE].
  static std::string close_stream(const std::vector<std::unique_ptr<ApiResponse>>& choices);

 private:
  nlohmann::json logprobs_json(const std::vector<TokenLogprob>& lps) const;
  nlohmann::json usage() const;
  nlohmann::json chunk(const RequestEvent& ev);

  const ApiRequest& req_;
  std::string id_, model_;
  const TextSupport& text_;
  long created_;
  std::string text_out_;
  std::vector<int32_t> ids_;
  std::vector<TokenLogprob> lps_;
  std::string finish_, matched_;
  int prompt_tokens_ = 0, completion_tokens_ = 0;
  bool sent_role_ = false;
  int index_ = 0;
  bool closes_ = true;
};

// {"error": {"message", "type", "param", "code"}} as OpenAI answers errors.
nlohmann::json error_body(const std::string& message, const std::string& type, const std::string& param, int code);

}  // namespace grt
