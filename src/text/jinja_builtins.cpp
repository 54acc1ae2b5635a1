#include "text/jinja_builtins.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "core/error.h"

namespace grt::jinja {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw Error(msg); }

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
std::string capitalize(const std::string& s) {
  std::string r = lower(s);
  if (!r.empty()) r[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(r[0])));
  return r;
}
// Python str.title(): a letter after a non-letter is upper-cased, other letters lower-cased.
std::string py_title(const std::string& s) {
  std::string r = s;
  bool prev_letter = false;
  for (auto& c : r) {
    unsigned char u = static_cast<unsigned char>(c);
    bool letter = std::isalpha(u);
    if (letter) c = static_cast<char>(prev_letter ? std::tolower(u) : std::toupper(u));
    prev_letter = letter || u >= 0x80;
  }
  return r;
}
// jinja2's title filter: words start after '-', whitespace, '(', '{', '[' or '<'.
std::string jinja_title(const std::string& s) {
  std::string r;
  bool start = true;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (is_ws(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<') {
      r += c;
      start = true;
    } else {
      r += static_cast<char>(start ? std::toupper(u) : std::tolower(u));
      start = false;
    }
  }
  return r;
}

std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  auto in_set = [&](char c) {
    if (!chars || chars->is_none() || chars->is_undefined()) return is_ws(c);
    return chars->as_string().find(c) != std::string::npos;
  };
  if (chars && !chars->is_none() && !chars->is_undefined() && !chars->is_string())
    fail(fmt::format("strip() characters must be a string, not {}", chars->type_name()));
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && in_set(s[b])) ++b;
  if (right)
    while (e > b && in_set(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string r;
  if (from.empty()) {  // Python inserts `to` between characters
    auto offs = utf8_offsets(s);
    int64_t n = 0;
    for (size_t i = 0; i <= offs.size(); ++i) {
      if (count < 0 || n < count) {
        r += to;
        ++n;
      }
      if (i < offs.size()) r += s.substr(offs[i], (i + 1 < offs.size() ? offs[i + 1] : s.size()) - offs[i]);
    }
    return r;
  }
  size_t pos = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    size_t p = s.find(from, pos);
    if (p == std::string::npos) break;
    r += s.substr(pos, p - pos) + to;
    pos = p + from.size();
    ++n;
  }
  return r + s.substr(pos);
}

List split_chars(const std::string& s) {
  auto offs = utf8_offsets(s);
  List l;
  for (size_t i = 0; i < offs.size(); ++i)
    l.push_back(Value(s.substr(offs[i], (i + 1 < offs.size() ? offs[i + 1] : s.size()) - offs[i])));
  return l;
}

List py_split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right) {
  List parts;
  if (!sep || sep->is_none()) {  // runs of whitespace, no empty parts
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && is_ws(s[i])) ++i;
      if (i >= s.size()) break;
      size_t j = i;
      while (j < s.size() && !is_ws(s[j])) ++j;
      words.emplace_back(i, j);
      i = j;
    }
    if (maxsplit < 0 || static_cast<size_t>(maxsplit) + 1 >= words.size()) {
      for (auto [b, e] : words) parts.push_back(Value(s.substr(b, e - b)));
      return parts;
    }
    if (!from_right) {
      for (size_t k = 0; k < static_cast<size_t>(maxsplit); ++k)
        parts.push_back(Value(s.substr(words[k].first, words[k].second - words[k].first)));
      parts.push_back(Value(strip(s.substr(words[static_cast<size_t>(maxsplit)].first), nullptr, false, true)));
    } else {
      size_t keep = words.size() - static_cast<size_t>(maxsplit);
      parts.push_back(Value(strip(s.substr(0, words[keep - 1].second), nullptr, true, false)));
      for (size_t k = keep; k < words.size(); ++k)
        parts.push_back(Value(s.substr(words[k].first, words[k].second - words[k].first)));
    }
    return parts;
  }
  if (!sep->is_string()) fail(fmt::format("split() separator must be a string, not {}", sep->type_name()));
  const std::string& d = sep->as_string();
  if (d.empty()) fail("split(): empty separator");
  std::vector<std::string> out;
  if (!from_right) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t p = s.find(d, pos);
      if (p == std::string::npos) break;
      out.push_back(s.substr(pos, p - pos));
      pos = p + d.size();
    }
    out.push_back(s.substr(pos));
  } else {
    size_t end = s.size();
    std::vector<std::string> rev;
    while (maxsplit < 0 || static_cast<int64_t>(rev.size()) < maxsplit) {
      if (end < d.size()) break;
      size_t p = s.rfind(d, end - d.size());
      if (p == std::string::npos) break;
      rev.push_back(s.substr(p + d.size(), end - p - d.size()));
      end = p;
    }
    rev.push_back(s.substr(0, end));
    out.assign(rev.rbegin(), rev.rend());
  }
  for (auto& p : out) parts.push_back(Value(std::move(p)));
  return parts;
}

const std::string& need_string(const Value& v, const char* what) {
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_string()) fail(fmt::format("{} needs a string, not {}", what, v.type_name()));
  return v.as_string();
}

int64_t need_int(const Value& v, const char* what) {
  if (!v.is_int() && !v.is_bool()) fail(fmt::format("{} needs an integer, not {}", what, v.type_name()));
  return v.as_int();
}

int64_t length_of(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: return static_cast<int64_t>(utf8_offsets(v.as_string()).size());
    case Value::Kind::List: return static_cast<int64_t>(v.list().size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.dict().items.size());
    default: fail(fmt::format("object of type {} has no length", v.type_name()));
  }
}

bool starts_or_ends(const std::string& s, const Value& arg, bool start) {
  auto one = [&](const Value& p) {
    const std::string& x = need_string(p, start ? "startswith()" : "endswith()");
    if (x.size() > s.size()) return false;
    return start ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (arg.is_list()) {
    for (const auto& p : arg.list())
      if (one(p)) return true;
    return false;
  }
  return one(arg);
}

// Python str.format with `{}`, `{0}` and `{name}` fields (no format specs).
std::string py_format(const std::string& fmt_s, const CallArgs& a) {
  std::string r;
  size_t auto_idx = 0;
  for (size_t i = 0; i < fmt_s.size(); ++i) {
    char c = fmt_s[i];
    if (c == '{' && i + 1 < fmt_s.size() && fmt_s[i + 1] == '{') {
      r += '{';
      ++i;
    } else if (c == '}' && i + 1 < fmt_s.size() && fmt_s[i + 1] == '}') {
      r += '}';
      ++i;
    } else if (c == '{') {
      size_t close = fmt_s.find('}', i);
      if (close == std::string::npos) fail("format(): '{' is never closed");
      std::string field = fmt_s.substr(i + 1, close - i - 1);
      if (field.find_first_of(":!") != std::string::npos) fail("format(): format specs are not supported");
      const Value* v = nullptr;
      if (field.empty()) {
        if (auto_idx >= a.pos.size()) fail("format(): not enough arguments");
        v = &a.pos[auto_idx++];
      } else if (std::all_of(field.begin(), field.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
        size_t k = std::stoul(field);
        if (k >= a.pos.size()) fail(fmt::format("format(): no argument {}", k));
        v = &a.pos[k];
      } else {
        for (const auto& [k, val] : a.kw)
          if (k == field) v = &val;
        if (!v) fail(fmt::format("format(): no argument '{}'", field));
      }
      r += v->str();
      i = close;
    } else {
      r += c;
    }
  }
  return r;
}

Value bound(const std::string& name, std::function<Value(const CallArgs&)> f) {
  return Value::function(name, std::move(f));
}

Value string_method(const std::string& s, const std::string& name) {
  auto arg = [](const CallArgs& a, size_t i, const char* n) { return a.get(i, n); };
  if (name == "startswith" || name == "endswith")
    return bound(name, [s, start = name == "startswith"](const CallArgs& a) {
      if (a.pos.empty()) fail(fmt::format("{}() takes a prefix", start ? "startswith" : "endswith"));
      return Value(starts_or_ends(s, a.pos[0], start));
    });
  if (name == "split" || name == "rsplit")
    return bound(name, [s, arg, right = name == "rsplit"](const CallArgs& a) {
      const Value* ms = arg(a, 1, "maxsplit");
      return Value(py_split(s, arg(a, 0, "sep"), ms ? need_int(*ms, "maxsplit") : -1, right));
    });
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return bound(name, [s, name](const CallArgs& a) {
      return Value(strip(s, a.get(0, "chars"), name != "rstrip", name != "lstrip"));
    });
  if (name == "replace")
    return bound(name, [s](const CallArgs& a) {
      if (a.pos.size() < 2) fail("replace() takes old and new strings");
      const Value* c = a.get(2, "count");
      return Value(replace_all(s, need_string(a.pos[0], "replace()"), need_string(a.pos[1], "replace()"),
                               c ? need_int(*c, "replace() count") : -1));
    });
  if (name == "upper") return bound(name, [s](const CallArgs&) { return Value(upper(s)); });
  if (name == "lower") return bound(name, [s](const CallArgs&) { return Value(lower(s)); });
  if (name == "title") return bound(name, [s](const CallArgs&) { return Value(py_title(s)); });
  if (name == "capitalize") return bound(name, [s](const CallArgs&) { return Value(capitalize(s)); });
  if (name == "find" || name == "rfind" || name == "index")
    return bound(name, [s, name](const CallArgs& a) {
      if (a.pos.empty()) fail(fmt::format("{}() takes a substring", name));
      const std::string& sub = need_string(a.pos[0], "find()");
      size_t p = name == "rfind" ? s.rfind(sub) : s.find(sub);
      if (p == std::string::npos) {
        if (name == "index") fail("index(): substring not found");
        return Value(int64_t{-1});
      }
      // Python counts characters, not bytes.
      return Value(static_cast<int64_t>(utf8_offsets(s.substr(0, p)).size()));
    });
  if (name == "count")
    return bound(name, [s](const CallArgs& a) {
      if (a.pos.empty()) fail("count() takes a substring");
      const std::string& sub = need_string(a.pos[0], "count()");
      if (sub.empty()) return Value(static_cast<int64_t>(utf8_offsets(s).size() + 1));
      int64_t n = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
      return Value(n);
    });
  if (name == "format") return bound(name, [s](const CallArgs& a) { return Value(py_format(s, a)); });
  if (name == "join")
    return bound(name, [s](const CallArgs& a) {
      if (a.pos.empty()) fail("join() takes an iterable");
      std::string r;
      List items = iterate(a.pos[0]);
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) r += s;
        r += need_string(items[i], "join()");
      }
      return Value(std::move(r));
    });
  if (name == "splitlines")
    return bound(name, [s](const CallArgs&) {
      List l;
      size_t b = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\n' || s[i] == '\r') {
          l.push_back(Value(s.substr(b, i - b)));
          if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
          b = i + 1;
        }
      }
      if (b < s.size()) l.push_back(Value(s.substr(b)));
      return Value(std::move(l));
    });
  if (name == "removeprefix" || name == "removesuffix")
    return bound(name, [s, pre = name == "removeprefix"](const CallArgs& a) {
      if (a.pos.empty()) fail("removeprefix()/removesuffix() take a string");
      const std::string& x = need_string(a.pos[0], "removeprefix()");
      if (pre && s.compare(0, x.size(), x) == 0) return Value(s.substr(x.size()));
      if (!pre && x.size() <= s.size() && s.compare(s.size() - x.size(), x.size(), x) == 0)
        return Value(s.substr(0, s.size() - x.size()));
      return Value(s);
    });
  auto char_test = [&](int (*pred)(int)) {
    return bound(name, [s, pred](const CallArgs&) {
      if (s.empty()) return Value(false);
      for (unsigned char c : s)
        if (!pred(c)) return Value(false);
      return Value(true);
    });
  };
  if (name == "isdigit") return char_test([](int c) { return std::isdigit(c); });
  if (name == "isalpha") return char_test([](int c) { return std::isalpha(c); });
  if (name == "isalnum") return char_test([](int c) { return std::isalnum(c); });
  if (name == "isspace") return char_test([](int c) { return std::isspace(c); });
  if (name == "islower")
    return bound(name, [s](const CallArgs&) { return Value(lower(s) == s && upper(s) != s); });
  if (name == "isupper")
    return bound(name, [s](const CallArgs&) { return Value(upper(s) == s && lower(s) != s); });
  return Value::undefined();
}

Value dict_method(const Value& d, const std::string& name) {
  if (name == "items")
    return bound(name, [d](const CallArgs&) {
      List l;
      for (const auto& [k, v] : d.dict().items) l.push_back(Value::tuple(List{Value(k), v}));
      return Value(std::move(l));
    });
  if (name == "keys")
    return bound(name, [d](const CallArgs&) {
      List l;
      for (const auto& kv : d.dict().items) l.push_back(Value(kv.first));
      return Value(std::move(l));
    });
  if (name == "values")
    return bound(name, [d](const CallArgs&) {
      List l;
      for (const auto& kv : d.dict().items) l.push_back(kv.second);
      return Value(std::move(l));
    });
  if (name == "get")
    return bound(name, [d](const CallArgs& a) {
      if (a.pos.empty()) fail("get() takes a key");
      const Value* def = a.get(1, "default");
      if (a.pos[0].is_string())
        if (const Value* v = d.dict().find(a.pos[0].as_string())) return *v;
      return def ? *def : Value::none();
    });
  static const char* mutating[] = {"pop", "popitem", "setdefault", "update", "clear"};
  for (const char* m : mutating)
    if (name == m)
      return bound(name, [name](const CallArgs&) -> Value {
        fail(fmt::format("dict.{}() modifies a dict, which HF's immutable sandbox refuses", name));
      });
  return Value::undefined();
}

Value list_method(const Value& l, const std::string& name) {
  static const char* mutating[] = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"};
  for (const char* m : mutating)
    if (name == m)
      return bound(name, [name](const CallArgs&) -> Value {
        fail(fmt::format("list.{}() modifies a list, which HF's immutable sandbox refuses", name));
      });
  if (name == "index" || name == "count")
    return bound(name, [l, name](const CallArgs& a) {
      if (a.pos.empty()) fail(fmt::format("{}() takes a value", name));
      int64_t n = 0;
      for (size_t i = 0; i < l.list().size(); ++i)
        if (l.list()[i].equals(a.pos[0])) {
          if (name == "index") return Value(static_cast<int64_t>(i));
          ++n;
        }
      if (name == "index") fail("index(): value is not in the list");
      return Value(n);
    });
  return Value::undefined();
}

// Attribute path "a.b.0" for map/sort/selectattr/join.
Value attr_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t b = 0;
  while (b <= path.size()) {
    size_t e = path.find('.', b);
    if (e == std::string::npos) e = path.size();
    std::string part = path.substr(b, e - b);
    if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      cur = get_item(cur, Value(static_cast<int64_t>(std::stoll(part))), part);
    else
      cur = get_item(cur, Value(part), part);
    b = e + 1;
  }
  return cur;
}

int compare_values(const Value& a, const Value& b, bool case_sensitive) {
  if (!case_sensitive && a.is_string() && b.is_string()) {
    std::string x = lower(a.as_string()), y = lower(b.as_string());
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (less_than(a, b)) return -1;
  if (less_than(b, a)) return 1;
  return 0;
}

std::string html_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    switch (c) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '"': r += "&#34;"; break;
      case '\'': r += "&#39;"; break;
      default: r += c;
    }
  }
  return r;
}

double py_round(double x, int64_t ndigits) {
  // Python rounds the exact binary value to `ndigits` decimals, ties to even: glibc's printf does
  // the same (round(2.675, 2) is 2.67 because 2.675 is stored as 2.67499...).
  if (ndigits < 0 || ndigits > 100 || !std::isfinite(x)) {
    double m = std::pow(10.0, static_cast<double>(ndigits));
    return std::nearbyint(x * m) / m;
  }
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(ndigits), x);
  return std::strtod(buf, nullptr);
}

bool bool_arg(const CallArgs& a, size_t i, const char* name, bool def) {
  const Value* v = a.get(i, name);
  return v ? v->truthy() : def;
}

// select/reject/selectattr/rejectattr share this: test name and its arguments from `first`.
List filter_items(const Value& input, const CallArgs& a, size_t first, bool keep, const std::string* attr) {
  List out;
  CallArgs targs;
  std::string test;
  if (a.pos.size() > first) {
    test = need_string(a.pos[first], "select() test name");
    targs.pos.assign(a.pos.begin() + static_cast<long>(first) + 1, a.pos.end());
  }
  targs.kw = a.kw;
  for (const auto& it : iterate(input)) {
    Value v = attr ? attr_path(it, *attr) : it;
    bool ok = test.empty() ? v.truthy() : apply_test(test, v, targs);
    if (ok == keep) out.push_back(it);
  }
  return out;
}

using FilterFn = Value (*)(const Value&, const CallArgs&);

const std::map<std::string, FilterFn>& filters() {
  static const std::map<std::string, FilterFn> table = {
      {"trim", [](const Value& v, const CallArgs& a) { return Value(strip(v.str(), a.get(0, "chars"), true, true)); }},
      {"tojson",
       [](const Value& v, const CallArgs& a) {
         const Value* ind = a.get(0, "indent");
         const Value* sk = a.get(3, "sort_keys");
         int indent = ind && !ind->is_none() ? static_cast<int>(need_int(*ind, "tojson indent")) : -1;
         if (a.get(1, "ensure_ascii") && a.get(1, "ensure_ascii")->truthy())
           fail("tojson(ensure_ascii=true) is not supported");
         if (a.get(2, "separators") && !a.get(2, "separators")->is_none())
           fail("tojson(separators=...) is not supported");
         return Value(v.to_json(indent, sk && sk->truthy()));
       }},
      {"length", [](const Value& v, const CallArgs&) { return Value(length_of(v)); }},
      {"count", [](const Value& v, const CallArgs&) { return Value(length_of(v)); }},
      {"string", [](const Value& v, const CallArgs&) { return Value(v.str()); }},
      {"lower", [](const Value& v, const CallArgs&) { return Value(lower(v.str())); }},
      {"upper", [](const Value& v, const CallArgs&) { return Value(upper(v.str())); }},
      {"title", [](const Value& v, const CallArgs&) { return Value(jinja_title(v.str())); }},
      {"capitalize", [](const Value& v, const CallArgs&) { return Value(capitalize(v.str())); }},
      {"items",
       [](const Value& v, const CallArgs&) {
         if (v.is_undefined()) return Value(List{});
         if (!v.is_dict()) fail(fmt::format("items needs a mapping, not {}", v.type_name()));
         return dict_method(v, "items").fn()(CallArgs{});
       }},
      {"default",
       [](const Value& v, const CallArgs& a) {
         const Value* d = a.get(0, "default_value");
         bool boolean = bool_arg(a, 1, "boolean", false);
         if (v.is_undefined() || (boolean && !v.truthy())) return d ? *d : Value("");
         return v;
       }},
      {"d",
       [](const Value& v, const CallArgs& a) { return apply_filter("default", v, a); }},
      {"join",
       [](const Value& v, const CallArgs& a) {
         const Value* d = a.get(0, "d");
         const Value* attr = a.get(1, "attribute");
         std::string sep = d ? d->str() : "";
         std::string r;
         List items = iterate(v);
         for (size_t i = 0; i < items.size(); ++i) {
           if (i) r += sep;
           r += (attr ? attr_path(items[i], attr->str()) : items[i]).str();
         }
         return Value(std::move(r));
       }},
      {"first",
       [](const Value& v, const CallArgs&) {
         List l = iterate(v);
         return l.empty() ? Value::undefined("first item") : l.front();
       }},
      {"last",
       [](const Value& v, const CallArgs&) {
         List l = iterate(v);
         return l.empty() ? Value::undefined("last item") : l.back();
       }},
      {"list", [](const Value& v, const CallArgs&) { return Value(iterate(v)); }},
      {"map",
       [](const Value& v, const CallArgs& a) {
         List out;
         const Value* attr = nullptr;
         for (const auto& [k, val] : a.kw)
           if (k == "attribute") attr = &val;
         const Value* def = nullptr;
         for (const auto& [k, val] : a.kw)
           if (k == "default") def = &val;
         for (const auto& it : iterate(v)) {
           if (attr) {
             Value x = attr_path(it, attr->str());
             out.push_back(x.is_undefined() && def ? *def : x);
           } else {
             if (a.pos.empty()) fail("map() needs a filter name or attribute=");
             CallArgs fa;
             fa.pos.assign(a.pos.begin() + 1, a.pos.end());
             out.push_back(apply_filter(need_string(a.pos[0], "map() filter name"), it, fa));
           }
         }
         return Value(std::move(out));
       }},
      {"select", [](const Value& v, const CallArgs& a) { return Value(filter_items(v, a, 0, true, nullptr)); }},
      {"reject", [](const Value& v, const CallArgs& a) { return Value(filter_items(v, a, 0, false, nullptr)); }},
      {"selectattr",
       [](const Value& v, const CallArgs& a) {
         if (a.pos.empty()) fail("selectattr() needs an attribute name");
         std::string attr = a.pos[0].str();
         return Value(filter_items(v, a, 1, true, &attr));
       }},
      {"rejectattr",
       [](const Value& v, const CallArgs& a) {
         if (a.pos.empty()) fail("rejectattr() needs an attribute name");
         std::string attr = a.pos[0].str();
         return Value(filter_items(v, a, 1, false, &attr));
       }},
      {"replace",
       [](const Value& v, const CallArgs& a) {
         if (a.pos.size() < 2) fail("replace needs old and new strings");
         const Value* c = a.get(2, "count");
         return Value(replace_all(v.str(), a.pos[0].str(), a.pos[1].str(), c && !c->is_none() ? need_int(*c, "replace count") : -1));
       }},
      {"int",
       [](const Value& v, const CallArgs& a) {
         const Value* d = a.get(0, "default");
         Value def = d ? *d : Value(int64_t{0});
         if (v.is_int() || v.is_bool()) return Value(v.as_int());
         if (v.is_float()) return Value(static_cast<int64_t>(v.as_number()));
         if (v.is_string()) {
           std::string s = strip(v.as_string(), nullptr, true, true);
           try {
             size_t used = 0;
             int64_t i = std::stoll(s, &used);
             if (used == s.size()) return Value(i);
             double f = std::stod(s, &used);
             if (used == s.size()) return Value(static_cast<int64_t>(f));
           } catch (const std::exception&) {
           }
         }
         return def;
       }},
      {"float",
       [](const Value& v, const CallArgs& a) {
         const Value* d = a.get(0, "default");
         Value def = d ? *d : Value(0.0);
         if (v.is_number()) return Value(v.as_number());
         if (v.is_string()) {
           std::string s = strip(v.as_string(), nullptr, true, true);
           try {
             size_t used = 0;
             double f = std::stod(s, &used);
             if (used == s.size()) return Value(f);
           } catch (const std::exception&) {
           }
         }
         return def;
       }},
      {"abs",
       [](const Value& v, const CallArgs&) {
         if (v.is_float()) return Value(std::fabs(v.as_number()));
         if (v.is_int() || v.is_bool()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
         fail(fmt::format("abs needs a number, not {}", v.type_name()));
       }},
      {"round",
       [](const Value& v, const CallArgs& a) {
         const Value* p = a.get(0, "precision");
         const Value* m = a.get(1, "method");
         int64_t prec = p ? need_int(*p, "round precision") : 0;
         std::string method = m ? m->str() : "common";
         if (!v.is_number()) fail(fmt::format("round needs a number, not {}", v.type_name()));
         double x = v.as_number(), f = std::pow(10.0, static_cast<double>(prec));
         double r = method == "common" ? py_round(x, prec)
                    : method == "ceil" ? std::ceil(x * f) / f
                    : method == "floor" ? std::floor(x * f) / f
                                        : (fail("round method must be common, ceil or floor"), 0.0);
         if (v.is_float() || method != "common") return Value(r);
         return Value(static_cast<int64_t>(r));
       }},
      {"indent",
       [](const Value& v, const CallArgs& a) {
         const Value* w = a.get(0, "width");
         std::string ind = !w ? "    " : w->is_string() ? w->as_string() : std::string(static_cast<size_t>(need_int(*w, "indent width")), ' ');
         bool first = bool_arg(a, 1, "first", false), blank = bool_arg(a, 2, "blank", false);
         std::string s = v.str() + "\n";
         std::vector<std::string> lines;
         size_t b = 0;
         for (size_t i = 0; i < s.size(); ++i)
           if (s[i] == '\n' || s[i] == '\r') {
             lines.push_back(s.substr(b, i - b));
             if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
             b = i + 1;
           }
         std::string r;
         for (size_t i = 0; i < lines.size(); ++i) {
           if (i) {
             r += '\n';
             if (blank || !lines[i].empty()) r += ind;
           }
           r += lines[i];
         }
         if (first) r = ind + r;
         return Value(std::move(r));
       }},
      {"safe", [](const Value& v, const CallArgs&) { return v; }},
      {"e", [](const Value& v, const CallArgs&) { return Value(html_escape(v.str())); }},
      {"escape", [](const Value& v, const CallArgs&) { return Value(html_escape(v.str())); }},
      {"unique",
       [](const Value& v, const CallArgs& a) {
         bool cs = bool_arg(a, 0, "case_sensitive", false);
         const Value* attr = a.get(1, "attribute");
         List out, keys;
         for (const auto& it : iterate(v)) {
           Value k = attr ? attr_path(it, attr->str()) : it;
           if (!cs && k.is_string()) k = Value(lower(k.as_string()));
           bool seen = false;
           for (const auto& s : keys) seen = seen || s.equals(k);
           if (!seen) {
             keys.push_back(k);
             out.push_back(it);
           }
         }
         return Value(std::move(out));
       }},
      {"sort",
       [](const Value& v, const CallArgs& a) {
         bool rev = bool_arg(a, 0, "reverse", false), cs = bool_arg(a, 1, "case_sensitive", false);
         const Value* attr = a.get(2, "attribute");
         List l = iterate(v);
         std::stable_sort(l.begin(), l.end(), [&](const Value& x, const Value& y) {
           Value kx = attr ? attr_path(x, attr->str()) : x, ky = attr ? attr_path(y, attr->str()) : y;
           int c = compare_values(kx, ky, cs);
           return rev ? c > 0 : c < 0;
         });
         return Value(std::move(l));
       }},
      {"dictsort",
       [](const Value& v, const CallArgs& a) {
         if (!v.is_dict()) fail(fmt::format("dictsort needs a mapping, not {}", v.type_name()));
         bool cs = bool_arg(a, 0, "case_sensitive", false);
         const Value* by = a.get(1, "by");
         bool rev = bool_arg(a, 2, "reverse", false);
         bool by_value = by && by->str() == "value";
         if (by && !by_value && by->str() != "key") fail("dictsort by must be 'key' or 'value'");
         List l = dict_method(v, "items").fn()(CallArgs{}).list();
         std::stable_sort(l.begin(), l.end(), [&](const Value& x, const Value& y) {
           int c = compare_values(x.list()[by_value ? 1 : 0], y.list()[by_value ? 1 : 0], cs);
           return rev ? c > 0 : c < 0;
         });
         return Value(std::move(l));
       }},
      {"reverse",
       [](const Value& v, const CallArgs&) {
         if (v.is_string()) {
           List chars = split_chars(v.as_string());
           std::string r;
           for (auto it = chars.rbegin(); it != chars.rend(); ++it) r += it->as_string();
           return Value(std::move(r));
         }
         List l = iterate(v);
         std::reverse(l.begin(), l.end());
         return Value(std::move(l));
       }},
      {"sum",
       [](const Value& v, const CallArgs& a) {
         const Value* attr = a.get(0, "attribute");
         const Value* start = a.get(1, "start");
         Value acc = start ? *start : Value(int64_t{0});
         for (const auto& it : iterate(v)) acc = arithmetic("+", acc, attr ? attr_path(it, attr->str()) : it);
         return acc;
       }},
      {"min",
       [](const Value& v, const CallArgs&) {
         List l = iterate(v);
         if (l.empty()) return Value::undefined("min of an empty sequence");
         Value m = l[0];
         for (const auto& x : l)
           if (compare_values(x, m, false) < 0) m = x;
         return m;
       }},
      {"max",
       [](const Value& v, const CallArgs&) {
         List l = iterate(v);
         if (l.empty()) return Value::undefined("max of an empty sequence");
         Value m = l[0];
         for (const auto& x : l)
           if (compare_values(x, m, false) > 0) m = x;
         return m;
       }},
  };
  return table;
}

using TestFn = bool (*)(const Value&, const CallArgs&);

const Value& test_arg(const CallArgs& a, const char* test) {
  if (a.pos.empty()) fail(fmt::format("test '{}' needs an argument", test));
  return a.pos[0];
}

const std::map<std::string, TestFn>& tests() {
  static const std::map<std::string, TestFn> table = {
      {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
      {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
      {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
      {"integer", [](const Value& v, const CallArgs&) { return v.is_int(); }},
      {"float", [](const Value& v, const CallArgs&) { return v.is_float(); }},
      {"boolean", [](const Value& v, const CallArgs&) { return v.is_bool(); }},
      {"true", [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
      {"mapping", [](const Value& v, const CallArgs&) { return v.is_dict(); }},
      // jinja2's Undefined has __iter__, __len__ and __getitem__: it passes both.
      {"iterable",
       [](const Value& v, const CallArgs&) { return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined(); }},
      {"sequence",
       [](const Value& v, const CallArgs&) { return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined(); }},
      {"callable", [](const Value& v, const CallArgs&) { return v.is_callable(); }},
      {"odd", [](const Value& v, const CallArgs&) { return (need_int(v, "odd") % 2 + 2) % 2 == 1; }},
      {"even", [](const Value& v, const CallArgs&) { return need_int(v, "even") % 2 == 0; }},
      {"divisibleby",
       [](const Value& v, const CallArgs& a) {
         int64_t d = need_int(test_arg(a, "divisibleby"), "divisibleby");
         if (d == 0) fail("divisibleby 0");
         return need_int(v, "divisibleby") % d == 0;
       }},
      {"eq", [](const Value& v, const CallArgs& a) { return v.equals(test_arg(a, "eq")); }},
      {"equalto", [](const Value& v, const CallArgs& a) { return v.equals(test_arg(a, "equalto")); }},
      {"==", [](const Value& v, const CallArgs& a) { return v.equals(test_arg(a, "==")); }},
      {"ne", [](const Value& v, const CallArgs& a) { return !v.equals(test_arg(a, "ne")); }},
      {"!=", [](const Value& v, const CallArgs& a) { return !v.equals(test_arg(a, "!=")); }},
      {"lt", [](const Value& v, const CallArgs& a) { return less_than(v, test_arg(a, "lt")); }},
      {"lessthan", [](const Value& v, const CallArgs& a) { return less_than(v, test_arg(a, "lessthan")); }},
      {"le", [](const Value& v, const CallArgs& a) { return !less_than(test_arg(a, "le"), v); }},
      {"gt", [](const Value& v, const CallArgs& a) { return less_than(test_arg(a, "gt"), v); }},
      {"greaterthan", [](const Value& v, const CallArgs& a) { return less_than(test_arg(a, "greaterthan"), v); }},
      {"ge", [](const Value& v, const CallArgs& a) { return !less_than(v, test_arg(a, "ge")); }},
      {"in", [](const Value& v, const CallArgs& a) { return contains(test_arg(a, "in"), v); }},
      {"sameas",
       [](const Value& v, const CallArgs& a) {
         const Value& o = test_arg(a, "sameas");
         if (v.kind() != o.kind()) return false;
         if (v.is_list()) return &v.list() == &o.list();
         if (v.is_dict()) return &v.dict() == &o.dict();
         return v.equals(o);
       }},
      {"lower", [](const Value& v, const CallArgs&) { return v.is_string() && lower(v.as_string()) == v.as_string(); }},
      {"upper", [](const Value& v, const CallArgs&) { return v.is_string() && upper(v.as_string()) == v.as_string(); }},
  };
  return table;
}

// Python slice bounds for a sequence of length n.
std::vector<size_t> slice_indices(int64_t n, const Value& start, const Value& stop, const Value& step) {
  auto given = [](const Value& v) { return !v.is_none() && !v.is_undefined(); };
  int64_t st = given(step) ? need_int(step, "slice step") : 1;
  if (st == 0) fail("slice step cannot be zero");
  auto adjust = [&](const Value& v, int64_t def) {
    if (!given(v)) return def;
    int64_t i = need_int(v, "slice index");
    if (i < 0) {
      i += n;
      if (i < 0) i = st < 0 ? -1 : 0;
    } else if (i >= n) {
      i = st < 0 ? n - 1 : n;
    }
    return i;
  };
  int64_t b = adjust(start, st < 0 ? n - 1 : 0);
  int64_t e = adjust(stop, st < 0 ? -1 : n);
  std::vector<size_t> idx;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) idx.push_back(static_cast<size_t>(i));
  return idx;
}

}  // namespace

void fail_undefined(const Value& v) {
  fail(v.undefined_name().empty() ? std::string("value is undefined")
                                  : fmt::format("'{}' is undefined", v.undefined_name()));
}

bool has_filter(const std::string& name) { return filters().count(name) > 0; }
bool has_test(const std::string& name) { return tests().count(name) > 0; }

Value apply_filter(const std::string& name, const Value& input, const CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) fail(fmt::format("unknown filter '{}'", name));
  try {
    return it->second(input, args);
  } catch (const Error& e) {
    throw Error(fmt::format("filter '{}': {}", name, e.what()));
  }
}

bool apply_test(const std::string& name, const Value& v, const CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) fail(fmt::format("unknown test '{}'", name));
  return it->second(v, args);
}

Value get_attr(const Value& obj, const std::string& name, const std::string& what) {
  if (obj.is_undefined()) fail_undefined(obj);
  Value m;
  if (obj.is_string()) m = string_method(obj.as_string(), name);
  else if (obj.is_dict() && !obj.is_namespace()) m = dict_method(obj, name);
  else if (obj.is_list()) m = list_method(obj, name);
  if (!m.is_undefined()) return m;
  if (obj.is_dict())
    if (const Value* v = obj.dict().find(name)) return *v;
  return Value::undefined(what);
}

Value get_item(const Value& obj, const Value& key, const std::string& what) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) {
    if (key.is_string()) {
      if (const Value* v = obj.dict().find(key.as_string())) return *v;
      if (!obj.is_namespace()) {
        Value m = dict_method(obj, key.as_string());
        if (!m.is_undefined()) return m;
      }
    }
    return Value::undefined(what);
  }
  if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (obj.is_list()) {
      int64_t n = static_cast<int64_t>(obj.list().size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined(what);
      return obj.list()[static_cast<size_t>(i)];
    }
    List chars = split_chars(obj.as_string());
    int64_t n = static_cast<int64_t>(chars.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::undefined(what);
    return chars[static_cast<size_t>(i)];
  }
  if (key.is_string()) return get_attr(obj, key.as_string(), what);
  return Value::undefined(what);
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_string()) {
    List chars = split_chars(obj.as_string());
    std::string r;
    for (size_t i : slice_indices(static_cast<int64_t>(chars.size()), start, stop, step)) r += chars[i].as_string();
    return Value(std::move(r));
  }
  if (obj.is_list()) {
    List r;
    for (size_t i : slice_indices(static_cast<int64_t>(obj.list().size()), start, stop, step))
      r.push_back(obj.list()[i]);
    return Value(std::move(r));
  }
  fail(fmt::format("a {} value cannot be sliced", obj.type_name()));
}

List iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: return v.list();
    case Value::Kind::String: return split_chars(v.as_string());
    case Value::Kind::Dict: {
      List l;
      for (const auto& kv : v.dict().items) l.push_back(Value(kv.first));
      return l;
    }
    default: fail(fmt::format("a {} value is not iterable", v.type_name()));
  }
}

bool contains(const Value& c, const Value& item) {
  switch (c.kind()) {
    case Value::Kind::Undefined: return false;
    case Value::Kind::String:
      if (item.is_undefined()) fail_undefined(item);
      if (!item.is_string())
        fail(fmt::format("'in <string>' requires a string on the left, not {}", item.type_name()));
      return c.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::List:
      for (const auto& x : c.list())
        if (x.equals(item)) return true;
      return false;
    case Value::Kind::Dict: return item.is_string() && c.dict().find(item.as_string()) != nullptr;
    default: fail(fmt::format("'in' needs a string, list or mapping on the right, not {}", c.type_name()));
  }
}

bool less_than(const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) return a.as_int() < b.as_int();
    return a.as_number() < b.as_number();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list()) {
    const auto &x = a.list(), &y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (less_than(x[i], y[i])) return true;
      if (less_than(y[i], x[i])) return false;
    }
    return x.size() < y.size();
  }
  fail(fmt::format("'<' is not supported between {} and {}", a.type_name(), b.type_name()));
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    const bool ints = !a.is_float() && !b.is_float();
    const int64_t x = a.as_int(), y = b.as_int();
    const double fx = a.as_number(), fy = b.as_number();
    if (op == "+") return ints ? Value(x + y) : Value(fx + fy);
    if (op == "-") return ints ? Value(x - y) : Value(fx - fy);
    if (op == "*") return ints ? Value(x * y) : Value(fx * fy);
    if ((op == "/" || op == "//" || op == "%") && (ints ? y == 0 : fy == 0)) fail("division by zero");
    if (op == "/") return Value(fx / fy);
    if (op == "//") {
      if (ints) {
        int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
        return Value(q);
      }
      return Value(std::floor(fx / fy));
    }
    if (op == "%") {
      if (ints) {
        int64_t r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return Value(r);
      }
      double r = std::fmod(fx, fy);
      if (r != 0 && ((r < 0) != (fy < 0))) r += fy;
      return Value(r);
    }
    if (op == "**") {
      if (ints && y >= 0) {
        int64_t r = 1;
        for (int64_t i = 0; i < y; ++i) r *= x;
        return Value(r);
      }
      return Value(std::pow(fx, fy));
    }
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (a.is_list() && b.is_list()) {
      List l = a.list();
      l.insert(l.end(), b.list().begin(), b.list().end());
      return Value(std::move(l));
    }
  }
  if (op == "*" && (a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) {
    if (a.is_string()) {
      std::string r;
      for (int64_t i = 0; i < b.as_int(); ++i) r += a.as_string();
      return Value(std::move(r));
    }
    List l;
    for (int64_t i = 0; i < b.as_int(); ++i) l.insert(l.end(), a.list().begin(), a.list().end());
    return Value(std::move(l));
  }
  if (op == "*" && (b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return arithmetic(op, b, a);
  fail(fmt::format("unsupported operand types for {}: {} and {}", op, a.type_name(), b.type_name()));
}

}  // namespace grt::jinja
