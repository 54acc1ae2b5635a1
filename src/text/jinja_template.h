// A parsed Jinja template and its renderer.
#pragma once
#include <memory>
#include <string>

#include "text/jinja_ast.h"

namespace grt::jinja {

class Template {
 public:
  // Parses `source`; `origin` names it in errors ("chat_template.jinja"). Error on syntax errors,
  // naming line and column.
  Template(const std::string& source, std::string origin);
  // Renders with `vars` as the template's global variables (on top of jinja2's built-in globals
  // range, namespace, dict). Error "<origin> line L, column C: <what>" on render errors.
  std::string render(const Dict& vars) const;
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::shared_ptr<const Body> body_;
};

}  // namespace grt::jinja
