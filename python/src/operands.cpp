#include "operands.h"

#include "convert.h"

namespace alloy::py {

std::pair<array, array> binary_operands(nanobind::handle a, nanobind::handle b) {
  bool sa = is_python_scalar(a), sb = is_python_scalar(b);
  if (sa && !sb) {
    array y = to_array(b);
    return {to_array_like(a, y), y};
  }
  if (sb && !sa) {
    array x = to_array(a);
    return {x, to_array_like(b, x)};
  }
  return {to_array(a), to_array(b)};
}

}  // namespace alloy::py
