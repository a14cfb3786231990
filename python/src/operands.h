// The two operands of a binary function, with MLX's weak typing of Python
// scalars. Shared by every binding file that binds a binary op.
#pragma once

#include <utility>

#include <nanobind/nanobind.h>

#include "alloy/array.h"

namespace alloy::py {

// MLX's rule: when exactly one operand is an array, the other takes its
// dtype: a Python scalar where that loses nothing (int + float16 array ->
// float16; float + int8 array -> float32), anything else (numpy arrays and
// scalars) always (np.float32(2) + float16 array -> float16, np.array([2.7])
// + int8 array -> int8). Two arrays, or no array, keep their own dtypes.
std::pair<array, array> binary_operands(nanobind::handle a, nanobind::handle b);

}  // namespace alloy::py
