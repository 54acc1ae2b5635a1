// Streaming detokenization: each push decodes a short window of recent ids and releases the
// text that is new since the window's previous decode, once it ends in complete UTF-8.
#include "core/error.h"
#include "text/tokenizer.h"
#include "text/utf8.h"

namespace grt {

IncrementalDetokenizer::IncrementalDetokenizer(std::shared_ptr<const Tokenizer> tok, bool skip_special_tokens)
    : tok_(std::move(tok)), skip_special_(skip_special_tokens) {
  GRT_CHECK(tok_ != nullptr, "IncrementalDetokenizer needs a tokenizer");
}

std::string IncrementalDetokenizer::push(int32_t id) {
  tok_->id_to_token(id);  // Error naming the id when it is out of range
  ids_.push_back(id);
  std::span<const int32_t> all(ids_);
  // The window's ids before read_ give the context: decoders such as Strip or Metaspace treat
  // the first token specially, so the new text is the difference of two decodes that both
  // start at prefix_.
  std::string before = tok_->decode(all.subspan(prefix_, read_ - prefix_), skip_special_);
  std::string now = tok_->decode(all.subspan(prefix_), skip_special_);
  if (now.size() <= before.size() || now.compare(0, before.size(), before) != 0 || text::ends_incomplete(now))
    return "";
  std::string delta = now.substr(before.size());
  prefix_ = read_;
  read_ = ids_.size();
  emitted_bytes_ += delta.size();
  return delta;
}

std::string IncrementalDetokenizer::finish() {
  std::string all = tok_->decode(ids_, skip_special_);
  std::string rest = emitted_bytes_ < all.size() ? all.substr(emitted_bytes_) : std::string();
  emitted_bytes_ += rest.size();
  ids_.clear();
  prefix_ = read_ = 0;
  emitted_bytes_ = 0;
  return rest;
}

}  // namespace grt
