// mx.depends: a graph-ordering op with no math of its own.
#include <stdexcept>

#include "alloy/runtime.h"
#include "primitives/depends.h"

namespace alloy {

std::vector<array> depends(const std::vector<array>& inputs, const std::vector<array>& dependencies) {
  if (inputs.empty()) throw std::invalid_argument("[depends] needs at least one input.");
  std::vector<array> all = inputs;
  all.insert(all.end(), dependencies.begin(), dependencies.end());
  std::vector<Shape> shapes;
  std::vector<Dtype> dtypes;
  for (const auto& a : inputs) {
    shapes.push_back(a.shape());
    dtypes.push_back(a.dtype());
  }
  // The node only shares memory, so the inputs' own stream serves.
  Stream s = to_stream({});
  return array::make_arrays(std::move(shapes), dtypes, std::make_shared<Depends>(s, inputs.size()), all);
}

}  // namespace alloy
