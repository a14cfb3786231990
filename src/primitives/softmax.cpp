// Softmax and LogSumExp: derivatives (built from ops only).
#include "primitives/softmax.h"

#include "alloy/ops.h"

namespace alloy {

namespace {

// y * (t - sum(t * y)) over the last axis: the derivative of softmax applied
// to t (either way round, the Jacobian is symmetric).
array softmax_apply_jacobian(const array& y, const array& t, Stream s) {
  const int last = y.ndim() - 1;
  array ty = multiply(t, y, s);
  return subtract(ty, multiply(y, sum(ty, {last}, true, s), s), s);
}

}  // namespace

bool Softmax::is_equivalent(const Primitive& other) const { return dynamic_cast<const Softmax*>(&other) != nullptr; }
bool LogSumExp::is_equivalent(const Primitive& other) const {
  return dynamic_cast<const LogSumExp*>(&other) != nullptr;
}

std::vector<array> Softmax::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                const std::vector<int>&, const std::vector<array>& outputs) {
  // (The Jacobian is symmetric: for complex inputs its conjugate applies.)
  return {softmax_apply_jacobian(conjugate(outputs[0], stream()), cotangents[0], stream())};
}

std::vector<array> Softmax::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                const std::vector<int>&) {
  const array& x = primals[0];
  array y(x.shape(), x.dtype(), std::make_shared<Softmax>(stream()), {x});
  return {softmax_apply_jacobian(y, tangents[0], stream())};
}

// d logsumexp / dx = softmax(x) = exp(x - logsumexp(x)).
std::vector<array> LogSumExp::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>& outputs) {
  const array& x = primals[0];
  array p = exp(subtract(x, outputs[0], stream()), stream());
  return {multiply(cotangents[0], conjugate(p, stream()), stream())};
}

std::vector<array> LogSumExp::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                  const std::vector<int>&) {
  const array& x = primals[0];
  Shape out_shape = x.shape();
  out_shape.back() = 1;
  array out(out_shape, x.dtype(), std::make_shared<LogSumExp>(stream()), {x});
  array p = exp(subtract(x, out, stream()), stream());
  return {sum(multiply(tangents[0], p, stream()), {x.ndim() - 1}, true, stream())};
}

}  // namespace alloy
