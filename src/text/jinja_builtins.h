// Jinja's built-in filters and tests, and the Python methods of strings, dicts and lists that
// chat templates call (`content.split('</think>')`, `message.get('x')`), as jinja2 in transformers'
// ImmutableSandboxedEnvironment provides them (methods that mutate lists or dicts are refused, as
// the sandbox refuses them). Errors are plain messages; the evaluator adds the template location.
#pragma once
#include <string>

#include "text/jinja_value.h"

namespace grt::jinja {

bool has_filter(const std::string& name);
bool has_test(const std::string& name);
// `input | name(args)`. Error for an unknown filter or bad arguments.
Value apply_filter(const std::string& name, const Value& input, const CallArgs& args);
// `v is name(args)`. Error for an unknown test.
bool apply_test(const std::string& name, const Value& v, const CallArgs& args);

// `obj.name` as jinja2's getattr: a method of a string/dict/list, else a dict entry, else
// undefined (named `what`). Error when obj is undefined.
Value get_attr(const Value& obj, const std::string& name, const std::string& what);
// `obj[key]` as jinja2's getitem: dict entry, list/string element (negative counts from the end),
// undefined when missing. Error when obj is undefined.
Value get_item(const Value& obj, const Value& key, const std::string& what);
// `obj[start:stop:step]` with Python semantics (null parts are Value::none() or undefined).
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// What `for x in v` iterates: list items, dict keys, string characters; undefined is empty.
List iterate(const Value& v);
// `a in b`.
bool contains(const Value& container, const Value& item);
// Python `<` for numbers, strings and lists; Error otherwise.
bool less_than(const Value& a, const Value& b);
// Python binary arithmetic (+ - * / // % **).
Value arithmetic(const std::string& op, const Value& a, const Value& b);

// Error message "'name' is undefined" used whenever an undefined value is used as a value.
[[noreturn]] void fail_undefined(const Value& v);

}  // namespace grt::jinja
