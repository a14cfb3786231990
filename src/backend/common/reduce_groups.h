// A reduction's row-contiguous input seen as alternating runs of kept and
// reduced dims (size-1 dims dropped, neighbours of the same kind merged).
// Host code; both backends' reductions start from it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "alloy/array.h"

namespace alloy {

struct ReduceGroup {
  int64_t size;
  bool reduced;
  int64_t stride;  // element stride of the group's fastest dim in the input
};

// `axes` sorted.
inline std::vector<ReduceGroup> reduce_groups(const Shape& shape, const std::vector<int>& axes) {
  std::vector<ReduceGroup> g;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (shape[d] == 1) continue;
    bool red = std::binary_search(axes.begin(), axes.end(), d);
    if (!g.empty() && g.back().reduced == red) {
      g.back().size *= shape[d];
    } else {
      g.push_back({shape[d], red, 0});
    }
  }
  int64_t stride = 1;
  for (size_t i = g.size(); i-- > 0;) {
    g[i].stride = stride;
    stride *= g[i].size;
  }
  return g;
}

}  // namespace alloy
