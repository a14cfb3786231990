// MLX's text form of arrays (repr and str are the same), under the print
// options of mx.set_printoptions / mx.printoptions.
#pragma once

#include <string>

#include "alloy/array.h"

std::string format_array(const alloy::array& a);
