// alloy::mlx from C++: a program linked against libmlx runs a Metal kernel
// body on MLX's CPU (or CUDA) backend, as mlx::core::fast::metal_kernel
// would on a Mac. Built and run by the test suite (ctest: alloy_mlx_example).
#include <iostream>

#include "alloy/mlx/metal_kernel.h"
#include "mlx/mlx.h"

namespace mx = mlx::core;

int main() {
  auto kernel = alloy::mlx::metal_kernel("myexp", {"inp"}, {"out"}, R"(
      uint elem = thread_position_in_grid.x;
      T tmp = inp[elem];
      out[elem] = metal::exp(tmp);
  )");
  mx::array a = mx::random::normal({4, 16});
  auto outs = kernel({a}, {a.shape()}, {a.dtype()}, {static_cast<int>(a.size()), 1, 1}, {256, 1, 1},
                     {{"T", mx::float32}}, std::nullopt, false, {});
  bool same = mx::allclose(outs[0], mx::exp(a)).item<bool>();
  std::cout << "alloy::mlx::metal_kernel on MLX " << mx::version() << " (" << alloy::mlx::built_for_mlx_version()
            << "): exp " << (same ? "matches" : "DIFFERS from") << " mx::exp" << std::endl;
  return same ? 0 : 1;
}
