#include "primitives/linalg.h"

#include "alloy/ops.h"

namespace alloy {

// C = A B:  dA = dC B^T,  dB = A^T dC  (conjugates omitted: real dtypes).
std::vector<array> Matmul::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  const array& cot = cotangents[0];
  std::vector<array> grads;
  for (int arg : argnums) {
    if (arg == 0) {
      grads.push_back(matmul(cot, swapaxes(primals[1], -1, -2, stream()), stream()));
    } else {
      grads.push_back(matmul(swapaxes(primals[0], -1, -2, stream()), cot, stream()));
    }
  }
  return grads;
}

// d(A B) = dA B + A dB.
std::vector<array> Matmul::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  std::optional<array> out;
  for (size_t i = 0; i < argnums.size(); ++i) {
    array term = argnums[i] == 0 ? matmul(tangents[i], primals[1], stream()) : matmul(primals[0], tangents[i], stream());
    out = out ? add(*out, term, stream()) : term;
  }
  return {*out};
}

}  // namespace alloy
