// compile (as mlx.core's): `fun` is traced once per input signature (dtypes
// and shapes, or ranks when shapeless) and each later call with that
// signature rebuilds the traced graph of primitives on the new inputs without
// running `fun` again. Arrays `fun` closes over are captured as they are at
// the trace (MLX's rule: pass changing state as inputs). Gradients of a
// compiled function follow its primitives, custom functions' rules included.
#pragma once

#include "alloy/transforms.h"

namespace alloy {

Function compile(Function fun, bool shapeless = false);

}  // namespace alloy
