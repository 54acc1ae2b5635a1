// Levelled logging to stderr. The level comes from GRAPHRT_LOG (error, warn, info, debug;
// default info) and can be changed at run time.
#pragma once
#include <fmt/format.h>

#include <string>

namespace grt {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3, Off = 4 };

LogLevel log_level();
void set_log_level(LogLevel level);
// Parses "debug", "info", "warn", "error", "off"; throws Error otherwise.
LogLevel parse_log_level(const std::string& text);
void log_message(LogLevel level, const std::string& msg);
// Number of warnings printed so far (tests check "exactly one warning").
int warning_count();

}  // namespace grt

#define GRT_LOG(level, ...)                                                           \
  do {                                                                                \
    if (static_cast<int>(level) >= static_cast<int>(::grt::log_level()))              \
      ::grt::log_message(level, ::fmt::format(__VA_ARGS__));                          \
  } while (0)
#define GRT_DEBUG(...) GRT_LOG(::grt::LogLevel::Debug, __VA_ARGS__)
#define GRT_INFO(...) GRT_LOG(::grt::LogLevel::Info, __VA_ARGS__)
#define GRT_WARN(...) GRT_LOG(::grt::LogLevel::Warn, __VA_ARGS__)
#define GRT_ERROR(...) GRT_LOG(::grt::LogLevel::Error, __VA_ARGS__)
