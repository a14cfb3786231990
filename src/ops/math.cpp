// Composites of existing ops: degrees/radians, trunc, divmod, isposinf,
// nan_to_num, counts, minmax, windows and dtype utilities. None needs a
// primitive, so each runs on every device and differentiates for free.
#include <cfloat>
#include <cmath>
#include <stdexcept>
#include <string>

#include "alloy/ops_math.h"
#include "ops/op_utils.h"

namespace alloy {

namespace {

// Integers and bool compute angles in float32 (MLX's rule); inexact dtypes keep theirs.
array scale_angle(const array& a, double factor, SD s) {
  array x = is_inexact(a.dtype()) ? a : astype(a, float32, s);
  return multiply(x, array(factor, x.dtype()), s);
}

// The largest finite value of a floating dtype (numpy's finfo.max).
double finite_max(Dtype d) {
  switch (d) {
    case Dtype::float16: return 65504.0;
    case Dtype::bfloat16: return 3.3895313892515355e38;
    case Dtype::float32: return FLT_MAX;
    default: return DBL_MAX;
  }
}

void reject_complex(const array& a, const char* op) {
  if (is_complex(a.dtype())) {
    throw std::invalid_argument(std::string("[") + op + "] not supported for inputs of dtype complex64.");
  }
}

}  // namespace

array degrees(const array& a, SD s) { return scale_angle(a, 180.0 / M_PI, s); }
array radians(const array& a, SD s) { return scale_angle(a, M_PI / 180.0, s); }

array trunc(const array& a, SD s) {
  reject_complex(a, "trunc");
  if (!is_floating(a.dtype())) return a;  // integers and bool are already whole
  return where(less(a, array(0.0, a.dtype()), s), ceil(a, s), floor(a, s), s);
}

array positive(const array& a, SD) { return a; }

array logical_xor(const array& a, const array& b, SD s) {
  return not_equal(astype(a, bool_, s), astype(b, bool_, s), s);
}

std::vector<array> divmod(const array& a, const array& b, SD s) {
  if (is_complex(a.dtype()) || is_complex(b.dtype())) {
    throw std::invalid_argument("[divmod] not supported for inputs of dtype complex64.");
  }
  return {floor_divide(a, b, s), remainder(a, b, s)};
}

// Only floating dtypes hold infinities; every other dtype gives all false.
array isposinf(const array& a, SD s) {
  if (!is_floating(a.dtype())) return full(a.shape(), array(false), bool_, s);
  return equal(a, array(INFINITY, a.dtype()), s);
}

array isneginf(const array& a, SD s) {
  if (!is_floating(a.dtype())) return full(a.shape(), array(false), bool_, s);
  return equal(a, array(-INFINITY, a.dtype()), s);
}

array nan_to_num(const array& a, double nan, std::optional<double> posinf, std::optional<double> neginf, SD s) {
  reject_complex(a, "nan_to_num");
  if (!is_floating(a.dtype())) return a;
  const Dtype t = a.dtype();
  array hi(posinf.value_or(finite_max(t)), t);
  array lo(neginf.value_or(-finite_max(t)), t);
  array out = where(isnan(a, s), array(nan, t), a, s);
  out = where(isposinf(a, s), hi, out, s);
  return where(isneginf(a, s), lo, out, s);
}

// ---- dtype utilities

bool can_cast(Dtype from, Dtype to) { return promote_types(from, to) == to; }

Dtype result_type(const std::vector<Dtype>& dtypes) {
  if (dtypes.empty()) throw std::invalid_argument("[result_type] At least one array or dtype is required.");
  Dtype out = dtypes[0];
  for (size_t i = 1; i < dtypes.size(); ++i) out = promote_types(out, dtypes[i]);
  return out;
}

// ---- counts

array count_nonzero(const array& a, const Axes& axes, bool keepdims, SD s) {
  array nonzero = not_equal(a, zeros({}, a.dtype(), s), s);
  return astype(sum(nonzero, axes, keepdims, s), int32, s);
}

array count_nonzero(const array& a, bool keepdims, SD s) {
  array nonzero = not_equal(a, zeros({}, a.dtype(), s), s);
  return astype(sum(nonzero, keepdims, s), int32, s);
}

std::pair<array, array> minmax(const array& a, const Axes& axes, bool keepdims, SD s) {
  return {min(a, axes, keepdims, s), max(a, axes, keepdims, s)};
}

std::pair<array, array> minmax(const array& a, bool keepdims, SD s) {
  return {min(a, keepdims, s), max(a, keepdims, s)};
}

// ---- windows: numpy's symmetric definitions over n = 0 .. M-1, in float32.

namespace {

// 2*pi*n/(M-1) for n = 0 .. M-1 (M >= 2).
array window_phase(int M, SD s) {
  array n = arange(0.0, static_cast<double>(M), 1.0, float32, s);
  return multiply(n, array(static_cast<float>(2.0 * M_PI / (M - 1))), s);
}

// An empty window for M < 1, a single 1 for M == 1, else `body()`.
template <typename F>
array window(int M, SD s, F body) {
  if (M < 1) return zeros({0}, float32, s);
  if (M == 1) return ones({1}, float32, s);
  return body();
}

array cosine_window(int M, float a0, float a1, float a2, SD s) {
  return window(M, s, [&] {
    array phase = window_phase(M, s);
    array w = subtract(array(a0), multiply(array(a1), cos(phase, s), s), s);
    if (a2 != 0.0f) w = add(w, multiply(array(a2), cos(multiply(phase, array(2.0f), s), s), s), s);
    return w;
  });
}

}  // namespace

array hamming(int M, SD s) { return cosine_window(M, 0.54f, 0.46f, 0.0f, s); }
array hanning(int M, SD s) { return cosine_window(M, 0.5f, 0.5f, 0.0f, s); }
array blackman(int M, SD s) { return cosine_window(M, 0.42f, 0.5f, 0.08f, s); }

array bartlett(int M, SD s) {
  return window(M, s, [&] {
    array n = arange(0.0, static_cast<double>(M), 1.0, float32, s);
    array r = subtract(multiply(n, array(2.0f / static_cast<float>(M - 1)), s), array(1.0f), s);
    return subtract(array(1.0f), abs(r, s), s);
  });
}

}  // namespace alloy
