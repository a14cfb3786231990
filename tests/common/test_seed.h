// The seed of a C++ test's random inputs: fresh on every run, printed so a
// failure can be replayed with ALLOY_TEST_SEED (as the Python tests do).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace alloy_test {

inline uint32_t test_seed() {
  static const uint32_t seed = [] {
    const char* env = std::getenv("ALLOY_TEST_SEED");
    uint32_t s = env ? uint32_t(std::strtoul(env, nullptr, 10)) : std::random_device{}();
    std::printf("[ seed     ] ALLOY_TEST_SEED=%u\n", s);
    return s;
  }();
  return seed;
}

}  // namespace alloy_test
