// Jinja lexer: splits a template into text and tag tokens, applying whitespace control as
// transformers compiles chat templates: `-` on a tag strips whitespace on that side,
// trim_blocks drops the first newline after a block or comment tag, lstrip_blocks drops spaces and
// tabs between the start of a line and a block or comment tag (`{%+` keeps them). Comments vanish.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace grt::jinja {

enum class TokKind { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, Int, Float, String, Op, End };

struct Token {
  TokKind kind;
  std::string text;  // text, name, string value (escapes resolved) or operator
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
  int col = 1;
};

// Error "<origin>: syntax error at line L, column C: ..." on unclosed tags, bad characters, etc.
std::vector<Token> lex(const std::string& source, const std::string& origin);

// "<origin> line L, column C" — the location prefix used by every template error.
std::string location(const std::string& origin, int line, int col);

}  // namespace grt::jinja
