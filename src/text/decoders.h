// tokenizer.json decoders: ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence.
// As HF, each works on the list of token strings and hands a list on; decode() joins the result.
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace grt::text {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

// nullptr for JSON null; Error naming the type for one we do not implement.
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j);

}  // namespace grt::text
