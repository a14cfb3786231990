// Internal helpers shared by the product composites.
#pragma once

#include "alloy/ops.h"

namespace alloy {

// matmul with MLX's dtype rule: only inexact results (alloy's matmul also
// multiplies integers; MLX's products built on matmul refuse them).
array inexact_matmul(const array& a, const array& b, SD s);

}  // namespace alloy
