// GRAPHRT_* environment switches (core/env_switch.h): unset or empty gives the fallback, an
// allowed value its index or integer, anything else an error naming the variable, the value and
// what is allowed; and a model switch read through the real binary fails the same way.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "cli_runner.h"
#include "core/env_switch.h"
#include "core/error.h"
#include "scoped_env.h"

namespace grt {
namespace {

constexpr const char* kVar = "GRAPHRT_TEST_ENV_SWITCH";

// kVar = value for a scope (grt::testing::ScopedEnv restores it after).
struct ScopedEnv : grt::testing::ScopedEnv {
  explicit ScopedEnv(const char* value) : grt::testing::ScopedEnv(kVar, value) {}
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(EnvSwitch, UnsetOrEmptyGivesTheFallback) {
  unsetenv(kVar);
  EXPECT_EQ(env_int(kVar, 7, 0, 10), 7);
  EXPECT_EQ(env_choice(kVar, {"a", "b"}, -1), -1);
  ScopedEnv empty("");
  EXPECT_EQ(env_int(kVar, 7, 0, 10), 7);
  EXPECT_EQ(env_choice(kVar, {"a", "b"}, 1), 1);
}

TEST(EnvSwitch, AllowedValuesAreRead) {
  {
    ScopedEnv v("3");
    EXPECT_EQ(env_int(kVar, 7, 0, 10), 3);
  }
  ScopedEnv v("norm");
  EXPECT_EQ(env_choice(kVar, {"auto", "0", "norm", "all"}, 0), 2);
}

TEST(EnvSwitch, OtherValuesAreClearErrors) {
  {
    ScopedEnv v("11");
    EXPECT_NE(error_of([] { env_int(kVar, 7, 0, 10); }).find("GRAPHRT_TEST_ENV_SWITCH=11: expected an integer from 0 to 10"),
              std::string::npos);
  }
  {
    ScopedEnv v("3x");
    EXPECT_NE(error_of([] { env_int(kVar, 7, 0, 10); }).find("expected an integer from 0 to 10"), std::string::npos);
  }
  ScopedEnv v("Norm");
  EXPECT_NE(error_of([] { env_choice(kVar, {"auto", "0", "norm", "all"}, 0); })
                .find("GRAPHRT_TEST_ENV_SWITCH=Norm: expected one of auto, 0, norm, all"),
            std::string::npos);
}

TEST(EnvSwitch, BadDecodeFusionValueFailsTheBinaryByName) {
  const auto r = testing::run_command("GRAPHRT_DECODE_FUSION=bogus " + std::string(GRAPHRT_BIN) +
                                      " generate --model builtin:tiny --device cpu --token-ids 1,2,3 --max-new-tokens 2");
  EXPECT_EQ(r.exit_code, 1) << r.all;
  EXPECT_NE(r.all.find("GRAPHRT_DECODE_FUSION=bogus: expected one of auto, 0, norm, all"), std::string::npos) << r.all;
  const auto ok = testing::run_command("GRAPHRT_DECODE_FUSION=0 " + std::string(GRAPHRT_BIN) +
                                       " generate --model builtin:tiny --device cpu --token-ids 1,2,3 --max-new-tokens 2");
  EXPECT_EQ(ok.exit_code, 0) << ok.all;
}

}  // namespace
}  // namespace grt
