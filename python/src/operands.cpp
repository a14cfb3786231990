#include "operands.h"

#include "convert.h"

namespace alloy::py {

std::pair<array, array> binary_operands(nanobind::handle a, nanobind::handle b) {
  const bool aa = nanobind::isinstance<array>(a), ab = nanobind::isinstance<array>(b);
  if (aa && !ab) {
    array x = nanobind::cast<array>(a);
    return {x, to_array_like(b, x)};
  }
  if (ab && !aa) {
    array y = nanobind::cast<array>(b);
    return {to_array_like(a, y), y};
  }
  return {to_array(a), to_array(b)};
}

}  // namespace alloy::py
