// The ternary family: select (where). The condition arrives as bool, the two
// branches in one promoted type.
#pragma once

#include "backend/common/math_shim.h"

namespace alloy::ternary {

struct Select {
  template <typename T>
  ALLOY_HD T operator()(bool c, T x, T y) const {
    return c ? x : y;
  }
};

}  // namespace alloy::ternary
