// tokenizer.json post-processors for single sequences: TemplateProcessing, ByteLevel (ids
// unchanged), RobertaProcessing, BertProcessing, Sequence. They add BOS/EOS-like tokens when
// encode() is asked to add special tokens.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace grt::text {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // Rewrites the ids of one sequence.
  virtual void process(std::vector<int32_t>& ids) const = 0;
};

// nullptr for JSON null; Error naming the type for one we do not implement.
std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& j);

}  // namespace grt::text
