// Environment settings read once by their users: on/off switches
// (ALLOY_CUDA_GRAPHS, ALLOY_SPECIALIZE, the MLX plugin's ALLOY_MLX_*), on
// unless set to "0", and whole-number tuning knobs.
#pragma once

#include <cstdlib>
#include <string_view>

namespace alloy {

inline bool switched_on(const char* name) {
  const char* v = std::getenv(name);
  return !(v && std::string_view(v) == "0");
}

// A whole number from the environment; `fallback` when unset, empty or not
// a number throughout.
inline unsigned long long env_count(const char* name, unsigned long long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  return *end == '\0' && *v != '-' ? n : fallback;
}

}  // namespace alloy
