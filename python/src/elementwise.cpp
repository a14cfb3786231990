// Elementwise functions (mx.add, mx.exp, mx.where ...) and the array's
// arithmetic, comparison and bitwise operators and elementwise methods.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <utility>

#include "alloy/ops.h"
#include "bindings.h"
#include "convert.h"
#include "operands.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

namespace {

using UnaryFn = array (*)(const array&, SD);
using BinaryFn = array (*)(const array&, const array&, SD);

// Two operands with MLX's weak typing (operands.h).
std::pair<array, array> operands(nb::handle a, nb::handle b) { return py::binary_operands(a, b); }

// The other operand of an operator, or nothing when it is not array-like
// (then Python tries the reflected operator or falls back, e.g. a == None).
// A Python scalar's own conversion error (an int past the array's dtype) is
// raised: it is the user's, not a reason to try the reflected operator.
std::optional<array> operator_operand(nb::handle other, const array& self) {
  if (py::is_python_scalar(other)) return py::to_array_like(other, self);
  try {
    return py::to_array_like(other, self);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

struct UnaryEntry {
  const char* name;
  UnaryFn fn;
  const char* doc;
};

const UnaryEntry kUnary[] = {
    {"abs", [](const array& a, SD s) { return abs(a, s); }, "Elementwise absolute value."},
    {"negative", [](const array& a, SD s) { return negative(a, s); }, "Elementwise negation."},
    {"sign", [](const array& a, SD s) { return sign(a, s); }, "Elementwise sign (-1, 0, 1)."},
    {"exp", [](const array& a, SD s) { return exp(a, s); }, "Elementwise exponential."},
    {"expm1", [](const array& a, SD s) { return expm1(a, s); }, "Elementwise exp(x) - 1, accurate near 0."},
    {"log", [](const array& a, SD s) { return log(a, s); }, "Elementwise natural logarithm."},
    {"log1p", [](const array& a, SD s) { return log1p(a, s); }, "Elementwise log(1 + x), accurate near 0."},
    {"log2", [](const array& a, SD s) { return log2(a, s); }, "Elementwise base-2 logarithm."},
    {"log10", [](const array& a, SD s) { return log10(a, s); }, "Elementwise base-10 logarithm."},
    {"sin", [](const array& a, SD s) { return sin(a, s); }, "Elementwise sine."},
    {"cos", [](const array& a, SD s) { return cos(a, s); }, "Elementwise cosine."},
    {"tan", [](const array& a, SD s) { return tan(a, s); }, "Elementwise tangent."},
    {"arcsin", [](const array& a, SD s) { return arcsin(a, s); }, "Elementwise inverse sine."},
    {"arccos", [](const array& a, SD s) { return arccos(a, s); }, "Elementwise inverse cosine."},
    {"arctan", [](const array& a, SD s) { return arctan(a, s); }, "Elementwise inverse tangent."},
    {"sinh", [](const array& a, SD s) { return sinh(a, s); }, "Elementwise hyperbolic sine."},
    {"cosh", [](const array& a, SD s) { return cosh(a, s); }, "Elementwise hyperbolic cosine."},
    {"tanh", [](const array& a, SD s) { return tanh(a, s); }, "Elementwise hyperbolic tangent."},
    {"arcsinh", [](const array& a, SD s) { return arcsinh(a, s); }, "Elementwise inverse hyperbolic sine."},
    {"arccosh", [](const array& a, SD s) { return arccosh(a, s); }, "Elementwise inverse hyperbolic cosine."},
    {"arctanh", [](const array& a, SD s) { return arctanh(a, s); }, "Elementwise inverse hyperbolic tangent."},
    {"sqrt", [](const array& a, SD s) { return sqrt(a, s); }, "Elementwise square root."},
    {"rsqrt", [](const array& a, SD s) { return rsqrt(a, s); }, "Elementwise reciprocal square root."},
    {"square", [](const array& a, SD s) { return square(a, s); }, "Elementwise square."},
    {"reciprocal", [](const array& a, SD s) { return reciprocal(a, s); }, "Elementwise 1 / x."},
    {"floor", [](const array& a, SD s) { return floor(a, s); }, "Elementwise floor."},
    {"ceil", [](const array& a, SD s) { return ceil(a, s); }, "Elementwise ceiling."},
    {"sigmoid", [](const array& a, SD s) { return sigmoid(a, s); }, "Elementwise logistic sigmoid."},
    {"erf", [](const array& a, SD s) { return erf(a, s); }, "Elementwise error function."},
    {"erfinv", [](const array& a, SD s) { return erfinv(a, s); }, "Elementwise inverse error function."},
    {"logical_not", [](const array& a, SD s) { return logical_not(a, s); }, "Elementwise logical not."},
    {"isnan", [](const array& a, SD s) { return isnan(a, s); }, "Elementwise test for NaN."},
    {"isinf", [](const array& a, SD s) { return isinf(a, s); }, "Elementwise test for +-infinity."},
    {"isfinite", [](const array& a, SD s) { return isfinite(a, s); }, "Elementwise test for finite values."},
    {"bitwise_invert", [](const array& a, SD s) { return bitwise_invert(a, s); }, "Elementwise bitwise not."},
    {"real", [](const array& a, SD s) { return real(a, s); }, "Real part."},
    {"imag", [](const array& a, SD s) { return imag(a, s); }, "Imaginary part."},
    {"conjugate", [](const array& a, SD s) { return conjugate(a, s); }, "Complex conjugate."},
    {"conj", [](const array& a, SD s) { return conjugate(a, s); }, "Complex conjugate."},
};

struct BinaryEntry {
  const char* name;
  BinaryFn fn;
  const char* doc;
};

const BinaryEntry kBinary[] = {
    {"add", [](const array& a, const array& b, SD s) { return add(a, b, s); }, "Elementwise a + b."},
    {"subtract", [](const array& a, const array& b, SD s) { return subtract(a, b, s); }, "Elementwise a - b."},
    {"multiply", [](const array& a, const array& b, SD s) { return multiply(a, b, s); }, "Elementwise a * b."},
    {"divide", [](const array& a, const array& b, SD s) { return divide(a, b, s); }, "Elementwise true division."},
    {"floor_divide", [](const array& a, const array& b, SD s) { return floor_divide(a, b, s); },
     "Elementwise floor(a / b)."},
    {"remainder", [](const array& a, const array& b, SD s) { return remainder(a, b, s); },
     "Elementwise remainder with the sign of b (Python's %)."},
    {"power", [](const array& a, const array& b, SD s) { return power(a, b, s); }, "Elementwise a ** b."},
    {"maximum", [](const array& a, const array& b, SD s) { return maximum(a, b, s); },
     "Elementwise maximum (NaN propagates)."},
    {"minimum", [](const array& a, const array& b, SD s) { return minimum(a, b, s); },
     "Elementwise minimum (NaN propagates)."},
    {"equal", [](const array& a, const array& b, SD s) { return equal(a, b, s); }, "Elementwise a == b."},
    {"not_equal", [](const array& a, const array& b, SD s) { return not_equal(a, b, s); }, "Elementwise a != b."},
    {"less", [](const array& a, const array& b, SD s) { return less(a, b, s); }, "Elementwise a < b."},
    {"less_equal", [](const array& a, const array& b, SD s) { return less_equal(a, b, s); }, "Elementwise a <= b."},
    {"greater", [](const array& a, const array& b, SD s) { return greater(a, b, s); }, "Elementwise a > b."},
    {"greater_equal", [](const array& a, const array& b, SD s) { return greater_equal(a, b, s); },
     "Elementwise a >= b."},
    {"logical_and", [](const array& a, const array& b, SD s) { return logical_and(a, b, s); },
     "Elementwise logical and."},
    {"logical_or", [](const array& a, const array& b, SD s) { return logical_or(a, b, s); },
     "Elementwise logical or."},
    {"bitwise_and", [](const array& a, const array& b, SD s) { return bitwise_and(a, b, s); },
     "Elementwise bitwise and (integer and bool inputs)."},
    {"bitwise_or", [](const array& a, const array& b, SD s) { return bitwise_or(a, b, s); },
     "Elementwise bitwise or (integer and bool inputs)."},
    {"bitwise_xor", [](const array& a, const array& b, SD s) { return bitwise_xor(a, b, s); },
     "Elementwise bitwise xor (integer and bool inputs)."},
    {"left_shift", [](const array& a, const array& b, SD s) { return left_shift(a, b, s); },
     "Elementwise a << b (integer inputs)."},
    {"right_shift", [](const array& a, const array& b, SD s) { return right_shift(a, b, s); },
     "Elementwise a >> b (integer inputs)."},
    {"arctan2", [](const array& a, const array& b, SD s) { return arctan2(a, b, s); },
     "Elementwise arctan(a / b) in the right quadrant."},
    {"logaddexp", [](const array& a, const array& b, SD s) { return logaddexp(a, b, s); },
     "Elementwise log(exp(a) + exp(b)), without overflow."},
};

// Operators: name, reflected name, in-place name, function.
struct OperatorEntry {
  const char* op;
  const char* rop;
  const char* iop;
  BinaryFn fn;
};

// The bitwise operators refuse floating-point operands with a ValueError
// before the op is made, as MLX's do (the functions, mx.bitwise_and and
// friends, raise RuntimeError from the op, in MLX too).
void require_integer_operands(const char* words, const array& a, const array& b) {
  for (const array* x : {&a, &b}) {
    if (!is_integral(x->dtype()) && x->dtype() != Dtype::bool_) {
      throw std::invalid_argument(std::string("Floating point types not allowed with ") + words + " (got " +
                                  dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()) + ").");
    }
  }
}

const OperatorEntry kOperators[] = {
    {"__add__", "__radd__", "__iadd__", [](const array& a, const array& b, SD s) { return add(a, b, s); }},
    {"__sub__", "__rsub__", "__isub__", [](const array& a, const array& b, SD s) { return subtract(a, b, s); }},
    {"__mul__", "__rmul__", "__imul__", [](const array& a, const array& b, SD s) { return multiply(a, b, s); }},
    {"__truediv__", "__rtruediv__", "__itruediv__",
     [](const array& a, const array& b, SD s) { return divide(a, b, s); }},
    {"__floordiv__", "__rfloordiv__", "__ifloordiv__",
     [](const array& a, const array& b, SD s) { return floor_divide(a, b, s); }},
    {"__mod__", "__rmod__", "__imod__", [](const array& a, const array& b, SD s) { return remainder(a, b, s); }},
    {"__pow__", "__rpow__", "__ipow__", [](const array& a, const array& b, SD s) { return power(a, b, s); }},
    {"__and__", "__rand__", "__iand__",
     [](const array& a, const array& b, SD s) {
       require_integer_operands("bitwise and", a, b);
       return bitwise_and(a, b, s);
     }},
    {"__or__", "__ror__", "__ior__",
     [](const array& a, const array& b, SD s) {
       require_integer_operands("bitwise or", a, b);
       return bitwise_or(a, b, s);
     }},
    {"__xor__", "__rxor__", "__ixor__",
     [](const array& a, const array& b, SD s) {
       require_integer_operands("bitwise xor", a, b);
       return bitwise_xor(a, b, s);
     }},
    {"__lshift__", "__rlshift__", "__ilshift__",
     [](const array& a, const array& b, SD s) {
       require_integer_operands("left shift", a, b);
       return left_shift(a, b, s);
     }},
    {"__rshift__", "__rrshift__", "__irshift__",
     [](const array& a, const array& b, SD s) {
       require_integer_operands("right shift", a, b);
       return right_shift(a, b, s);
     }},
    // Comparisons are their own reflections with the sides swapped.
    {"__eq__", nullptr, nullptr, [](const array& a, const array& b, SD s) { return equal(a, b, s); }},
    {"__ne__", nullptr, nullptr, [](const array& a, const array& b, SD s) { return not_equal(a, b, s); }},
    {"__lt__", nullptr, nullptr, [](const array& a, const array& b, SD s) { return less(a, b, s); }},
    {"__le__", nullptr, nullptr, [](const array& a, const array& b, SD s) { return less_equal(a, b, s); }},
    {"__gt__", nullptr, nullptr, [](const array& a, const array& b, SD s) { return greater(a, b, s); }},
    {"__ge__", nullptr, nullptr, [](const array& a, const array& b, SD s) { return greater_equal(a, b, s); }},
};

// Array methods that are plain unary functions: a.exp() == mx.exp(a).
const char* const kUnaryMethods[] = {"abs",  "square", "sqrt", "rsqrt", "reciprocal", "exp",   "log",
                                     "log2", "log10",  "log1p", "sin",  "cos",        "conj"};

UnaryFn unary_fn(const char* name) {
  for (const auto& e : kUnary) {
    if (std::string(e.name) == name) return e.fn;
  }
  return nullptr;
}

}  // namespace

void init_elementwise(nb::module_& m) {
  for (const auto& e : kUnary) {
    UnaryFn fn = e.fn;
    m.def(
        e.name, [fn](nb::handle a, SD s) { return fn(py::to_array(a), s); }, "a"_a, nb::kw_only(),
        "stream"_a = nb::none(), e.doc);
  }
  for (const auto& e : kBinary) {
    BinaryFn fn = e.fn;
    m.def(
        e.name,
        [fn](nb::handle a, nb::handle b, SD s) {
          auto [x, y] = operands(a, b);
          return fn(x, y, s);
        },
        "a"_a, "b"_a, nb::kw_only(), "stream"_a = nb::none(), e.doc);
  }
  m.def(
      "round", [](nb::handle a, int decimals, SD s) { return round(py::to_array(a), decimals, s); }, "a"_a,
      "decimals"_a = 0, nb::kw_only(), "stream"_a = nb::none(),
      "Round to the given number of decimals, halves to even.");
  m.def(
      "where",
      [](nb::handle condition, nb::handle x, nb::handle y, SD s) {
        auto [xx, yy] = operands(x, y);
        return where(py::to_array(condition), xx, yy, s);
      },
      "condition"_a, "x"_a, "y"_a, nb::kw_only(), "stream"_a = nb::none(),
      "Elements of x where condition is true, else of y.");
  m.def(
      "clip",
      [](nb::handle a, nb::handle a_min, nb::handle a_max, SD s) {
        array x = py::to_array(a);
        std::optional<array> lo, hi;
        if (!a_min.is_none()) lo = py::to_array_like(a_min, x);
        if (!a_max.is_none()) hi = py::to_array_like(a_max, x);
        return clip(x, lo, hi, s);
      },
      "a"_a, "a_min"_a.none(), "a_max"_a.none(), nb::kw_only(), "stream"_a = nb::none(),
      "Clip values to [a_min, a_max] (either may be None).");
  m.def(
      "isclose",
      [](nb::handle a, nb::handle b, double rtol, double atol, bool equal_nan, SD s) {
        auto [x, y] = operands(a, b);
        return isclose(x, y, rtol, atol, equal_nan, s);
      },
      "a"_a, "b"_a, "rtol"_a = 1e-5, "atol"_a = 1e-8, nb::kw_only(), "equal_nan"_a = false,
      "stream"_a = nb::none(), "Elementwise |a - b| <= atol + rtol * |b|.");
  m.def(
      "allclose",
      [](nb::handle a, nb::handle b, double rtol, double atol, bool equal_nan, SD s) {
        auto [x, y] = operands(a, b);
        return all(isclose(x, y, rtol, atol, equal_nan, s), false, s);
      },
      "a"_a, "b"_a, "rtol"_a = 1e-5, "atol"_a = 1e-8, nb::kw_only(), "equal_nan"_a = false,
      "stream"_a = nb::none(), "Whether all elements are close (a bool array, as MLX).");
  m.def(
      "array_equal",
      [](nb::handle a, nb::handle b, bool equal_nan, SD s) {
        auto [x, y] = operands(a, b);
        if (x.shape() != y.shape()) return array(false);
        array eq = equal(x, y, s);
        if (equal_nan) eq = logical_or(eq, logical_and(isnan(x, s), isnan(y, s), s), s);
        return all(eq, false, s);
      },
      "a"_a, "b"_a, "equal_nan"_a = false, nb::kw_only(), "stream"_a = nb::none(),
      "Whether the arrays have the same shape and elements (a bool array, as MLX).");

  // ---- operators
  for (const auto& e : kOperators) {
    BinaryFn fn = e.fn;
    auto forward = [fn](const array& self, nb::handle other) -> nb::object {
      auto o = operator_operand(other, self);
      if (!o) return nb::borrow(Py_NotImplemented);
      return nb::cast(fn(self, *o, {}));
    };
    def_array_method(e.op, forward, nb::is_operator());
    if (e.rop) {
      def_array_method(
          e.rop,
          [fn](const array& self, nb::handle other) -> nb::object {
            auto o = operator_operand(other, self);
            if (!o) return nb::borrow(Py_NotImplemented);
            return nb::cast(fn(*o, self, {}));
          },
          nb::is_operator());
    }
    // `a += b` rebinds `a` to a new array (arrays are immutable), as MLX.
    if (e.iop) def_array_method(e.iop, forward, nb::is_operator());
  }
  def_array_method("__neg__", [](const array& a) { return negative(a); });
  def_array_method("__pos__", [](const array& a) { return a; });
  def_array_method("__abs__", [](const array& a) { return abs(a); });
  def_array_method("__invert__", [](const array& a) { return bitwise_invert(a); });

  // ---- elementwise methods
  for (const char* name : kUnaryMethods) {
    UnaryFn fn = unary_fn(name);
    def_array_method(name, [fn](const array& a, SD s) { return fn(a, s); }, nb::kw_only(), "stream"_a = nb::none());
  }
  def_array_method(
      "round", [](const array& a, int decimals, SD s) { return round(a, decimals, s); }, "decimals"_a = 0,
      nb::kw_only(), "stream"_a = nb::none());
  // a.real / a.imag are properties, as in MLX.
  nb::handle cls = nb::type<array>();
  // Python 2's names for division, which MLX's array also answers to.
  nb::setattr(cls, "__div__", nb::getattr(cls, "__truediv__"));
  nb::setattr(cls, "__rdiv__", nb::getattr(cls, "__rtruediv__"));
  nb::object property = nb::module_::import_("builtins").attr("property");
  nb::setattr(cls, "real", property(nb::cpp_function([](const array& a) { return real(a); })));
  nb::setattr(cls, "imag", property(nb::cpp_function([](const array& a) { return imag(a); })));
}
