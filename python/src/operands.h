// The two operands of a binary function, with MLX's weak typing of Python
// scalars. Shared by every binding file that binds a binary op.
#pragma once

#include <utility>

#include <nanobind/nanobind.h>

#include "alloy/array.h"

namespace alloy::py {

// A Python scalar takes the dtype of the array operand where that loses
// nothing (int + float16 array -> float16).
std::pair<array, array> binary_operands(nanobind::handle a, nanobind::handle b);

}  // namespace alloy::py
