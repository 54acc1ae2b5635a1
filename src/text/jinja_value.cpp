#include "text/jinja_value.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace grt::jinja {

const Value* Dict::find(const std::string& key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void Dict::set(const std::string& key, Value v) {
  for (auto& [k, old] : items)
    if (k == key) {
      old = std::move(v);
      return;
    }
  items.emplace_back(key, std::move(v));
}

const Value* CallArgs::get(size_t index, const std::string& name) const {
  for (const auto& [k, v] : kw)
    if (k == name) return &v;
  return index < pos.size() ? &pos[index] : nullptr;
}

Value Value::function(std::string name, Function f) {
  Value v = with_kind(Kind::Callable);
  v.str_ = std::move(name);
  v.fn_ = std::make_shared<Function>(std::move(f));
  return v;
}

Value Value::tuple(List l) {
  Value v(std::move(l));
  v.namespace_ = true;
  return v;
}

Value Value::make_namespace(Dict d) {
  Value v(std::move(d));
  v.namespace_ = true;
  return v;
}

namespace {

template <class J>
Value value_from_json(const J& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      auto u = j.template get<uint64_t>();
      GRT_CHECK(u <= static_cast<uint64_t>(INT64_MAX), "integer {} is too large for a template value", u);
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float: return Value(j.template get<double>());
    case nlohmann::json::value_t::string: return Value(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      List l;
      l.reserve(j.size());
      for (const auto& e : j) l.push_back(value_from_json(e));
      return Value(std::move(l));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d.items.emplace_back(it.key(), value_from_json(it.value()));
      return Value(std::move(d));
    }
    default: GRT_FAIL("JSON value of type {} cannot be a template value", j.type_name());
  }
}

void append_utf8_escaped_json(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

std::string python_str_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (unsigned char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += q;
  return out;
}

void dump_json(const Value& v, int indent, bool sort_keys, int depth, std::string& out) {
  auto newline = [&](int d) {
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  switch (v.kind()) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Float: {
      double d = v.as_number();
      if (std::isnan(d)) out += "NaN";
      else if (std::isinf(d)) out += d > 0 ? "Infinity" : "-Infinity";
      else out += python_float_repr(d);
      return;
    }
    case Value::Kind::String: append_utf8_escaped_json(out, v.as_string()); return;
    case Value::Kind::List: {
      const auto& l = v.list();
      if (l.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < l.size(); ++i) {
        if (i) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(depth + 1);
        dump_json(l[i], indent, sort_keys, depth + 1, out);
      }
      if (indent >= 0) newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      auto items = v.dict().items;
      if (items.empty()) {
        out += "{}";
        return;
      }
      if (sort_keys)
        std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += indent >= 0 ? "," : ", ";
        if (indent >= 0) newline(depth + 1);
        append_utf8_escaped_json(out, items[i].first);
        out += ": ";
        dump_json(items[i].second, indent, sort_keys, depth + 1, out);
      }
      if (indent >= 0) newline(depth);
      out += '}';
      return;
    }
    case Value::Kind::Undefined:
      GRT_FAIL("tojson: '{}' is undefined and cannot be written as JSON",
               v.undefined_name().empty() ? "value" : v.undefined_name());
    case Value::Kind::Callable: GRT_FAIL("tojson: function '{}' cannot be written as JSON", v.fn_name());
  }
}

}  // namespace

Value Value::from_json(const nlohmann::json& j) { return value_from_json(j); }
Value Value::from_json(const nlohmann::ordered_json& j) { return value_from_json(j); }

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool:
    case Kind::Int: return int_ != 0;
    case Kind::Float: return float_ != 0;
    case Kind::String: return !str_.empty();
    case Kind::List: return !list_->empty();
    case Kind::Dict: return !dict_->items.empty();
    case Kind::Callable: return true;
  }
  return false;
}

std::string Value::str() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::String: return str_;
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "None";
    case Kind::Bool: return int_ ? "True" : "False";
    case Kind::Int: return std::to_string(int_);
    case Kind::Float: return python_float_repr(float_);
    case Kind::String: return python_str_repr(str_);
    case Kind::List: {
      std::string out = namespace_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i) out += ", ";
        out += (*list_)[i].repr();
      }
      if (namespace_ && list_->size() == 1) out += ",";
      return out + (namespace_ ? ")" : "]");
    }
    case Kind::Dict: {
      std::string out = namespace_ ? "<Namespace {" : "{";
      for (size_t i = 0; i < dict_->items.size(); ++i) {
        if (i) out += ", ";
        out += python_str_repr(dict_->items[i].first) + ": " + dict_->items[i].second.repr();
      }
      return out + (namespace_ ? "}>" : "}");
    }
    case Kind::Callable: return "<function " + str_ + ">";
  }
  return "";
}

std::string Value::to_json(int indent, bool sort_keys) const {
  std::string out;
  dump_json(*this, indent, sort_keys, 0, out);
  return out;
}

bool Value::equals(const Value& o) const {
  if (is_number() && o.is_number()) {
    if (kind_ != Kind::Float && o.kind_ != Kind::Float) return int_ == o.int_;
    return as_number() == o.as_number();
  }
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return true;
    case Kind::String: return str_ == o.str_;
    case Kind::List: {
      if (list_->size() != o.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i)
        if (!(*list_)[i].equals((*o.list_)[i])) return false;
      return true;
    }
    case Kind::Dict: {
      if (dict_->items.size() != o.dict_->items.size()) return false;
      for (const auto& [k, v] : dict_->items) {
        const Value* ov = o.dict_->find(k);
        if (!ov || !v.equals(*ov)) return false;
      }
      return true;
    }
    case Kind::Callable: return fn_ == o.fn_;
    default: return false;
  }
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "undefined";
    case Kind::None: return "none";
    case Kind::Bool: return "boolean";
    case Kind::Int: return "integer";
    case Kind::Float: return "float";
    case Kind::String: return "string";
    case Kind::List: return "list";
    case Kind::Dict: return namespace_ ? "namespace" : "dict";
    // (a tuple reports "list": templates treat both alike)
    case Kind::Callable: return "function";
  }
  return "?";
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // like "-1.2345e+02"
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp = std::stoi(sci.substr(e + 1));
  const int decpt = exp + 1;  // position of the decimal point relative to the digits
  std::string out;
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out = "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += eb;
  }
  return sign + out;
}

std::vector<size_t> utf8_offsets(const std::string& s) {
  std::vector<size_t> offs;
  offs.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) offs.push_back(i);
  return offs;
}

}  // namespace grt::jinja
