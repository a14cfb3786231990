// Binary: derivatives (built from ops only). Each op gives its two partials
// d out / d a and d out / d b; vjp multiplies them by the cotangent, jvp sums
// partial * tangent over the differentiated inputs.
#include "primitives/binary.h"

#include <optional>

#include "alloy/ops.h"

namespace alloy {

bool Binary::is_equivalent(const Primitive& other) const {
  auto* o = dynamic_cast<const Binary*>(&other);
  return o && o->op_ == op_;
}

namespace {

// A partial derivative: zero, +1, -1, or an array factor.
struct Partial {
  enum Kind { Zero, One, MinusOne, Factor } kind = Zero;
  std::optional<array> factor;
  static Partial of(array f) { return {Factor, std::move(f)}; }
};

array apply(const Partial& p, const array& g, const array& primal, Stream s) {
  switch (p.kind) {
    case Partial::Zero: return zeros_like(primal, s);
    case Partial::One: return g;
    case Partial::MinusOne: return negative(g, s);
    case Partial::Factor: return multiply(g, *p.factor, s);
  }
  return g;
}

Partial partial(BinaryOp op, int arg, const array& a, const array& b, const array& out, Stream s) {
  const Dtype d = a.dtype();
  switch (op) {
    case BinaryOp::Add: return {Partial::One, {}};
    case BinaryOp::Subtract: return {arg == 0 ? Partial::One : Partial::MinusOne, {}};
    case BinaryOp::Multiply: return Partial::of(arg == 0 ? b : a);
    case BinaryOp::Divide:
      return Partial::of(arg == 0 ? reciprocal(b, s) : negative(divide(out, b, s), s));
    case BinaryOp::Remainder:
      if (arg == 0) return {Partial::One, {}};
      return Partial::of(negative(floor_divide(a, b, s), s));
    case BinaryOp::Power:
      if (arg == 0) return Partial::of(multiply(b, power(a, subtract(b, array(1.0, d), s), s), s));
      // d/db a^b = a^b log a, taken as 0 at a == 0 (where a^b is 0 or 1).
      return Partial::of(where(equal(a, array(0.0, d), s), array(0.0, d), multiply(log(a, s), out, s), s));
    // The cotangent goes to the larger (smaller) input; ties go to b, as MLX.
    case BinaryOp::Maximum: return Partial::of(arg == 0 ? greater(a, b, s) : less_equal(a, b, s));
    case BinaryOp::Minimum: return Partial::of(arg == 0 ? less(a, b, s) : greater_equal(a, b, s));
    case BinaryOp::ArcTan2: {
      array denom = add(square(a, s), square(b, s), s);
      return Partial::of(arg == 0 ? divide(b, denom, s) : negative(divide(a, denom, s), s));
    }
    case BinaryOp::LogAddExp:
      return Partial::of(arg == 0 ? sigmoid(subtract(a, b, s), s) : sigmoid(subtract(b, a, s), s));
    default: return {};  // floor_divide, comparisons, logical and bitwise ops
  }
}

}  // namespace

std::vector<array> Binary::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                               const std::vector<int>& argnums, const std::vector<array>& outputs) {
  std::vector<array> out;
  for (int arg : argnums) {
    Partial p = partial(op_, arg, primals[0], primals[1], outputs[0], stream());
    // Complex products and quotients: the cotangent times the conjugate
    // partial, MLX's convention (its power keeps the partial itself).
    if (p.kind == Partial::Factor && (op_ == BinaryOp::Multiply || op_ == BinaryOp::Divide)) {
      p.factor = conjugate(*p.factor, stream());  // no-op for real dtypes
    }
    out.push_back(apply(p, cotangents[0], primals[arg], stream()));
  }
  return out;
}

std::vector<array> Binary::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                               const std::vector<int>& argnums) {
  const array& a = primals[0];
  const array& b = primals[1];
  array y(a.shape(), binary_info(op_).result == BinaryResult::Bool ? Dtype::bool_ : a.dtype(),
          std::make_shared<Binary>(stream(), op_), {a, b});
  std::optional<array> total;
  for (size_t i = 0; i < argnums.size(); ++i) {
    Partial p = partial(op_, argnums[i], a, b, y, stream());
    if (p.kind == Partial::Zero) continue;
    array term = apply(p, tangents[i], y, stream());
    total = total ? add(*total, term, stream()) : term;
  }
  return {total ? *total : zeros_like(y, stream())};
}

}  // namespace alloy
