// The text pieces of a model (tokenizer, chat template, incremental detokenizer) as the server and
// generate use them; pieces the model lacks stay empty (requests needing them are refused).
#pragma once
#include <string>

#include "server/text_support.h"

namespace grt {

TextSupport text_support_for(const std::string& model);

}  // namespace grt
