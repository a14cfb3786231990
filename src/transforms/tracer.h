// A tracer: an Identity node over `primal` that transformations follow
// (its graph is kept through evals; custom functions record their node).
// grad/vjp make them for their primals, compile for a trace's inputs.
#pragma once

#include "alloy/array.h"

namespace alloy::detail {

array make_tracer(const array& primal);

}  // namespace alloy::detail
