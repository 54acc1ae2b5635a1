// What the server needs from the text layer, as plain functions so a model without a tokenizer
// or chat template still serves token ids (each missing piece refuses the requests that need it).
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "runtime/request.h"

namespace grt {

struct TextSupport {
  std::function<std::vector<int32_t>(const std::string& text, bool add_special_tokens)> encode;
  std::function<std::string(const std::vector<int32_t>& ids, bool skip_special_tokens)> decode;
  std::function<std::string(const nlohmann::json& chat_request)> render_chat;  // chat template
  TextStreamFactory stream;  // incremental detokenizer
};

}  // namespace grt
