#include "text/jinja_lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "text/utf8.h"

namespace grt::jinja {

std::string location(const std::string& origin, int line, int col) {
  return fmt::format("{} line {}, column {}", origin, line, col);
}

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

class Lexer {
 public:
  Lexer(const std::string& src, const std::string& origin) : src_(normalize_newlines(src)), origin_(origin) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src.size(); ++i)
      if (src[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::vector<Token> run() {
    size_t pos = 0;
    while (pos < src_.size()) {
      size_t p = find_tag(pos);
      std::string text = src_.substr(pos, p - pos);
      if (p == src_.size()) {
        emit_text(std::move(text), pos);
        break;
      }
      const char kind = src_[p + 1];  // '{', '%' or '#'
      const char mod = p + 2 < src_.size() ? src_[p + 2] : '\0';
      if (mod == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (kind != '{' && mod != '+') {
        // lstrip_blocks: only spaces/tabs between a line start and the tag go.
        const size_t l = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        const bool line_start = l > 0 || pos == 0 || src_[pos - 1] == '\n';
        if (line_start && std::all_of(text.begin() + static_cast<long>(l), text.end(),
                                      [](char c) { return is_space(c) && c != '\n'; }))
          text.resize(l);
      }
      emit_text(std::move(text), pos);
      size_t body = p + 2 + ((mod == '-' || mod == '+') ? 1 : 0);
      if (kind == '#') {
        pos = lex_comment(p, body);
      } else {
        pos = lex_tag(p, body, kind == '%');
      }
    }
    Token end{TokKind::End, "", 0, 0, 0, 0};
    set_pos(end, src_.size());
    toks_.push_back(end);
    return std::move(toks_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i)
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return src_.size();
  }

  void set_pos(Token& t, size_t off) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), off);
    t.line = static_cast<int>(it - line_starts_.begin());
    t.col = static_cast<int>(off - *(it - 1)) + 1;
  }

  [[noreturn]] void fail(size_t off, const std::string& msg) const {
    Token t;
    set_pos(t, off);
    throw Error(fmt::format("{}: syntax error: {}", location(origin_, t.line, t.col), msg));
  }

  void emit_text(std::string text, size_t off) {
    if (text.empty()) return;
    Token t{TokKind::Text, std::move(text)};
    set_pos(t, off);
    toks_.push_back(std::move(t));
  }

  void emit(TokKind k, std::string text, size_t off) {
    Token t{k, std::move(text)};
    set_pos(t, off);
    toks_.push_back(std::move(t));
  }

  // After a tag ending at `end` (one past its delimiter): `-` strips all following whitespace,
  // otherwise trim_blocks (blocks and comments only) drops one newline.
  size_t after_tag(size_t end, char mod, bool trim_block) const {
    if (mod == '-') {
      while (end < src_.size() && is_space(src_[end])) ++end;
    } else if (mod != '+' && trim_block && end < src_.size() && src_[end] == '\n') {
      ++end;
    }
    return end;
  }

  size_t lex_comment(size_t open, size_t body) {
    size_t close = src_.find("#}", body);
    if (close == std::string::npos) fail(open, "comment is never closed with '#}'");
    char mod = close > body && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : '\0';
    return after_tag(close + 2, mod, true);
  }

  size_t lex_tag(size_t open, size_t i, bool block) {
    emit(block ? TokKind::BlockBegin : TokKind::VarBegin, "", open);
    int depth = 0;  // brackets: `}}` inside a dict literal does not end the tag
    const char closer = block ? '%' : '}';
    while (true) {
      while (i < src_.size() && is_space(src_[i])) ++i;
      if (i >= src_.size())
        fail(open, block ? "block tag is never closed with '%}'" : "expression is never closed with '}}'");
      const char c = src_[i];
      for (char mod : {'-', '+', '\0'}) {
        size_t j = i + (mod ? 1 : 0);
        if (mod && src_[i] != mod) continue;
        if (j + 1 < src_.size() && src_[j] == closer && src_[j + 1] == '}' && (block || depth == 0)) {
          emit(block ? TokKind::BlockEnd : TokKind::VarEnd, "", i);
          return after_tag(j + 2, mod, block);
        }
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t j = i;
        while (j < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[j])) || src_[j] == '_')) ++j;
        emit(TokKind::Name, src_.substr(i, j - i), i);
        i = j;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        i = lex_number(i);
      } else if (c == '\'' || c == '"') {
        i = lex_string(i);
      } else {
        static const char* ops2[] = {"//", "**", "==", "!=", "<=", ">="};
        std::string op;
        for (const char* o : ops2)
          if (src_.compare(i, 2, o) == 0) op = o;
        if (op.empty()) {
          if (std::string("+-*/%~<>=()[]{}.,:|").find(c) == std::string::npos)
            fail(i, fmt::format("unexpected character '{}'", c));
          op = std::string(1, c);
          if (c == '(' || c == '[' || c == '{') ++depth;
          if (c == ')' || c == ']' || c == '}') --depth;
        }
        emit(TokKind::Op, op, i);
        i += op.size();
      }
    }
  }

  size_t lex_number(size_t i) {
    size_t j = i;
    auto digits = [&] {
      while (j < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[j])) || src_[j] == '_')) ++j;
    };
    digits();
    bool is_float = false;
    if (j + 1 < src_.size() && src_[j] == '.' && std::isdigit(static_cast<unsigned char>(src_[j + 1]))) {
      is_float = true;
      ++j;
      digits();
    }
    if (j < src_.size() && (src_[j] == 'e' || src_[j] == 'E')) {
      size_t k = j + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
        is_float = true;
        j = k;
        digits();
      }
    }
    std::string text = src_.substr(i, j - i);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    Token t{is_float ? TokKind::Float : TokKind::Int, text};
    set_pos(t, i);
    try {
      if (is_float) t.float_value = std::stod(text);
      else t.int_value = std::stoll(text);
    } catch (const std::exception&) {
      fail(i, fmt::format("number '{}' is out of range", text));
    }
    toks_.push_back(std::move(t));
    return j;
  }

  size_t lex_string(size_t i) {
    const char q = src_[i];
    std::string out;
    size_t j = i + 1;
    while (true) {
      if (j >= src_.size()) fail(i, "string literal is never closed");
      char c = src_[j];
      if (c == q) break;
      if (c != '\\') {
        out += c;
        ++j;
        continue;
      }
      if (j + 1 >= src_.size()) fail(i, "string literal is never closed");
      char e = src_[j + 1];
      j += 2;
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'v': out += '\v'; break;
        case '0': out += '\0'; break;
        case '\n': break;  // line continuation
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (j + n > src_.size()) fail(j - 2, "truncated escape in string literal");
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            char h = src_[j + k];
            if (!std::isxdigit(static_cast<unsigned char>(h))) fail(j - 2, "bad hex escape in string literal");
            cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                                                                                                : (std::tolower(h) - 'a' + 10));
          }
          text::append_utf8(out, cp);
          j += n;
          break;
        }
        default:  // Python keeps unknown escapes as written
          out += '\\';
          out += e;
      }
    }
    Token t{TokKind::String, std::move(out)};
    set_pos(t, i);
    toks_.push_back(std::move(t));
    return j + 1;
  }

  // As jinja2: "\r\n" and "\r" in the template become "\n", and one newline at the very end is
  // dropped (keep_trailing_newline=False).
  static std::string normalize_newlines(const std::string& s) {
    std::string r;
    r.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\r') {
        r += '\n';
        if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
      } else {
        r += s[i];
      }
    }
    if (!r.empty() && r.back() == '\n') r.pop_back();
    return r;
  }

  const std::string src_;
  const std::string& origin_;
  std::vector<size_t> line_starts_;
  std::vector<Token> toks_;
};

}  // namespace

std::vector<Token> lex(const std::string& source, const std::string& origin) {
  return Lexer(source, origin).run();
}

}  // namespace grt::jinja
