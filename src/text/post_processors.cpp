#include "text/post_processors.h"

#include "core/error.h"
#include "text/json_fields.h"

namespace grt::text {
namespace {

// The ids to put around a sequence: before it, then after it.
class Wrap : public PostProcessor {
 public:
  Wrap(std::vector<int32_t> before, std::vector<int32_t> after) : before_(std::move(before)), after_(std::move(after)) {}
  void process(std::vector<int32_t>& ids) const override {
    ids.insert(ids.begin(), before_.begin(), before_.end());
    ids.insert(ids.end(), after_.begin(), after_.end());
  }

 private:
  std::vector<int32_t> before_, after_;
};

class Identity : public PostProcessor {
 public:
  void process(std::vector<int32_t>&) const override {}
};

class Sequence : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void process(std::vector<int32_t>& ids) const override {
    for (const auto& p : parts_) p->process(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

std::unique_ptr<PostProcessor> template_processing(const nlohmann::json& j) {
  GRT_CHECK(j.contains("single") && j["single"].is_array(), "TemplateProcessing: \"single\" is missing or not a list");
  const nlohmann::json specials = j.value("special_tokens", nlohmann::json::object());
  std::vector<int32_t> before, after;
  bool seen_sequence = false;
  for (const auto& piece : j["single"]) {
    if (piece.contains("Sequence")) {
      GRT_CHECK(!seen_sequence, "TemplateProcessing: \"single\" holds more than one Sequence");
      seen_sequence = true;
      continue;
    }
    GRT_CHECK(piece.contains("SpecialToken") && piece["SpecialToken"].contains("id"),
              "TemplateProcessing: piece {} is neither a Sequence nor a SpecialToken", piece.dump());
    std::string name = piece["SpecialToken"]["id"].get<std::string>();
    GRT_CHECK(specials.contains(name) && specials[name].contains("ids") && specials[name]["ids"].is_array(),
              "TemplateProcessing: special token \"{}\" has no entry with \"ids\" in \"special_tokens\"", name);
    for (const auto& id : specials[name]["ids"]) (seen_sequence ? after : before).push_back(id.get<int32_t>());
  }
  GRT_CHECK(seen_sequence, "TemplateProcessing: \"single\" has no Sequence");
  return std::make_unique<Wrap>(std::move(before), std::move(after));
}

// RobertaProcessing/BertProcessing: "cls" and "sep" are [token, id] pairs.
int32_t pair_id(const nlohmann::json& j, const char* key, const std::string& type) {
  GRT_CHECK(j.contains(key) && j[key].is_array() && j[key].size() == 2 && j[key][1].is_number_integer(),
            "{}: \"{}\" is not a [token, id] pair", type, key);
  return j[key][1].get<int32_t>();
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& j) {
  if (j.is_null()) return nullptr;
  std::string type = json_type_of(j, "post_processor");
  if (type == "TemplateProcessing") return template_processing(j);
  if (type == "ByteLevel") return std::make_unique<Identity>();  // it only moves offsets
  if (type == "RobertaProcessing" || type == "BertProcessing")
    return std::make_unique<Wrap>(std::vector<int32_t>{pair_id(j, "cls", type)},
                                  std::vector<int32_t>{pair_id(j, "sep", type)});
  if (type == "Sequence") {
    GRT_CHECK(j.contains("processors") && j["processors"].is_array(),
              "Sequence post_processor: \"processors\" is missing or not a list");
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (const auto& p : j["processors"]) {
      auto n = make_post_processor(p);
      if (n) parts.push_back(std::move(n));
    }
    return std::make_unique<Sequence>(std::move(parts));
  }
  GRT_FAIL("post_processor type \"{}\" is not implemented (graphrt knows TemplateProcessing, ByteLevel, "
           "RobertaProcessing, BertProcessing, Sequence)", type);
}

}  // namespace grt::text
