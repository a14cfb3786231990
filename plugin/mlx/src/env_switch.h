// The plugin's on/off environment switches: on unless set to "0".
#pragma once

#include <cstdlib>
#include <string_view>

namespace alloy::mlx {

inline bool switched_on(const char* name) {
  const char* v = std::getenv(name);
  return !(v && std::string_view(v) == "0");
}

}  // namespace alloy::mlx
