// error_of(f): the message of the grt::Error that f throws, or "" when it throws none.
#pragma once
#include <functional>
#include <string>

#include "core/error.h"

namespace grt::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace grt::testing
