#include "text/jinja_template.h"

#include <fmt/format.h>

#include "core/error.h"
#include "text/jinja_builtins.h"
#include "text/jinja_lexer.h"
#include "text/jinja_parser.h"

namespace grt::jinja {

namespace {

// An error that already names its template location; outer nodes pass it on unchanged.
class LocatedError : public Error {
 public:
  using Error::Error;
};

struct Frame {
  Dict vars;
  Frame* parent = nullptr;
};

enum class Flow { Normal, Break, Continue };

class Renderer {
 public:
  Renderer(const std::string& origin, Frame* root) : origin_(origin), root_(root) {}

  Flow exec_body(const Body& body, Frame* f, std::string& out) {
    for (const auto& s : body) {
      Flow fl = exec(*s, f, out);
      if (fl != Flow::Normal) return fl;
    }
    return Flow::Normal;
  }

 private:
  template <class Node, class Fn>
  auto located(const Node& n, Fn&& fn) -> decltype(fn()) {
    try {
      return fn();
    } catch (const LocatedError&) {
      throw;
    } catch (const std::exception& e) {
      throw LocatedError(fmt::format("{}: {}", location(origin_, n.line, n.col), e.what()));
    }
  }

  static Value lookup(const std::string& name, Frame* f) {
    for (Frame* fr = f; fr; fr = fr->parent)
      if (const Value* v = fr->vars.find(name)) return *v;
    return Value::undefined(name);
  }

  Flow exec(const Stmt& s, Frame* f, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::Text: out += s.text; return Flow::Normal;
      case Stmt::Kind::Output: {
        Value v = eval(*s.expr, f);
        out += v.str();
        return Flow::Normal;
      }
      case Stmt::Kind::If:
        for (const auto& [cond, body] : s.branches)
          if (eval(*cond, f).truthy()) return exec_body(body, f, out);
        return exec_body(s.else_body, f, out);
      case Stmt::Kind::For: return exec_for(s, f, out);
      case Stmt::Kind::Set: {
        Value v = eval(*s.expr, f);
        located(s, [&] {
          if (!s.attr.empty()) {
            Value ns = lookup(s.targets[0], f);
            if (!ns.is_namespace())
              throw Error(fmt::format("cannot assign attribute '{}' of '{}': it is a {}, not a namespace()", s.attr,
                                      s.targets[0], ns.type_name()));
            ns.dict().set(s.attr, std::move(v));
          } else if (s.targets.size() == 1) {
            f->vars.set(s.targets[0], std::move(v));
          } else {
            unpack(s.targets, v, f);
          }
        });
        return Flow::Normal;
      }
      case Stmt::Kind::SetBlock: {
        std::string inner;
        exec_body(s.body, f, inner);
        f->vars.set(s.targets[0], Value(std::move(inner)));
        return Flow::Normal;
      }
      case Stmt::Kind::Macro: f->vars.set(s.text, make_macro(s, f)); return Flow::Normal;
      case Stmt::Kind::CallBlock: {
        const Expr& call = *s.expr;
        Value callee = eval(*call.args[0], f);
        CallArgs args = eval_args(call, 1, f);
        args.kw.emplace_back("caller", Value::function("caller", [this, &s, f](const CallArgs&) {
                               Frame inner{{}, f};
                               std::string o;
                               exec_body(s.body, &inner, o);
                               return Value(std::move(o));
                             }));
        out += located(s, [&] { return call_value(callee, args); }).str();
        return Flow::Normal;
      }
      case Stmt::Kind::FilterBlock: {
        std::string inner;
        exec_body(s.body, f, inner);
        Value v(std::move(inner));
        // The filter chain was parsed with a null innermost input; apply from the inside out.
        std::vector<const Expr*> chain;
        for (const Expr* e = s.expr.get(); e; e = e->args[0].get()) chain.push_back(e);
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
          CallArgs a = eval_args(**it, 1, f);
          v = located(**it, [&] { return apply_filter((*it)->name, v, a); });
        }
        out += v.str();
        return Flow::Normal;
      }
      case Stmt::Kind::Generation: return exec_body(s.body, f, out);
      case Stmt::Kind::Break: return Flow::Break;
      case Stmt::Kind::Continue: return Flow::Continue;
    }
    return Flow::Normal;
  }

  void unpack(const std::vector<std::string>& targets, const Value& v, Frame* f) {
    List items = iterate(v);
    if (items.size() != targets.size())
      throw Error(fmt::format("cannot unpack {} values into {} names", items.size(), targets.size()));
    for (size_t i = 0; i < targets.size(); ++i) f->vars.set(targets[i], items[i]);
  }

  Flow exec_for(const Stmt& s, Frame* f, std::string& out) {
    Value seq = eval(*s.expr, f);
    List items = located(*s.expr, [&] {
      if (seq.is_none() || seq.is_number() || seq.is_callable())
        throw Error(fmt::format("cannot loop over a {} value", seq.type_name()));
      return iterate(seq);
    });
    Frame frame{{}, f};
    if (s.cond) {
      List kept;
      for (auto& it : items) {
        bind_loop_var(s, it, &frame);
        if (eval(*s.cond, &frame).truthy()) kept.push_back(it);
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec_body(s.else_body, f, out);
    const int64_t n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      bind_loop_var(s, items[static_cast<size_t>(i)], &frame);
      Dict loop;
      loop.set("index0", Value(i));
      loop.set("index", Value(i + 1));
      loop.set("revindex0", Value(n - i - 1));
      loop.set("revindex", Value(n - i));
      loop.set("first", Value(i == 0));
      loop.set("last", Value(i == n - 1));
      loop.set("length", Value(n));
      loop.set("depth", Value(1));
      loop.set("depth0", Value(0));
      loop.set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("loop.previtem"));
      loop.set("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::undefined("loop.nextitem"));
      loop.set("cycle", Value::function("loop.cycle", [i](const CallArgs& a) {
                 if (a.pos.empty()) throw Error("loop.cycle() needs at least one argument");
                 return a.pos[static_cast<size_t>(i) % a.pos.size()];
               }));
      frame.vars.set("loop", Value(std::move(loop)));
      if (exec_body(s.body, &frame, out) == Flow::Break) break;
    }
    return Flow::Normal;
  }

  void bind_loop_var(const Stmt& s, const Value& item, Frame* frame) {
    if (s.targets.size() == 1) frame->vars.set(s.targets[0], item);
    else located(s, [&] { unpack(s.targets, item, frame); });
  }

  Value make_macro(const Stmt& s, Frame* def_frame) {
    (void)def_frame;
    return Value::function(s.text, [this, &s](const CallArgs& a) {
      Frame frame{{}, root_};
      if (a.pos.size() > s.params.size())
        throw Error(fmt::format("macro '{}' takes {} arguments, {} given", s.text, s.params.size(), a.pos.size()));
      for (size_t i = 0; i < s.params.size(); ++i) {
        const auto& [pname, def] = s.params[i];
        const Value* given = nullptr;
        for (const auto& [k, v] : a.kw)
          if (k == pname) given = &v;
        if (!given && i < a.pos.size()) given = &a.pos[i];
        frame.vars.set(pname, given ? *given : def ? eval(*def, &frame) : Value::undefined(pname));
      }
      for (const auto& [k, v] : a.kw) {
        bool known = k == "caller";
        for (const auto& p : s.params) known = known || p.first == k;
        if (!known) throw Error(fmt::format("macro '{}' has no argument '{}'", s.text, k));
        if (k == "caller") frame.vars.set("caller", v);
      }
      std::string o;
      exec_body(s.body, &frame, o);
      return Value(std::move(o));
    });
  }

  static Value call_value(const Value& callee, const CallArgs& args) {
    if (callee.is_undefined()) fail_undefined(callee);
    if (!callee.is_callable()) throw Error(fmt::format("a {} value is not callable", callee.type_name()));
    return callee.fn()(args);
  }

  CallArgs eval_args(const Expr& e, size_t first, Frame* f) {
    CallArgs a;
    for (size_t i = first; i < e.args.size(); ++i) a.pos.push_back(eval(*e.args[i], f));
    for (const auto& [k, v] : e.kwargs) a.kw.emplace_back(k, eval(*v, f));
    return a;
  }

  // A readable name of an expression for "'x.y' is undefined" messages.
  static std::string describe(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::Name: return e.name;
      case Expr::Kind::Attr: return describe(*e.args[0]) + "." + e.name;
      case Expr::Kind::Item: {
        const Expr& k = *e.args[1];
        return describe(*e.args[0]) + "[" + (k.kind == Expr::Kind::Literal ? k.value.repr() : "...") + "]";
      }
      case Expr::Kind::Call: return describe(*e.args[0]) + "()";
      default: return "value";
    }
  }

  Value eval(const Expr& e, Frame* f) {
    return located(e, [&]() -> Value {
      switch (e.kind) {
        case Expr::Kind::Literal: return e.value;
        case Expr::Kind::Name: return lookup(e.name, f);
        case Expr::Kind::List:
        case Expr::Kind::Tuple: {
          List l;
          for (const auto& a : e.args) l.push_back(eval(*a, f));
          return e.kind == Expr::Kind::Tuple ? Value::tuple(std::move(l)) : Value(std::move(l));
        }
        case Expr::Kind::DictLit: {
          Dict d;
          for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
            Value k = eval(*e.args[i], f);
            if (!k.is_string()) throw Error(fmt::format("dict keys must be strings, not {}", k.type_name()));
            d.set(k.as_string(), eval(*e.args[i + 1], f));
          }
          return Value(std::move(d));
        }
        case Expr::Kind::Attr: return get_attr(eval(*e.args[0], f), e.name, describe(e));
        case Expr::Kind::Item: {
          Value obj = eval(*e.args[0], f);
          return get_item(obj, eval(*e.args[1], f), describe(e));
        }
        case Expr::Kind::Slice: {
          Value obj = eval(*e.args[0], f);
          Value parts[3];
          for (int i = 0; i < 3; ++i) parts[i] = e.args[i + 1] ? eval(*e.args[i + 1], f) : Value::none();
          return get_slice(obj, parts[0], parts[1], parts[2]);
        }
        case Expr::Kind::Call: {
          Value callee = eval(*e.args[0], f);
          CallArgs a = eval_args(e, 1, f);
          return call_value(callee, a);
        }
        case Expr::Kind::Filter: {
          Value in = eval(*e.args[0], f);
          CallArgs a = eval_args(e, 1, f);
          return apply_filter(e.name, in, a);
        }
        case Expr::Kind::Test: {
          Value in = eval(*e.args[0], f);
          CallArgs a = eval_args(e, 1, f);
          return Value(apply_test(e.name, in, a) != e.negated);
        }
        case Expr::Kind::Unary: {
          Value v = eval(*e.args[0], f);
          if (e.name == "not") return Value(!v.truthy());
          if (v.is_undefined()) fail_undefined(v);
          if (!v.is_number()) throw Error(fmt::format("bad operand type for unary {}: {}", e.name, v.type_name()));
          if (e.name == "+") return v.is_bool() ? Value(v.as_int()) : v;
          return v.is_float() ? Value(-v.as_number()) : Value(-v.as_int());
        }
        case Expr::Kind::Binary: return eval_binary(e, f);
        case Expr::Kind::Cond: {
          if (eval(*e.args[1], f).truthy()) return eval(*e.args[0], f);
          return e.args[2] ? eval(*e.args[2], f) : Value::undefined("else branch");
        }
      }
      return Value();
    });
  }

  Value eval_binary(const Expr& e, Frame* f) {
    const std::string& op = e.name;
    Value a = eval(*e.args[0], f);
    if (op == "and") return a.truthy() ? eval(*e.args[1], f) : a;
    if (op == "or") return a.truthy() ? a : eval(*e.args[1], f);
    Value b = eval(*e.args[1], f);
    if (op == "~") return Value(a.str() + b.str());
    if (op == "==") return Value(a.equals(b));
    if (op == "!=") return Value(!a.equals(b));
    if (op == "in") return Value(contains(b, a));
    if (op == "notin") return Value(!contains(b, a));
    if (op == "<") return Value(less_than(a, b));
    if (op == ">") return Value(less_than(b, a));
    if (op == "<=") return Value(!less_than(b, a));
    if (op == ">=") return Value(!less_than(a, b));
    return arithmetic(op, a, b);
  }

  const std::string& origin_;
  Frame* root_;
};

Value builtin_range(const CallArgs& a) {
  int64_t start = 0, stop = 0, step = 1;
  auto num = [](const Value& v) {
    if (!v.is_int() && !v.is_bool()) throw Error(fmt::format("range() needs integers, not {}", v.type_name()));
    return v.as_int();
  };
  if (a.pos.size() == 1) stop = num(a.pos[0]);
  else if (a.pos.size() == 2 || a.pos.size() == 3) {
    start = num(a.pos[0]);
    stop = num(a.pos[1]);
    if (a.pos.size() == 3) step = num(a.pos[2]);
  } else {
    throw Error(fmt::format("range() takes 1 to 3 arguments, {} given", a.pos.size()));
  }
  if (step == 0) throw Error("range() step must not be zero");
  List l;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    l.push_back(Value(i));
    if (l.size() > 10'000'000) throw Error("range() is too long");
  }
  return Value(std::move(l));
}

Value builtin_dict(const CallArgs& a, bool as_namespace) {
  Dict d;
  for (const auto& p : a.pos) {
    if (!p.is_dict()) throw Error(fmt::format("{}() takes a dict as positional argument, not {}",
                                              as_namespace ? "namespace" : "dict", p.type_name()));
    for (const auto& [k, v] : p.dict().items) d.set(k, v);
  }
  for (const auto& [k, v] : a.kw) d.set(k, v);
  return as_namespace ? Value::make_namespace(std::move(d)) : Value(std::move(d));
}

}  // namespace

Template::Template(const std::string& source, std::string origin)
    : origin_(std::move(origin)), body_(std::make_shared<const Body>(parse(source, origin_))) {}

std::string Template::render(const Dict& vars) const {
  Frame globals;
  globals.vars.set("range", Value::function("range", builtin_range));
  globals.vars.set("namespace", Value::function("namespace", [](const CallArgs& a) { return builtin_dict(a, true); }));
  globals.vars.set("dict", Value::function("dict", [](const CallArgs& a) { return builtin_dict(a, false); }));
  Frame root{vars, &globals};
  Renderer r(origin_, &root);
  std::string out;
  try {
    r.exec_body(*body_, &root, out);
  } catch (const LocatedError& e) {
    throw Error(e.what());
  }
  return out;
}

}  // namespace grt::jinja
