// mx.random: keys, the global key sequence, and the distributions, built as
// ops on RandomBits so every backend produces the same streams.
#include "alloy/random.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>

#include "alloy/ops.h"
#include "alloy/ops_math.h"
#include "alloy/ops_sort.h"
#include "ops/op_utils.h"
#include "primitives/random.h"

namespace alloy::random {

namespace {

// The global key state: each draw splits it into (next state, key used).
class KeySequence {
 public:
  KeySequence() : key_(key(static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()))) {}
  void seed(uint64_t s) {
    std::lock_guard<std::mutex> lock(mutex_);
    key_ = key(s);
  }
  array next() {
    std::lock_guard<std::mutex> lock(mutex_);
    auto [state, used] = split(key_);
    // Evaluated now, so the state never grows into a long lazy chain.
    state.eval();
    key_ = state;
    return used;
  }
  array current() {
    std::lock_guard<std::mutex> lock(mutex_);
    return key_;
  }
  void replace(const array& k) {
    std::lock_guard<std::mutex> lock(mutex_);
    key_ = k;
  }
  static KeySequence& global() {
    static KeySequence* seq = new KeySequence();  // outlives static arrays at exit
    return *seq;
  }

 private:
  std::mutex mutex_;
  array key_;
};

array resolve_key(const Key& k) { return k ? *k : KeySequence::global().next(); }

void check_floating(Dtype dtype, const char* op) {
  if (!is_floating(dtype)) {
    throw std::invalid_argument(std::string("[") + op + "] needs a real floating point dtype, got " +
                                dtype_name(dtype) + ".");
  }
}

// The largest value below 1 in `dtype` (uniform samples stay below it).
double below_one(Dtype dtype) {
  switch (size_of(dtype)) {
    case 2: return dtype == Dtype::bfloat16 ? 1.0 - std::ldexp(1.0, -8) : 1.0 - std::ldexp(1.0, -11);
    case 4: return std::nextafter(1.0f, 0.0f);
    default: return std::nextafter(1.0, 0.0);
  }
}

Shape without_axis(Shape shape, int axis) {
  shape.erase(shape.begin() + axis);
  return shape;
}

}  // namespace

array key(uint64_t seed) {
  return array({static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(seed & 0xffffffffu)}, Dtype::uint32);
}

void seed(uint64_t s) { KeySequence::global().seed(s); }

array global_key() { return KeySequence::global().current(); }

void set_global_key(const array& k) {
  if (k.dtype() != Dtype::uint32 || k.shape() != Shape{2}) {
    throw std::invalid_argument("[random.state] The state must be a key: uint32 of shape (2,).");
  }
  KeySequence::global().replace(k);
}

array bits(const Shape& shape, int width, const Key& key_in, SD s) {
  if (width != 1 && width != 2 && width != 4) {
    throw std::invalid_argument("[bits] width must be 1, 2 or 4 bytes, got " + std::to_string(width) + ".");
  }
  for (auto d : shape) {
    if (d < 0) throw std::invalid_argument("[bits] negative dimension in shape " + shape_to_string(shape) + ".");
  }
  array k = resolve_key(key_in);
  if (k.dtype() != Dtype::uint32 || k.shape() != Shape{2}) {
    throw std::invalid_argument("[bits] a key is a uint32 array of shape (2,), got " +
                                std::string(dtype_name(k.dtype())) + " of shape " + shape_to_string(k.shape()) + ".");
  }
  Dtype dtype = width == 4 ? Dtype::uint32 : width == 2 ? Dtype::uint16 : Dtype::uint8;
  return array(shape, dtype, std::make_shared<RandomBits>(to_stream(s), width), {k});
}

array split(const array& k, int num, SD s) {
  if (num < 1) throw std::invalid_argument("[split] num must be positive, got " + std::to_string(num) + ".");
  return bits({num, 2}, 4, k, s);
}

std::pair<array, array> split(const array& k, SD s) {
  array keys = split(k, 2, s);
  return {reshape(slice(keys, {0, 0}, {1, 2}, {1, 1}, s), {2}, s),
          reshape(slice(keys, {1, 0}, {2, 2}, {1, 1}, s), {2}, s)};
}

array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype, const Key& key_in, SD s) {
  check_floating(dtype, "uniform");
  array lo = astype(low, dtype, s);
  array hi = astype(high, dtype, s);
  array range = subtract(hi, lo, s);
  Shape bounds = broadcast_shapes(lo.shape(), hi.shape());
  bool fits = true;
  try {
    fits = broadcast_shapes(shape, bounds) == shape;
  } catch (const std::invalid_argument&) {
    fits = false;
  }
  if (!fits) {
    throw std::invalid_argument("[uniform] cannot generate values of shape " + shape_to_string(shape) +
                                " from bounds of shape " + shape_to_string(bounds) + ".");
  }
  // bits / (2^32 - 1) is in [0, 1], capped at the dtype's largest value
  // below 1, in float32 (float64 for float64), then cast: 32 bits a sample
  // for every dtype, as MLX, so a key gives MLX's samples in half types too.
  const Dtype unit_type = dtype == Dtype::float64 ? Dtype::float64 : Dtype::float32;
  array u = bits(shape, 4, resolve_key(key_in), s);
  array unit = divide(u, array(4294967295.0, unit_type), s);
  unit = astype(minimum(unit, array(below_one(dtype), unit_type), s), dtype, s);
  return add(multiply(range, unit, s), lo, s);
}

array uniform(const Shape& shape, Dtype dtype, const Key& key_in, SD s) {
  return uniform(array(0.0, dtype), array(1.0, dtype), shape, dtype, key_in, s);
}

array normal(const Shape& shape, Dtype dtype, const std::optional<array>& loc, const std::optional<array>& scale,
             const Key& key_in, SD s) {
  if (dtype == Dtype::complex64) {
    // Real and imaginary parts each N(0, 1/2): erfinv of the same uniforms
    // without the sqrt(2), read in pairs as complex (MLX's layout).
    Shape pairs = shape;
    pairs.push_back(2);
    array u = uniform(array(std::nextafter(-1.0f, 0.0f)), array(1.0f), pairs, Dtype::float32, key_in, s);
    array out = squeeze(view(erfinv(u, s), Dtype::complex64, s), std::vector<int>{-1}, s);
    if (scale) out = multiply(*scale, out, s);
    if (loc) out = add(*loc, out, s);
    return out;
  }
  check_floating(dtype, "normal");
  // Inverse CDF, as MLX orders it (so a key gives MLX's samples): erfinv of
  // a float32 uniform in (-1, 1), cast, times sqrt(2) scale, plus loc.
  array u = uniform(array(std::nextafter(-1.0f, 0.0f)), array(1.0f), shape, Dtype::float32, key_in, s);
  array factor = array(std::sqrt(2.0), dtype);
  if (scale) factor = multiply(factor, astype(*scale, dtype, s), s);
  array out = multiply(factor, astype(erfinv(u, s), dtype, s), s);
  if (loc) out = add(astype(*loc, dtype, s), out, s);
  return out;
}

array randint(const array& low, const array& high, const Shape& shape, Dtype dtype, const Key& key_in, SD s) {
  if (!is_integral(dtype)) {
    throw std::invalid_argument(std::string("[randint] needs an integer dtype, got ") + dtype_name(dtype) + ".");
  }
  array lo = astype(low, Dtype::float32, s);
  array hi = astype(high, Dtype::float32, s);
  array u = floor(uniform(lo, hi, shape, Dtype::float32, key_in, s), s);
  // Rounding in float32 must not leave [low, high - 1].
  u = minimum(maximum(u, lo, s), subtract(hi, array(1.0f), s), s);
  return astype(u, dtype, s);
}

array bernoulli(const array& p, const std::optional<Shape>& shape, const Key& key_in, SD s) {
  Dtype dtype = is_floating(p.dtype()) ? p.dtype() : Dtype::float32;
  Shape out_shape = shape.value_or(p.shape());
  if (broadcast_shapes(out_shape, p.shape()) != out_shape) {
    throw std::invalid_argument("[bernoulli] probabilities of shape " + shape_to_string(p.shape()) +
                                " do not broadcast to shape " + shape_to_string(out_shape) + ".");
  }
  return less(uniform(out_shape, dtype, key_in, s), astype(p, dtype, s), s);
}

array truncated_normal(const array& lower, const array& upper, const std::optional<Shape>& shape, Dtype dtype,
                       const Key& key_in, SD s) {
  check_floating(dtype, "truncated_normal");
  array lo = astype(lower, dtype, s);
  array hi = astype(upper, dtype, s);
  Shape out_shape = shape.value_or(broadcast_shapes(lo.shape(), hi.shape()));
  // Inverse CDF restricted to [Phi(lower), Phi(upper)], in erf form.
  array sqrt2 = array(std::sqrt(2.0), dtype);
  array a = erf(divide(lo, sqrt2, s), s);
  array b = erf(divide(hi, sqrt2, s), s);
  array u = uniform(a, b, out_shape, dtype, key_in, s);
  array out = multiply(sqrt2, erfinv(u, s), s);
  return minimum(maximum(out, lo, s), hi, s);
}

array gumbel(const Shape& shape, Dtype dtype, const Key& key_in, SD s) {
  check_floating(dtype, "gumbel");
  // -log(-log(u)) with u in (0, 1).
  array u = uniform(array(std::numeric_limits<float>::min(), dtype), array(1.0, dtype), shape, dtype, key_in, s);
  return negative(log(negative(log(u, s), s), s), s);
}

array laplace(const Shape& shape, Dtype dtype, double loc, double scale, const Key& key_in, SD s) {
  check_floating(dtype, "laplace");
  // sign(u) * log1p(-|u|) for u uniform in (-1, 1), drawn in float32 (as MLX,
  // so a key gives MLX's samples), then cast, scaled and shifted in dtype.
  array u = uniform(array(std::nextafter(-1.0f, 0.0f)), array(1.0f), shape, Dtype::float32, key_in, s);
  array x = astype(multiply(sign(u, s), log1p(negative(abs(u, s), s), s), s), dtype, s);
  return add(multiply(x, array(scale, dtype), s), array(loc, dtype), s);
}

namespace {
// Samples of one distribution (`logits` 1-D) by its cumulative weights: one
// uniform draw per sample, where the Gumbel trick takes one per category.
// MLX 0.32 samples this way whenever the logits hold a single distribution,
// so a key gives MLX's tokens (mlx-lm's sampler draws from one row).
array categorical_by_cdf(const array& logits, const Shape& sample_shape, const Key& key, SD s) {
  const Dtype dtype = promote_types(logits.dtype(), Dtype::float32);
  array x = astype(logits, dtype, s);
  array m = max(x, false, s);
  // exp(x - m) is NaN where m is infinite: the weight is then even over the
  // entries equal to it.
  array w = where(isinf(m, s), astype(equal(x, m, s), dtype, s), exp(subtract(x, m, s), s), s);
  array cdf = cumsum(w, 0, /*reverse=*/false, /*inclusive=*/false, s);
  array u = multiply(uniform(sample_shape, Dtype::float32, key, s), sum(w, false, s), s);
  return subtract(searchsorted(cdf, u, "right", s), array(1u, Dtype::uint32), s);
}
}  // namespace

array categorical(const array& logits, int axis, const std::optional<Shape>& shape, std::optional<int> num_samples,
                  const Key& key_in, SD s) {
  const int ax = normalize_axis(axis, logits.ndim(), "categorical");
  if (shape && num_samples) {
    throw std::invalid_argument("[categorical] give at most one of shape and num_samples.");
  }
  const ShapeElem n = logits.shape(ax);
  const bool one_distribution = n > 0 && logits.size() == static_cast<size_t>(n);
  if (num_samples) {
    if (*num_samples < 0) throw std::invalid_argument("[categorical] num_samples must be non-negative.");
    // As MLX: the logits get a trailing axis of 1 and the samples take its
    // place, so noise of shape (..., C, ..., num_samples) is laid out as MLX's
    // and a key draws MLX's samples.
    Shape sample_shape = without_axis(logits.shape(), ax);
    sample_shape.push_back(*num_samples);
    return categorical(expand_dims(logits, -1, s), ax, sample_shape, std::nullopt, key_in, s);
  }
  Shape sample_shape = shape.value_or(without_axis(logits.shape(), ax));
  const int after = logits.ndim() - 1 - ax;  // dims after the category axis
  const int insert_at = static_cast<int>(sample_shape.size()) - after;
  if (insert_at < 0) {
    throw std::invalid_argument("[categorical] shape " + shape_to_string(sample_shape) +
                                " has too few dimensions for logits of shape " + shape_to_string(logits.shape()) + ".");
  }
  Shape noise_shape = sample_shape;
  noise_shape.insert(noise_shape.begin() + insert_at, logits.shape(ax));
  if (broadcast_shapes(noise_shape, logits.shape()) != noise_shape) {
    throw std::invalid_argument("[categorical] shape " + shape_to_string(sample_shape) +
                                " is not compatible with logits of shape " + shape_to_string(logits.shape()) + ".");
  }
  if (one_distribution && !sample_shape.empty()) return categorical_by_cdf(reshape(logits, {n}, s), sample_shape, key_in, s);
  return argmax(add(logits, gumbel(noise_shape, Dtype::float32, key_in, s), s), insert_at, false, s);
}

}  // namespace alloy::random
