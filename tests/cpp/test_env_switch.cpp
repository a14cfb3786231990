// Environment settings (core/env_switch.h): switches are on unless "0";
// whole numbers fall back to their default when unset, empty or not a number.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/env_switch.h"

namespace alloy {
namespace {

constexpr const char* kName = "ALLOY_TEST_ENV_SETTING";

TEST(EnvSwitch, OnUnlessZero) {
  unsetenv(kName);
  EXPECT_TRUE(switched_on(kName));
  setenv(kName, "1", 1);
  EXPECT_TRUE(switched_on(kName));
  setenv(kName, "0", 1);
  EXPECT_FALSE(switched_on(kName));
  unsetenv(kName);
}

TEST(EnvSwitch, CountsFallBackUnlessAWholeNumber) {
  unsetenv(kName);
  EXPECT_EQ(env_count(kName, 16), 16u);
  setenv(kName, "", 1);
  EXPECT_EQ(env_count(kName, 16), 16u);
  setenv(kName, "3", 1);
  EXPECT_EQ(env_count(kName, 16), 3u);
  setenv(kName, "1048576", 1);
  EXPECT_EQ(env_count(kName, 16), 1048576u);
  for (const char* bad : {"abc", "12x", "-2", "4 "}) {
    setenv(kName, bad, 1);
    EXPECT_EQ(env_count(kName, 16), 16u) << bad;
  }
  unsetenv(kName);
}

}  // namespace
}  // namespace alloy
