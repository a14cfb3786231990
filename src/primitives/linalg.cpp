#include "primitives/linalg.h"

#include "alloy/ops.h"

namespace alloy {

// C = A B:  dA = dC B^H,  dB = A^H dC (the conjugate transposes: MLX's
// convention for complex matrices; plain transposes for real ones).
std::vector<array> Matmul::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>&) {
  const array& cot = cotangents[0];
  auto adjoint = [&](const array& m) { return conjugate(swapaxes(m, -1, -2, stream()), stream()); };
  std::vector<array> grads;
  for (int arg : argnums) {
    if (arg == 0) {
      grads.push_back(matmul(cot, adjoint(primals[1]), stream()));
    } else {
      grads.push_back(matmul(adjoint(primals[0]), cot, stream()));
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
