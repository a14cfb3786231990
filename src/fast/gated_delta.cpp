// mx.fast.gated_delta_update as a composite: one small step of ops per time
// step, all in float32. MLX fuses the recurrence into one kernel; here the
// graph grows with T (fine for decoding and short prefills, slow for long
// sequences), in exchange for running on every device with derivatives.
#include <stdexcept>
#include <string>

#include "alloy/fast_ops.h"
#include "alloy/ops.h"
#include "ops/op_utils.h"

namespace alloy::fast {

namespace {

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument("[gated_delta_update] " + what);
}

void expect_shape(const array& a, const Shape& want, const char* name) {
  if (a.shape() != want) {
    bad(std::string(name) + " has shape " + shape_to_string(a.shape()) + ", expected " + shape_to_string(want) + ".");
  }
}

// a[:, t] of an array (B, T, ...), without the T axis.
array step(const array& a, int t, StreamOrDevice s) {
  Shape start(a.ndim(), 0), stop = a.shape(), stride(a.ndim(), 1);
  start[1] = t;
  stop[1] = t + 1;
  return squeeze(slice(a, start, stop, stride, s), {1}, s);
}

}  // namespace

std::vector<array> gated_delta_update(const array& q, const array& k, const array& v, const array& gamma,
                                      const array& beta, const std::optional<array>& initial_state,
                                      const std::optional<array>& mask, StreamOrDevice s) {
  if (q.ndim() != 4 || v.ndim() != 4) bad("q, k and v must have 4 dimensions (B, T, heads, D).");
  const int b = q.shape(0), t_len = q.shape(1), hk = q.shape(2), dk = q.shape(3);
  const int hv = v.shape(2), dv = v.shape(3);
  expect_shape(k, q.shape(), "k");
  expect_shape(v, {b, t_len, hv, dv}, "v");
  expect_shape(gamma, {b, t_len, hv}, "gamma");
  expect_shape(beta, {b, t_len, hv}, "beta");
  if (hk == 0 || hv % hk != 0) {
    bad("the value heads (" + std::to_string(hv) + ") must be a multiple of the key heads (" + std::to_string(hk) +
        ").");
  }
  if (initial_state) expect_shape(*initial_state, {b, hv, dv, dk}, "initial_state");
  if (mask) expect_shape(*mask, {b, t_len}, "mask");
  const Dtype out_dtype = promote_types(promote_types(q.dtype(), k.dtype()), v.dtype());
  if (!is_floating(out_dtype)) bad(std::string("unsupported dtype ") + dtype_name(out_dtype) + ".");
  const int rep = hv / hk;

  // Value heads grouped by their key head: (B, Hk, rep, ...).
  auto f32 = [&](const array& a) { return astype(a, float32, s); };
  array state = initial_state ? reshape(f32(*initial_state), {b, hk, rep, dv, dk}, s)
                              : zeros({b, hk, rep, dv, dk}, float32, s);
  std::vector<array> outs;
  outs.reserve(t_len);
  for (int t = 0; t < t_len; ++t) {
    array qt = reshape(f32(step(q, t, s)), {b, hk, 1, dk, 1}, s);
    array kt = reshape(f32(step(k, t, s)), {b, hk, 1, dk, 1}, s);
    array vt = reshape(f32(step(v, t, s)), {b, hk, rep, dv, 1}, s);
    array gt = reshape(f32(step(gamma, t, s)), {b, hk, rep, 1, 1}, s);
    array bt = reshape(f32(step(beta, t, s)), {b, hk, rep, 1, 1}, s);
    array decayed = multiply(state, gt, s);
    array delta = multiply(subtract(vt, matmul(decayed, kt, s), s), bt, s);  // (.., Dv, 1)
    array next = add(decayed, multiply(delta, swapaxes(kt, -1, -2, s), s), s);
    array out = matmul(next, qt, s);  // (B, Hk, rep, Dv, 1)
    if (mask) {
      array mt = reshape(step(*mask, t, s), {b, 1, 1, 1, 1}, s);
      next = where(mt, next, state, s);
      out = where(mt, out, zeros_like(out, s), s);
    }
    state = next;
    outs.push_back(astype(reshape(out, {b, hv, dv}, s), out_dtype, s));
  }
  array out = t_len > 0 ? stack(outs, 1, s) : zeros({b, 0, hv, dv}, out_dtype, s);
  return {out, reshape(state, {b, hv, dv, dk}, s)};
}

}  // namespace alloy::fast
