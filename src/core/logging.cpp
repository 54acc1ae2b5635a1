#include "core/logging.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "core/error.h"

namespace grt {
namespace {

LogLevel initial_level() {
  const char* env = std::getenv("GRAPHRT_LOG");
  if (!env || !*env) return LogLevel::Info;
  try {
    return parse_log_level(env);
  } catch (const Error&) {
    std::fprintf(stderr, "[graphrt warn] GRAPHRT_LOG='%s' is not a level; using info\n", env);
    return LogLevel::Info;
  }
}

std::atomic<int>& level_storage() {
  static std::atomic<int> level{static_cast<int>(initial_level())};
  return level;
}

std::atomic<int> g_warnings{0};

}  // namespace

LogLevel log_level() { return static_cast<LogLevel>(level_storage().load()); }
void set_log_level(LogLevel level) { level_storage().store(static_cast<int>(level)); }

LogLevel parse_log_level(const std::string& t) {
  if (t == "debug") return LogLevel::Debug;
  if (t == "info") return LogLevel::Info;
  if (t == "warn" || t == "warning") return LogLevel::Warn;
  if (t == "error") return LogLevel::Error;
  if (t == "off") return LogLevel::Off;
  GRT_FAIL("unknown log level '{}' (expected debug, info, warn, error or off)", t);
}

int warning_count() { return g_warnings.load(); }

void log_message(LogLevel level, const std::string& msg) {
  static std::mutex mu;
  static const char* names[] = {"debug", "info", "warn", "error", "off"};
  if (level == LogLevel::Warn) g_warnings.fetch_add(1);
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "[graphrt %s] %s\n", names[static_cast<int>(level)], msg.c_str());
}

}  // namespace grt
