// Jinja parser: tokens to a syntax tree, with jinja2's operator precedence (filters and tests bind
// tighter than arithmetic: `messages|length - 1` is `(messages|length) - 1`).
#pragma once
#include <string>

#include "text/jinja_ast.h"

namespace grt::jinja {

// Error "<origin> line L, column C: syntax error: ..." naming what was expected.
Body parse(const std::string& source, const std::string& origin);

}  // namespace grt::jinja
