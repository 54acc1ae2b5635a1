#include "cli/text_setup.h"

#include <filesystem>

#include "core/logging.h"
#include "model/model_loader.h"

// The text layer comes from its own branches (tokenizer, chat templates); each piece is wired in
// as soon as its header is part of the tree.
#if __has_include("text/tokenizer.h")
#include "text/tokenizer.h"
#define GRAPHRT_HAS_TOKENIZER 1
#endif
#if __has_include("text/chat_template.h")
#include "text/chat_template.h"
#define GRAPHRT_HAS_CHAT_TEMPLATE 1
#endif
#if __has_include("text/builtin_tokenizer.h")
#include "text/builtin_tokenizer.h"
#define GRAPHRT_HAS_BUILTIN_TOKENIZER 1
#endif

namespace grt {

#ifdef GRAPHRT_HAS_TOKENIZER
namespace {
class DetokenizerStream : public TextStream {
 public:
  DetokenizerStream(std::shared_ptr<const Tokenizer> tok, bool skip) : d_(std::move(tok), skip) {}
  std::string push(int32_t id) override { return d_.push(id); }
  std::string finish() override { return d_.finish(); }

 private:
  IncrementalDetokenizer d_;
};
}  // namespace
#endif

TextSupport text_support_for(const std::string& model) {
  TextSupport t;
#ifdef GRAPHRT_HAS_TOKENIZER
  const bool builtin = model.rfind("builtin:", 0) == 0;
  std::shared_ptr<const Tokenizer> tok;
  if (builtin) {
#ifdef GRAPHRT_HAS_BUILTIN_TOKENIZER
    tok = Tokenizer::from_json_text(make_builtin_tokenizer_json(load_model_config(model).vocab_size), model);
#endif
  } else if (std::filesystem::exists(std::filesystem::path(model) / "tokenizer.json")) {
    tok = Tokenizer::from_file(model);
  }
  if (!tok) return t;
  t.encode = [tok](const std::string& s, bool special) { return tok->encode(s, special); };
  t.decode = [tok](const std::vector<int32_t>& ids, bool skip) { return tok->decode(ids, skip); };
  t.stream = [tok](bool skip) -> std::unique_ptr<TextStream> { return std::make_unique<DetokenizerStream>(tok, skip); };
#ifdef GRAPHRT_HAS_CHAT_TEMPLATE
  std::shared_ptr<const ChatTemplate> chat;
  if (builtin) {
#ifdef GRAPHRT_HAS_BUILTIN_TOKENIZER
    chat = std::make_shared<const ChatTemplate>(kBuiltinChatTemplate, "", "<|im_end|>");
#endif
  } else {
    try {
      chat = std::make_shared<const ChatTemplate>(ChatTemplate::from_model_dir(model));
    } catch (const Error& e) {
      GRT_INFO("no chat template: {}", e.what());
    }
  }
  if (chat) t.render_chat = [chat](const nlohmann::json& req) { return chat->render(req); };
#endif
#else
  (void)model;
#endif
  return t;
}

}  // namespace grt
