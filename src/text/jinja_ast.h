// The syntax tree of a parsed Jinja template. Every node keeps its template line and column so
// that render errors can name where they happened.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "text/jinja_value.h"

namespace grt::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
using KwArgs = std::vector<std::pair<std::string, ExprPtr>>;

struct Expr {
  enum class Kind {
    Literal,  // value
    Name,     // name
    List,     // args: items
    Tuple,    // args: items (a list value at run time)
    DictLit,  // args: key0, value0, key1, value1, ...
    Attr,     // args[0].name
    Item,     // args[0][args[1]]
    Slice,    // args[0][args[1]:args[2]:args[3]] (null parts allowed)
    Call,     // args[0](args[1..], kwargs)
    Filter,   // args[0] | name(args[1..], kwargs)
    Test,     // args[0] is [not if negated] name(args[1..], kwargs)
    Unary,    // name: "not", "-", "+"; args[0]
    Binary,   // name: operator ("or", "and", "==", "in", "notin", "+", "~", ...); args[0], args[1]
    Cond,     // args[0] if args[1] else args[2] (args[2] may be null)
  };
  Kind kind;
  int line = 0;
  int col = 0;
  std::string name;
  Value value;
  bool negated = false;
  std::vector<ExprPtr> args;
  KwArgs kwargs;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    Text,         // text
    Output,       // {{ expr }}
    If,           // branches (cond, body) ...; else_body
    For,          // for targets in expr [if cond]: body; else_body
    Set,          // set targets = expr, or set targets[0].attr = expr (attr non-empty)
    SetBlock,     // set targets[0] %} body {% endset
    Macro,        // macro name(params) body
    CallBlock,    // call expr (a Call) with `caller` rendering body
    FilterBlock,  // filter expr (a Filter whose args[0] is null) body
    Generation,   // generation block: renders body (transformers tracks assistant masks with it)
    Break,
    Continue,
  };
  Kind kind;
  int line = 0;
  int col = 0;
  std::string text;
  std::string attr;
  ExprPtr expr;
  ExprPtr cond;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::string> targets;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters, default or null
};

}  // namespace grt::jinja
