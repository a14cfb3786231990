// mx.fast's fused ops as composites of existing ops. They run wherever those
// ops run and take their derivatives from them; the numerics follow MLX's:
// statistics, angles and softmax in float32, results cast to MLX's dtype.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "alloy/fast_ops.h"
#include "alloy/ops.h"
#include "ops/op_utils.h"

namespace alloy::fast {

namespace {

using SD = StreamOrDevice;

std::string shape_str(const array& a) { return shape_to_string(a.shape()); }

// A 1-D per-feature parameter (weight, bias) of the normalisations.
void check_feature_vector(const char* op, const char* what, const array& p, const array& x) {
  if (p.ndim() != 1) {
    throw std::invalid_argument(std::string("[") + op + "] " + what + " must have 1 dimension but has shape " +
                                shape_str(p) + ".");
  }
  if (p.shape(0) != x.shape(-1)) {
    throw std::invalid_argument(std::string("[") + op + "] " + what + " has " + std::to_string(p.shape(0)) +
                                " elements but the last axis of x has " + std::to_string(x.shape(-1)) + ".");
  }
}

void check_at_least_1d(const char* op, const array& x) {
  if (x.ndim() == 0) throw std::invalid_argument(std::string("[") + op + "] x must have at least 1 dimension.");
}

void check_floating(const char* op, Dtype d) {
  if (!is_floating(d)) {
    throw std::invalid_argument(std::string("[") + op + "] unsupported dtype " + dtype_name(d) +
                                " (floating point types only).");
  }
}

// The most negative finite value of a float dtype. Masked scores take it
// rather than -inf, as in MLX: a row whose keys are all masked then attends
// uniformly instead of producing NaN.
array lowest_value(Dtype d) {
  switch (d) {
    case float16:
      return array(-65504.0f, float16);
    case bfloat16:
      return array(-3.38953139e38f, bfloat16);
    case float64:
      return array(std::numeric_limits<double>::lowest(), float64);
    default:
      return array(std::numeric_limits<float>::lowest(), float32);
  }
}

}  // namespace

array rms_norm(const array& x, const std::optional<array>& weight, float eps, SD s) {
  check_at_least_1d("rms_norm", x);
  if (weight) check_feature_vector("rms_norm", "weight", *weight, x);
  const Dtype out = weight ? promote_types(x.dtype(), weight->dtype()) : x.dtype();
  check_floating("rms_norm", out);
  array xf = astype(x, float32, s);
  array inv = rsqrt(add(mean(square(xf, s), {-1}, true, s), array(eps, float32), s), s);
  array y = astype(multiply(xf, inv, s), out, s);
  return weight ? multiply(y, astype(*weight, out, s), s) : y;
}

array layer_norm(const array& x, const std::optional<array>& weight, const std::optional<array>& bias, float eps,
                 SD s) {
  check_at_least_1d("layer_norm", x);
  if (weight) check_feature_vector("layer_norm", "weight", *weight, x);
  if (bias) check_feature_vector("layer_norm", "bias", *bias, x);
  // MLX's rule: the weight sets the dtype (with the bias when both are
  // given); without a weight the result keeps x's dtype and the bias is cast.
  Dtype out = x.dtype();
  if (weight) out = promote_types(out, weight->dtype());
  if (weight && bias) out = promote_types(out, bias->dtype());
  check_floating("layer_norm", out);
  array xf = astype(x, float32, s);
  array centred = subtract(xf, mean(xf, {-1}, true, s), s);
  array var = mean(square(centred, s), {-1}, true, s);
  array y = astype(multiply(centred, rsqrt(add(var, array(eps, float32), s), s), s), out, s);
  if (weight) y = multiply(y, astype(*weight, out, s), s);
  if (bias) y = add(y, astype(*bias, out, s), s);
  return y;
}

array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, const array& offset,
           const std::optional<array>& freqs, SD s) {
  if (x.ndim() < 3) {
    throw std::invalid_argument("[rope] the input of shape " + shape_str(x) +
                                " must have at least 3 dimensions (B, *, T, D).");
  }
  if (!is_floating(x.dtype())) {
    throw std::invalid_argument(std::string("[rope] the input must be floating point, got ") +
                                dtype_name(x.dtype()) + ".");
  }
  if (dims <= 0 || dims % 2 != 0) {
    throw std::invalid_argument("[rope] dims must be positive and even, got " + std::to_string(dims) + ".");
  }
  if (dims > x.shape(-1)) {
    throw std::invalid_argument("[rope] dims (" + std::to_string(dims) + ") exceeds the last dimension (" +
                                std::to_string(x.shape(-1)) + ") of the input.");
  }
  if (freqs && base) throw std::invalid_argument("[rope] only one of base and freqs may be given.");
  if (!freqs && !base) throw std::invalid_argument("[rope] one of base and freqs must be given.");
  const int half = dims / 2;
  if (freqs && (freqs->ndim() != 1 || freqs->shape(0) != half)) {
    throw std::invalid_argument("[rope] freqs must have shape (" + std::to_string(half) + ") for dims " +
                                std::to_string(dims) + ", got " + shape_str(*freqs) + ".");
  }
  if (offset.ndim() > 1 || (offset.size() != 1 && offset.size() != x.shape(0))) {
    throw std::invalid_argument("[rope] offset must be a scalar or a vector of " + std::to_string(x.shape(0)) +
                                " (batch) entries, got shape " + shape_str(offset) + ".");
  }
  if (!is_integral(offset.dtype())) {
    throw std::invalid_argument(std::string("[rope] offset must be an integer, got ") + dtype_name(offset.dtype()) +
                                ".");
  }

  // Angles in float32 whatever x's dtype (so positions stay exact):
  // theta[.., t, i] = (offset + t) * scale * inv_freq[i].
  const int t_len = x.shape(-2);
  array pos = astype(offset, float32, s);
  if (offset.size() > 1) {
    Shape per_batch(x.ndim() - 1, 1);  // (B, 1.., 1): one offset per batch entry, broadcast over T
    per_batch[0] = x.shape(0);
    pos = reshape(pos, per_batch, s);
  } else {
    pos = reshape(pos, {1}, s);
  }
  pos = multiply(add(arange(0.0, double(t_len), 1.0, float32, s), pos, s), array(scale, float32), s);
  array inv_freq = freqs ? reciprocal(astype(*freqs, float32, s), s)
                         : exp(multiply(arange(0.0, double(half), 1.0, float32, s),
                                        array(-std::log(*base) / half, float32), s),
                               s);
  array theta = multiply(expand_dims(pos, -1, s), inv_freq, s);  // (.., T, half)
  array c = cos(theta, s), sn = sin(theta, s);

  // The rotated pairs: (2i, 2i+1) when traditional, else (i, i + dims/2).
  Shape start(x.ndim(), 0), stop = x.shape(), step(x.ndim(), 1);
  stop.back() = dims;
  Shape start2 = start, stop1 = stop;
  if (traditional) {
    step.back() = 2;
    start2.back() = 1;
  } else {
    stop1.back() = half;
    start2.back() = half;
  }
  array x1 = astype(slice(x, start, stop1, step, s), float32, s);
  array x2 = astype(slice(x, start2, stop, step, s), float32, s);
  array r1 = astype(subtract(multiply(x1, c, s), multiply(x2, sn, s), s), x.dtype(), s);
  array r2 = astype(add(multiply(x1, sn, s), multiply(x2, c, s), s), x.dtype(), s);
  // Traditional: interleave the pairs back, (.., half, 2) -> (.., dims).
  Shape rotated_shape = x.shape();
  rotated_shape.back() = dims;
  array rotated = traditional ? reshape(stack({r1, r2}, -1, s), rotated_shape, s) : concatenate({r1, r2}, -1, s);
  if (dims == x.shape(-1)) return rotated;
  Shape rest_start(x.ndim(), 0);
  rest_start.back() = dims;
  array rest = slice(x, rest_start, x.shape(), Shape(x.ndim(), 1), s);
  return concatenate({rotated, rest}, -1, s);
}

array rope(const array& x, int dims, bool traditional, std::optional<float> base, float scale, int offset,
           const std::optional<array>& freqs, SD s) {
  return rope(x, dims, traditional, base, scale, array(offset, int32), freqs, s);
}

array scaled_dot_product_attention(const array& q, const array& k, const array& v, float scale,
                                   const std::string& mask_mode, const std::optional<array>& mask,
                                   const std::optional<array>& sinks, SD s) {
  const char* op = "[scaled_dot_product_attention] ";
  for (const array* t : {&q, &k, &v}) {
    if (t->ndim() != 4) {
      throw std::invalid_argument(std::string(op) + "inputs must have 4 dimensions (B, heads, T, D), got shape " +
                                  shape_str(*t) + ".");
    }
  }
  if (mask_mode != "" && mask_mode != "causal") {
    throw std::invalid_argument(std::string(op) + "invalid mask option '" + mask_mode +
                                "'; it must be 'causal' or an array.");
  }
  if (mask_mode == "causal" && mask) {
    throw std::invalid_argument(std::string(op) + "a causal mask takes no mask array.");
  }
  if (mask && mask->ndim() > 4) {
    throw std::invalid_argument(std::string(op) + "the mask of shape " + shape_str(*mask) +
                                " has more than 4 dimensions.");
  }
  if (k.shape(0) != q.shape(0) || v.shape(0) != q.shape(0)) {
    throw std::invalid_argument(std::string(op) + "batch sizes differ: q " + shape_str(q) + ", k " + shape_str(k) +
                                ", v " + shape_str(v) + ".");
  }
  if (q.shape(-1) != k.shape(-1)) {
    throw std::invalid_argument(std::string(op) + "queries " + shape_str(q) + " and keys " + shape_str(k) +
                                " need the same last dimension.");
  }
  if (k.shape(1) != v.shape(1) || k.shape(2) != v.shape(2)) {
    throw std::invalid_argument(std::string(op) + "keys " + shape_str(k) + " and values " + shape_str(v) +
                                " need the same number of heads and of positions.");
  }
  const int n_q = q.shape(1), n_kv = k.shape(1);
  if (n_kv == 0 || n_q % n_kv != 0) {
    throw std::invalid_argument(std::string(op) + "the query heads (" + std::to_string(n_q) +
                                ") must be a multiple of the key/value heads (" + std::to_string(n_kv) + ").");
  }
  const Dtype dtype = promote_types(promote_types(q.dtype(), k.dtype()), v.dtype());
  check_floating("scaled_dot_product_attention", dtype);
  const int batch = q.shape(0), t_q = q.shape(2), t_kv = k.shape(2), rep = n_q / n_kv;
  const Shape scores_shape{batch, n_q, t_q, t_kv};

  std::optional<array> m;
  if (mask) {
    if (mask->dtype() != bool_ && promote_types(mask->dtype(), dtype) != dtype) {
      throw std::invalid_argument(std::string(op) + "the mask's dtype " + dtype_name(mask->dtype()) +
                                  " does not promote to the output dtype " + dtype_name(dtype) + ".");
    }
    // broadcast_to raises for a mask that does not fit (B, Nq, Tq, Tkv).
    m = broadcast_to(mask->dtype() == bool_ ? *mask : astype(*mask, dtype, s), scores_shape, s);
  } else if (mask_mode == "causal") {
    // Lower-right aligned: query i sees keys up to i + (Tkv - Tq); with more
    // queries than keys the first rows see none (and attend uniformly, below).
    const double q_off = t_kv - t_q;
    array qi = expand_dims(arange(q_off, q_off + t_q, 1.0, int32, s), 1, s);
    array ki = expand_dims(arange(0.0, double(t_kv), 1.0, int32, s), 0, s);
    m = broadcast_to(greater_equal(qi, ki, s), scores_shape, s);
  }
  std::optional<array> sk;
  if (sinks) {
    if (promote_types(sinks->dtype(), dtype) != dtype) {
      throw std::invalid_argument(std::string(op) + "the sinks' dtype " + dtype_name(sinks->dtype()) +
                                  " does not promote to the output dtype " + dtype_name(dtype) + ".");
    }
    if (sinks->ndim() != 1 || sinks->shape(0) != n_q) {
      throw std::invalid_argument(std::string(op) + "sinks must have shape (" + std::to_string(n_q) +
                                  ") (one per query head), got " + shape_str(*sinks) + ".");
    }
    sk = astype(*sinks, dtype, s);
  }

  // Grouped-query heads without copying k and v: queries become
  // (B, Nkv, rep, Tq, D) and k, v gain a broadcast axis (B, Nkv, 1, Tkv, D).
  array qs = multiply(array(scale, dtype), astype(q, dtype, s), s);
  qs = reshape(qs, {batch, n_kv, rep, t_q, q.shape(3)}, s);
  array ks = expand_dims(astype(k, dtype, s), 2, s);
  array vs = expand_dims(astype(v, dtype, s), 2, s);
  array scores = matmul(qs, swapaxes(ks, -1, -2, s), s);  // (B, Nkv, rep, Tq, Tkv)
  if (m) {
    array m5 = reshape(*m, {batch, n_kv, rep, t_q, t_kv}, s);
    scores = m5.dtype() == bool_
                 ? where(m5, scores, lowest_value(dtype), s)
                 : add(scores, m5, s);
  }
  if (sk) {
    // The sink logit joins each row's softmax as an extra first column.
    array col = broadcast_to(reshape(*sk, {1, n_kv, rep, 1, 1}, s), {batch, n_kv, rep, t_q, 1}, s);
    scores = concatenate({col, scores}, -1, s);
  }
  scores = softmax(scores, {-1}, true, s);  // float32 inside, dtype out
  if (sk) {
    Shape start(5, 0), stop = scores.shape(), step(5, 1);
    start.back() = 1;
    scores = slice(scores, start, stop, step, s);
  }
  array out = matmul(scores, vs, s);  // (B, Nkv, rep, Tq, Dv)
  return reshape(out, {batch, n_q, t_q, v.shape(3)}, s);
}

array cross_entropy(const array& logits, const array& targets, SD s) {
  if (!is_floating(logits.dtype())) {
    throw std::invalid_argument(std::string("[cross_entropy] unsupported logits dtype ") +
                                dtype_name(logits.dtype()) + " (floating point types only).");
  }
  check_at_least_1d("cross_entropy", logits);
  if (!is_integral(targets.dtype())) {
    throw std::invalid_argument(std::string("[cross_entropy] targets must be integer class indices, got ") +
                                dtype_name(targets.dtype()) + ".");
  }
  Shape expected(logits.shape().begin(), logits.shape().end() - 1);
  if (targets.shape() != expected) {
    throw std::invalid_argument("[cross_entropy] targets of shape " + shape_str(targets) +
                                " do not match the logits of shape " + shape_str(logits) +
                                " with the last axis removed.");
  }
  // Accumulated in float32 for every logits dtype, as MLX's fused kernels do.
  array lf = astype(logits, float32, s);
  array picked = squeeze(take_along_axis(lf, expand_dims(targets, -1, s), -1, s), {-1}, s);
  return subtract(logsumexp(lf, {-1}, false, s), picked, s);
}

}  // namespace alloy::fast
