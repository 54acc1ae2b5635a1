#include "text/jinja_parser.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "core/error.h"
#include "text/jinja_lexer.h"

namespace grt::jinja {

namespace {

class Parser {
 public:
  Parser(std::vector<Token> toks, const std::string& origin) : toks_(std::move(toks)), origin_(origin) {}

  Body parse_template() {
    std::string end;
    Body b = parse_body({}, end);
    return b;
  }

 private:
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }

  [[noreturn]] void fail(const Token& t, const std::string& msg) const {
    throw Error(fmt::format("{}: syntax error: {}", location(origin_, t.line, t.col), msg));
  }

  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokKind::Text: return "template text";
      case TokKind::VarBegin: return "'{{'";
      case TokKind::VarEnd: return "'}}'";
      case TokKind::BlockBegin: return "'{%'";
      case TokKind::BlockEnd: return "'%}'";
      case TokKind::Name: return "'" + t.text + "'";
      case TokKind::Int:
      case TokKind::Float: return "number " + t.text;
      case TokKind::String: return "a string";
      case TokKind::Op: return "'" + t.text + "'";
      case TokKind::End: return "end of template";
    }
    return "?";
  }

  bool is_op(const char* op) const { return cur().kind == TokKind::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().kind == TokKind::Name && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    advance();
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(cur(), fmt::format("expected '{}', found {}", op, describe(cur())));
  }
  void expect_name(const char* n) {
    if (!skip_name(n)) fail(cur(), fmt::format("expected '{}', found {}", n, describe(cur())));
  }
  std::string expect_identifier(const char* what) {
    if (cur().kind != TokKind::Name) fail(cur(), fmt::format("expected {}, found {}", what, describe(cur())));
    std::string n = cur().text;
    advance();
    return n;
  }
  void expect_block_end(const char* tag) {
    if (cur().kind != TokKind::BlockEnd)
      fail(cur(), fmt::format("expected '%}}' to end the '{}' tag, found {}", tag, describe(cur())));
    advance();
  }

  template <class T>
  static std::unique_ptr<T> at(const Token& t, typename T::Kind k) {
    auto n = std::make_unique<T>();
    n->kind = k;
    n->line = t.line;
    n->col = t.col;
    return n;
  }

  // Statements up to a block tag whose name is in `ends` (left as the current token, after '{%').
  Body parse_body(const std::set<std::string>& ends, std::string& found_end) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.kind == TokKind::End) {
        if (!ends.empty())
          fail(t, fmt::format("unexpected end of template, expected one of '{}'", fmt::join(ends, "', '")));
        return body;
      }
      if (t.kind == TokKind::Text) {
        auto s = at<Stmt>(t, Stmt::Kind::Text);
        s->text = t.text;
        body.push_back(std::move(s));
        advance();
      } else if (t.kind == TokKind::VarBegin) {
        auto s = at<Stmt>(t, Stmt::Kind::Output);
        advance();
        s->expr = parse_expression();
        if (cur().kind != TokKind::VarEnd) fail(cur(), fmt::format("expected '}}}}', found {}", describe(cur())));
        advance();
        body.push_back(std::move(s));
      } else if (t.kind == TokKind::BlockBegin) {
        const Token& name = peek();
        if (name.kind != TokKind::Name) fail(name, fmt::format("expected a tag name, found {}", describe(name)));
        if (ends.count(name.text)) {
          advance();
          found_end = name.text;
          return body;
        }
        advance();
        body.push_back(parse_statement(ends));
      } else {
        fail(t, fmt::format("unexpected {}", describe(t)));
      }
    }
  }

  // Consumes the end tag named `end` (current token is its name).
  void finish_end(const char* end) {
    advance();
    expect_block_end(end);
  }

  StmtPtr parse_statement(const std::set<std::string>& outer_ends) {
    const Token& t = cur();
    const std::string kw = t.text;
    std::string found;
    if (kw == "if") {
      auto s = at<Stmt>(t, Stmt::Kind::If);
      advance();
      ExprPtr cond = parse_expression();
      expect_block_end("if");
      while (true) {
        Body b = parse_body({"elif", "else", "endif"}, found);
        s->branches.emplace_back(std::move(cond), std::move(b));
        if (found == "elif") {
          advance();
          cond = parse_expression();
          expect_block_end("elif");
          continue;
        }
        if (found == "else") {
          finish_end("else");
          s->else_body = parse_body({"endif"}, found);
        }
        finish_end("endif");
        return s;
      }
    }
    if (kw == "for") {
      auto s = at<Stmt>(t, Stmt::Kind::For);
      advance();
      s->targets.push_back(expect_identifier("a loop variable name"));
      while (skip_op(",")) s->targets.push_back(expect_identifier("a loop variable name"));
      expect_name("in");
      s->expr = parse_or();
      if (skip_name("if")) s->cond = parse_expression();
      if (is_name("recursive")) fail(cur(), "recursive loops are not supported");
      expect_block_end("for");
      s->body = parse_body({"else", "endfor"}, found);
      if (found == "else") {
        finish_end("else");
        s->else_body = parse_body({"endfor"}, found);
      }
      finish_end("endfor");
      return s;
    }
    if (kw == "set") {
      advance();
      std::vector<std::string> targets{expect_identifier("a variable name after 'set'")};
      std::string attr;
      if (skip_op(".")) {
        attr = expect_identifier("an attribute name");
      } else {
        while (skip_op(",")) targets.push_back(expect_identifier("a variable name"));
      }
      if (cur().kind == TokKind::BlockEnd && attr.empty() && targets.size() == 1) {
        auto s = at<Stmt>(t, Stmt::Kind::SetBlock);
        s->targets = std::move(targets);
        advance();
        s->body = parse_body({"endset"}, found);
        finish_end("endset");
        return s;
      }
      auto s = at<Stmt>(t, Stmt::Kind::Set);
      s->targets = std::move(targets);
      s->attr = std::move(attr);
      expect_op("=");
      s->expr = parse_tuple_or_expression();
      expect_block_end("set");
      return s;
    }
    if (kw == "macro") {
      auto s = at<Stmt>(t, Stmt::Kind::Macro);
      advance();
      s->text = expect_identifier("a macro name");
      expect_op("(");
      while (!is_op(")")) {
        std::string p = expect_identifier("a parameter name");
        ExprPtr def;
        if (skip_op("=")) def = parse_expression();
        s->params.emplace_back(std::move(p), std::move(def));
        if (!skip_op(",")) break;
      }
      expect_op(")");
      expect_block_end("macro");
      s->body = parse_body({"endmacro"}, found);
      finish_end("endmacro");
      return s;
    }
    if (kw == "call") {
      auto s = at<Stmt>(t, Stmt::Kind::CallBlock);
      advance();
      if (is_op("(")) fail(cur(), "call blocks with caller arguments are not supported");
      s->expr = parse_expression();
      if (s->expr->kind != Expr::Kind::Call) fail(t, "'call' needs a macro call");
      expect_block_end("call");
      s->body = parse_body({"endcall"}, found);
      finish_end("endcall");
      return s;
    }
    if (kw == "filter") {
      auto s = at<Stmt>(t, Stmt::Kind::FilterBlock);
      advance();
      ExprPtr f;
      do {
        f = parse_filter(std::move(f));
      } while (skip_op("|"));
      s->expr = std::move(f);
      expect_block_end("filter");
      s->body = parse_body({"endfilter"}, found);
      finish_end("endfilter");
      return s;
    }
    if (kw == "generation") {
      auto s = at<Stmt>(t, Stmt::Kind::Generation);
      advance();
      expect_block_end("generation");
      s->body = parse_body({"endgeneration"}, found);
      finish_end("endgeneration");
      return s;
    }
    if (kw == "break" || kw == "continue") {
      auto s = at<Stmt>(t, kw == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue);
      advance();
      expect_block_end(kw.c_str());
      return s;
    }
    if (outer_ends.empty() || kw.rfind("end", 0) == 0 || kw == "elif" || kw == "else")
      fail(t, fmt::format("unexpected tag '{}'{}", kw,
                          outer_ends.empty() ? "" : fmt::format(" (expected '{}')", *outer_ends.begin())));
    fail(t, fmt::format("unknown tag '{}'", kw));
  }

  // `a, b` in a set statement makes a tuple.
  ExprPtr parse_tuple_or_expression() {
    const Token& t = cur();
    ExprPtr e = parse_expression();
    if (!is_op(",")) return e;
    auto tup = at<Expr>(t, Expr::Kind::Tuple);
    tup->args.push_back(std::move(e));
    while (skip_op(",")) {
      if (cur().kind == TokKind::BlockEnd) break;
      tup->args.push_back(parse_expression());
    }
    return tup;
  }

  ExprPtr parse_expression() {
    ExprPtr e = parse_or();
    while (is_name("if")) {
      const Token& t = cur();
      advance();
      auto c = at<Expr>(t, Expr::Kind::Cond);
      c->args.push_back(std::move(e));
      c->args.push_back(parse_or());
      c->args.push_back(skip_name("else") ? parse_expression() : nullptr);
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(const Token& t, std::string op, ExprPtr a, ExprPtr b) {
    auto e = at<Expr>(t, Expr::Kind::Binary);
    e->name = std::move(op);
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr e = parse_and();
    while (is_name("or")) {
      const Token& t = cur();
      advance();
      e = binary(t, "or", std::move(e), parse_and());
    }
    return e;
  }

  ExprPtr parse_and() {
    ExprPtr e = parse_not();
    while (is_name("and")) {
      const Token& t = cur();
      advance();
      e = binary(t, "and", std::move(e), parse_not());
    }
    return e;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      const Token& t = cur();
      advance();
      auto e = at<Expr>(t, Expr::Kind::Unary);
      e->name = "not";
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr e = parse_math1();
    while (true) {
      const Token& t = cur();
      std::string op;
      if (t.kind == TokKind::Op && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" ||
                                    t.text == ">" || t.text == ">=")) {
        op = t.text;
        advance();
      } else if (is_name("in")) {
        op = "in";
        advance();
      } else if (is_name("not") && peek().kind == TokKind::Name && peek().text == "in") {
        op = "notin";
        advance();
        advance();
      } else {
        return e;
      }
      e = binary(t, op, std::move(e), parse_math1());
    }
  }

  ExprPtr parse_math1() {
    ExprPtr e = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& t = cur();
      advance();
      e = binary(t, t.text, std::move(e), parse_concat());
    }
    return e;
  }

  ExprPtr parse_concat() {
    ExprPtr e = parse_math2();
    while (is_op("~")) {
      const Token& t = cur();
      advance();
      e = binary(t, "~", std::move(e), parse_math2());
    }
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = cur();
      advance();
      e = binary(t, t.text, std::move(e), parse_pow());
    }
    return e;
  }

  ExprPtr parse_pow() {
    ExprPtr e = parse_unary(true);
    while (is_op("**")) {
      const Token& t = cur();
      advance();
      e = binary(t, "**", std::move(e), parse_unary(true));
    }
    return e;
  }

  ExprPtr parse_unary(bool with_filter) {
    const Token& t = cur();
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      advance();
      e = at<Expr>(t, Expr::Kind::Unary);
      e->name = t.text;
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    switch (t.kind) {
      case TokKind::Name: {
        advance();
        auto e = at<Expr>(t, Expr::Kind::Literal);
        if (t.text == "true" || t.text == "True") e->value = Value(true);
        else if (t.text == "false" || t.text == "False") e->value = Value(false);
        else if (t.text == "none" || t.text == "None") e->value = Value::none();
        else {
          e->kind = Expr::Kind::Name;
          e->name = t.text;
        }
        return e;
      }
      case TokKind::String: {
        std::string s;
        while (cur().kind == TokKind::String) {
          s += cur().text;
          advance();
        }
        auto e = at<Expr>(t, Expr::Kind::Literal);
        e->value = Value(std::move(s));
        return e;
      }
      case TokKind::Int:
      case TokKind::Float: {
        advance();
        auto e = at<Expr>(t, Expr::Kind::Literal);
        e->value = t.kind == TokKind::Int ? Value(t.int_value) : Value(t.float_value);
        return e;
      }
      case TokKind::Op:
        if (t.text == "(") {
          advance();
          if (skip_op(")")) return at<Expr>(t, Expr::Kind::Tuple);
          ExprPtr first = parse_expression();
          if (skip_op(")")) return first;
          auto tup = at<Expr>(t, Expr::Kind::Tuple);
          tup->args.push_back(std::move(first));
          while (skip_op(",")) {
            if (is_op(")")) break;
            tup->args.push_back(parse_expression());
          }
          expect_op(")");
          return tup;
        }
        if (t.text == "[") {
          advance();
          auto l = at<Expr>(t, Expr::Kind::List);
          while (!is_op("]")) {
            l->args.push_back(parse_expression());
            if (!skip_op(",")) break;
          }
          expect_op("]");
          return l;
        }
        if (t.text == "{") {
          advance();
          auto d = at<Expr>(t, Expr::Kind::DictLit);
          while (!is_op("}")) {
            d->args.push_back(parse_expression());
            expect_op(":");
            d->args.push_back(parse_expression());
            if (!skip_op(",")) break;
          }
          expect_op("}");
          return d;
        }
        break;
      default: break;
    }
    fail(t, fmt::format("expected an expression, found {}", describe(t)));
  }

  void parse_call_args(Expr& call) {
    expect_op("(");
    while (!is_op(")")) {
      if (cur().kind == TokKind::Name && peek().kind == TokKind::Op && peek().text == "=") {
        std::string k = cur().text;
        advance();
        advance();
        call.kwargs.emplace_back(std::move(k), parse_expression());
      } else {
        if (!call.kwargs.empty()) fail(cur(), "positional argument after a keyword argument");
        call.args.push_back(parse_expression());
      }
      if (!skip_op(",")) break;
    }
    expect_op(")");
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      const Token& t = cur();
      if (is_op(".")) {
        advance();
        const Token& n = cur();
        if (n.kind == TokKind::Int) {  // `a.0` is a[0]
          advance();
          auto it = at<Expr>(t, Expr::Kind::Item);
          auto idx = at<Expr>(n, Expr::Kind::Literal);
          idx->value = Value(n.int_value);
          it->args.push_back(std::move(e));
          it->args.push_back(std::move(idx));
          e = std::move(it);
          continue;
        }
        auto a = at<Expr>(t, Expr::Kind::Attr);
        a->name = expect_identifier("an attribute name after '.'");
        a->args.push_back(std::move(e));
        e = std::move(a);
      } else if (is_op("[")) {
        advance();
        e = parse_subscript(t, std::move(e));
      } else if (is_op("(")) {
        auto c = at<Expr>(t, Expr::Kind::Call);
        c->args.push_back(std::move(e));
        parse_call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(const Token& t, ExprPtr obj) {
    ExprPtr parts[3];
    bool slice = false;
    for (int i = 0; i < 3; ++i) {
      if (!is_op(":") && !is_op("]")) parts[i] = parse_expression();
      if (i < 2 && skip_op(":")) {
        slice = true;
        continue;
      }
      break;
    }
    expect_op("]");
    if (!slice) {
      if (!parts[0]) fail(t, "empty subscript '[]'");
      auto it = at<Expr>(t, Expr::Kind::Item);
      it->args.push_back(std::move(obj));
      it->args.push_back(std::move(parts[0]));
      return it;
    }
    auto s = at<Expr>(t, Expr::Kind::Slice);
    s->args.push_back(std::move(obj));
    for (auto& p : parts) s->args.push_back(std::move(p));
    return s;
  }

  // One `name` or `name(args)` filter applied to `input` (null in a filter block).
  ExprPtr parse_filter(ExprPtr input) {
    const Token& t = cur();
    auto f = at<Expr>(t, Expr::Kind::Filter);
    f->name = expect_identifier("a filter name after '|'");
    while (is_op(".") && peek().kind == TokKind::Name) {
      advance();
      f->name += "." + cur().text;
      advance();
    }
    f->args.push_back(std::move(input));
    if (is_op("(")) parse_call_args(*f);
    return f;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (skip_op("|")) {
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        const Token& t = cur();
        advance();
        auto test = at<Expr>(t, Expr::Kind::Test);
        test->negated = skip_name("not");
        test->name = expect_identifier("a test name after 'is'");
        test->args.push_back(std::move(e));
        static const std::set<std::string> no_arg = {"else", "or", "and", "if", "in", "not", "is"};
        if (is_op("(")) {
          parse_call_args(*test);
        } else if ((cur().kind == TokKind::Name && !no_arg.count(cur().text)) || cur().kind == TokKind::String ||
                   cur().kind == TokKind::Int || cur().kind == TokKind::Float || is_op("[") || is_op("{")) {
          test->args.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(test);
      } else {
        return e;
      }
    }
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  const std::string& origin_;
};

}  // namespace

Body parse(const std::string& source, const std::string& origin) {
  return Parser(lex(source, origin), origin).parse_template();
}

}  // namespace grt::jinja
