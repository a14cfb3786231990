// Evaluation and function transformations (autodiff).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "alloy/array.h"

namespace alloy {

void eval(std::vector<array> outputs);
template <typename... Arrays>
void eval(Arrays&&... a) {
  eval(std::vector<array>{std::forward<Arrays>(a)...});
}

using Function = std::function<std::vector<array>(const std::vector<array>&)>;

// (outputs, cotangents of the primals)
std::pair<std::vector<array>, std::vector<array>> vjp(const Function& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& cotangents);
// (outputs, tangents of the outputs)
std::pair<std::vector<array>, std::vector<array>> jvp(const Function& fun, const std::vector<array>& primals,
                                                      const std::vector<array>& tangents);

using ValueAndGradFn = std::function<std::pair<std::vector<array>, std::vector<array>>(const std::vector<array>&)>;
// fun's first output must be a scalar; gradients w.r.t. inputs[argnums].
ValueAndGradFn value_and_grad(const Function& fun, const std::vector<int>& argnums = {0});
std::function<std::vector<array>(const std::vector<array>&)> grad(const Function& fun,
                                                                   const std::vector<int>& argnums = {0});

// A function with custom derivative rules (mx.custom_function).
//   vjp(primals, cotangents, outputs) -> cotangents of primals
//   jvp(primals, tangents, argnums) -> tangents of outputs
using CustomVjp = std::function<std::vector<array>(const std::vector<array>&, const std::vector<array>&,
                                                   const std::vector<array>&)>;
using CustomJvp = std::function<std::vector<array>(const std::vector<array>&, const std::vector<array>&,
                                                   const std::vector<int>&)>;
Function custom_function(Function fun, std::optional<CustomVjp> fun_vjp = std::nullopt,
                         std::optional<CustomJvp> fun_jvp = std::nullopt);

namespace detail {
// Nesting depth of transformations being traced; eval keeps graphs while > 0.
int transform_depth();
struct TransformScope {
  TransformScope();
  ~TransformScope();
};
}  // namespace detail

}  // namespace alloy
