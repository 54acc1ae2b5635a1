#include "core/env_switch.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"

namespace grt {

int env_int(const char* name, int fallback, int lo, int hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  GRT_CHECK(end != v && *end == '\0' && x >= lo && x <= hi, "{}={}: expected an integer from {} to {}", name, v, lo,
            hi);
  return static_cast<int>(x);
}

int env_choice(const char* name, std::initializer_list<const char*> allowed, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  int i = 0;
  std::string list;
  for (const char* a : allowed) {
    if (std::strcmp(v, a) == 0) return i;
    list += (i++ ? ", " : "") + std::string(a);
  }
  GRT_FAIL("{}={}: expected one of {}", name, v, list);
}

}  // namespace grt
