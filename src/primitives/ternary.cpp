// Select: the cotangent flows to the branch the condition picked.
#include "primitives/ternary.h"

#include "alloy/ops.h"

namespace alloy {

std::vector<array> Select::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  const array& c = primals[0];
  const array& g = cotangents[0];
  array zero(0.0f, g.dtype());
  std::vector<array> out;
  for (int arg : argnums) {
    if (arg == 0) out.push_back(zeros_like(c, stream()));
    else if (arg == 1) out.push_back(where(c, g, zero, stream()));
    else out.push_back(where(c, zero, g, stream()));
  }
  return out;
}

std::vector<array> Select::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  const array& c = primals[0];
  array zero(0.0f, primals[1].dtype());
  array tx = zero, ty = zero;
  for (size_t i = 0; i < argnums.size(); ++i) {
    if (argnums[i] == 1) tx = tangents[i];
    if (argnums[i] == 2) ty = tangents[i];
  }
  return {where(c, tx, ty, stream())};
}

}  // namespace alloy
