// Errors carry what was being done and with which values; GRT_CHECK/GRT_FAIL build them.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <string>

namespace grt {

// The one exception type of graphrt. what() is "<message> (at file:line)", plus any context
// added while the error travelled up ("while loading model.safetensors: ...").
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
  // Returns a new Error whose message is "<context>: <this message>".
  Error with_context(const std::string& context) const { return Error(context + ": " + what()); }
};

[[noreturn]] void throw_error(const char* file, int line, const std::string& msg);

}  // namespace grt

#define GRT_FAIL(...) ::grt::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__))
#define GRT_CHECK(cond, ...)                                                                \
  do {                                                                                      \
    if (!(cond)) ::grt::throw_error(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__));        \
  } while (0)
