// On/off environment switches (ALLOY_CUDA_GRAPHS, ALLOY_SPECIALIZE, the MLX
// plugin's ALLOY_MLX_*): on unless set to "0".
#pragma once

#include <cstdlib>
#include <string_view>

namespace alloy {

inline bool switched_on(const char* name) {
  const char* v = std::getenv(name);
  return !(v && std::string_view(v) == "0");
}

}  // namespace alloy
