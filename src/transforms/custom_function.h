// Internal form of custom_function for ops built from other ops whose
// derivative rules cost (or may not even be defined) per primal: the rule is
// told which primals' cotangents are wanted and builds only those.
#pragma once

#include <functional>
#include <vector>

#include "alloy/transforms.h"

namespace alloy::detail {

// (primals, cotangents, wanted primal indices) -> one entry per primal; the
// entries not wanted are never read (zeros_like of the primal serves).
using CustomVjpOf = std::function<std::vector<array>(const std::vector<array>&, const std::vector<array>&,
                                                     const std::vector<int>&)>;
Function custom_function_of(Function fun, CustomVjpOf fun_vjp, CustomJvp fun_jvp);

}  // namespace alloy::detail
