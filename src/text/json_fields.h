// Small readers for tokenizer.json fields: errors name the component and the field.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "core/error.h"

namespace grt::text {

inline std::string json_type_of(const nlohmann::json& j, const char* what) {
  GRT_CHECK(j.is_object() && j.contains("type") && j["type"].is_string(), "{} is not an object with a \"type\": {}",
            what, j.dump().substr(0, 200));
  return j["type"].get<std::string>();
}

inline std::string json_str(const nlohmann::json& j, const char* key, const std::string& where,
                            const std::string* dflt = nullptr) {
  if (!j.contains(key) || j[key].is_null()) {
    GRT_CHECK(dflt != nullptr, "{}: field \"{}\" is missing", where, key);
    return *dflt;
  }
  GRT_CHECK(j[key].is_string(), "{}: field \"{}\" is not a string: {}", where, key, j[key].dump());
  return j[key].get<std::string>();
}

inline bool json_bool(const nlohmann::json& j, const char* key, bool dflt) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  GRT_CHECK(j[key].is_boolean(), "field \"{}\" is not a boolean: {}", key, j[key].dump());
  return j[key].get<bool>();
}

// A {"String": s} or {"Regex": r} pattern; sets is_regex.
inline std::string json_pattern(const nlohmann::json& j, const std::string& where, bool& is_regex) {
  GRT_CHECK(j.contains("pattern") && j["pattern"].is_object(), "{}: \"pattern\" is missing or not an object", where);
  const auto& p = j["pattern"];
  if (p.contains("String") && p["String"].is_string()) {
    is_regex = false;
    return p["String"].get<std::string>();
  }
  if (p.contains("Regex") && p["Regex"].is_string()) {
    is_regex = true;
    return p["Regex"].get<std::string>();
  }
  GRT_FAIL("{}: \"pattern\" must be {{\"String\": ...}} or {{\"Regex\": ...}}, got {}", where, p.dump());
}

}  // namespace grt::text
