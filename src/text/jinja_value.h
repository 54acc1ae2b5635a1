// The value type of the Jinja interpreter: Python-like semantics for what chat templates use.
// Lists and dicts are shared by reference (as Python objects are), so `ns.x = ...` on a namespace
// and a list seen through two names behave as in jinja2.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace grt::jinja {

class Value;
using List = std::vector<Value>;

// Insertion-ordered string-keyed map (Python dicts keep insertion order; tojson relies on it).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);
};

struct CallArgs {
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  // The kw argument `name`, else positional argument `index`, else nullptr.
  const Value* get(size_t index, const std::string& name) const;
};
using Function = std::function<Value(const CallArgs&)>;

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Callable };

  Value() = default;  // undefined
  static Value undefined(std::string name = "") {
    Value v;
    v.str_ = std::move(name);
    return v;
  }
  static Value none() { return with_kind(Kind::None); }
  Value(bool b) : kind_(Kind::Bool), int_(b) {}
  Value(int v) : kind_(Kind::Int), int_(v) {}
  Value(int64_t v) : kind_(Kind::Int), int_(v) {}
  Value(double v) : kind_(Kind::Float), float_(v) {}
  Value(std::string s) : kind_(Kind::String), str_(std::move(s)) {}
  Value(const char* s) : kind_(Kind::String), str_(s) {}
  Value(List l) : kind_(Kind::List), list_(std::make_shared<List>(std::move(l))) {}
  Value(Dict d) : kind_(Kind::Dict), dict_(std::make_shared<Dict>(std::move(d))) {}
  static Value function(std::string name, Function f);
  // A Python tuple: a list that prints as `(a, b)` (dict items, `(a, b)` literals).
  static Value tuple(List l);
  // A jinja2 namespace(): a dict whose attributes may be assigned with `set ns.attr = ...`.
  static Value make_namespace(Dict d);

  static Value from_json(const nlohmann::json& j);
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_list() const { return kind_ == Kind::List; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  bool is_callable() const { return kind_ == Kind::Callable; }
  bool is_namespace() const { return kind_ == Kind::Dict && namespace_; }
  bool is_tuple() const { return kind_ == Kind::List && namespace_; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }
  double as_number() const { return kind_ == Kind::Float ? float_ : static_cast<double>(int_); }
  const std::string& as_string() const { return str_; }
  // For an undefined value: the name it was looked up by ("" when unknown).
  const std::string& undefined_name() const { return str_; }
  List& list() const { return *list_; }
  Dict& dict() const { return *dict_; }
  const Function& fn() const { return *fn_; }
  const std::string& fn_name() const { return str_; }

  // Python truthiness.
  bool truthy() const;
  // Python str(): what `{{ v }}` prints ("" for undefined, "None", "True", Python float repr,
  // Python repr for lists and dicts).
  std::string str() const;
  // Python repr() (strings quoted).
  std::string repr() const;
  // Python json.dumps(v, ensure_ascii=False, indent=indent (<0: none), sort_keys): what
  // transformers' tojson filter prints. Error for undefined or callables.
  std::string to_json(int indent = -1, bool sort_keys = false) const;
  // Python ==.
  bool equals(const Value& o) const;
  // Name of the type for error messages ("string", "list", ...).
  const char* type_name() const;

 private:
  static Value with_kind(Kind k) {
    Value v;
    v.kind_ = k;
    return v;
  }
  Kind kind_ = Kind::Undefined;
  int64_t int_ = 0;
  double float_ = 0;
  std::string str_;  // string, undefined name, or function name
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Function> fn_;
  bool namespace_ = false;  // a namespace() dict, or a tuple list
};

// Python float repr (shortest round-trip, "1.0", "1e+16", "inf", "nan").
std::string python_float_repr(double d);

// UTF-8 helpers: code points of s (as byte offsets), for Python-style indexing by character.
std::vector<size_t> utf8_offsets(const std::string& s);

}  // namespace grt::jinja
