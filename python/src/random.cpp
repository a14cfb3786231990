// mx.random: keys, the global seed and the distributions.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include "alloy/ops.h"
#include "alloy/ops_sort.h"
#include "alloy/random.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

namespace {

using py::shape_arg;

std::optional<Shape> optional_shape(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  return shape_arg(h);
}

random::Key key_arg(const std::optional<array>& k) { return k; }

}  // namespace

void init_random(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("random", "Pseudo-random numbers from threefry-2x32 keys (as MLX).");
  m.def("seed", [](uint64_t s) { random::seed(s); }, "seed"_a, "Seeds the global key sequence.");
  m.def("_global_key", &random::global_key, "The global key sequence's state (mx.random.state[0]).");
  m.def("_set_global_key", &random::set_global_key, "key"_a, "Replaces the global key sequence's state.");
  m.def("key", [](uint64_t s) { return random::key(s); }, "seed"_a, "A key (uint32, shape (2,)) from a seed.");
  m.def("split", [](const array& key, int num, SD s) { return random::split(key, num, s); }, "key"_a, "num"_a = 2,
        nb::kw_only(), "stream"_a = nb::none(), "num new keys, shape (num, 2).");
  m.def("bits",
        [](nb::handle shape, int width, std::optional<array> key, SD s) {
          return random::bits(shape_arg(shape), width, key_arg(key), s);
        },
        "shape"_a = nb::list(), "width"_a = 4, "key"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none());
  m.def("uniform",
        [](nb::handle low, nb::handle high, nb::handle shape, std::optional<Dtype> dtype, std::optional<array> key, SD s) {
          return random::uniform(py::to_array(low), py::to_array(high), shape_arg(shape),
                                 dtype.value_or(Dtype::float32), key_arg(key), s);
        },
        "low"_a = 0.0, "high"_a = 1.0, "shape"_a = nb::list(), "dtype"_a = Dtype::float32, "key"_a = nb::none(),
        nb::kw_only(), "stream"_a = nb::none(), "Uniform samples in [low, high).");
  m.def("normal",
        [](nb::handle shape, std::optional<Dtype> dtype, nb::handle loc, nb::handle scale, std::optional<array> key,
           SD s) {
          std::optional<array> l, sc;
          if (!loc.is_none()) l = py::to_array(loc);
          if (!scale.is_none()) sc = py::to_array(scale);
          return random::normal(shape_arg(shape), dtype.value_or(Dtype::float32), l, sc, key_arg(key), s);
        },
        "shape"_a = nb::list(), "dtype"_a = Dtype::float32, "loc"_a = nb::none(), "scale"_a = nb::none(),
        "key"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none(), "Normal samples (mean loc, std scale).");
  m.def("randint",
        [](nb::handle low, nb::handle high, nb::handle shape, std::optional<Dtype> dtype, std::optional<array> key, SD s) {
          return random::randint(py::to_array(low), py::to_array(high), shape_arg(shape), dtype.value_or(Dtype::int32),
                                 key_arg(key), s);
        },
        "low"_a, "high"_a, "shape"_a = nb::list(), "dtype"_a = Dtype::int32, "key"_a = nb::none(), nb::kw_only(),
        "stream"_a = nb::none(), "Random integers in [low, high).");
  m.def("bernoulli",
        [](nb::handle p, nb::handle shape, std::optional<array> key, SD s) {
          return random::bernoulli(py::to_array(p), optional_shape(shape), key_arg(key), s);
        },
        "p"_a = 0.5, "shape"_a = nb::none(), "key"_a = nb::none(), nb::kw_only(), "stream"_a = nb::none());
  m.def("truncated_normal",
        [](nb::handle lower, nb::handle upper, nb::handle shape, std::optional<Dtype> dtype, std::optional<array> key,
           SD s) {
          return random::truncated_normal(py::to_array(lower), py::to_array(upper), optional_shape(shape),
                                          dtype.value_or(Dtype::float32), key_arg(key), s);
        },
        "lower"_a, "upper"_a, "shape"_a = nb::none(), "dtype"_a = Dtype::float32, "key"_a = nb::none(),
        nb::kw_only(), "stream"_a = nb::none());
  m.def("gumbel",
        [](nb::handle shape, std::optional<Dtype> dtype, std::optional<array> key, SD s) {
          return random::gumbel(shape_arg(shape), dtype.value_or(Dtype::float32), key_arg(key), s);
        },
        "shape"_a = nb::list(), "dtype"_a = Dtype::float32, "key"_a = nb::none(), nb::kw_only(),
        "stream"_a = nb::none());
  // As MLX, stream is positional here too.
  m.def("laplace",
        [](nb::handle shape, std::optional<Dtype> dtype, double loc, double scale, std::optional<array> key, SD s) {
          return random::laplace(shape_arg(shape), dtype.value_or(Dtype::float32), loc, scale, key_arg(key), s);
        },
        "shape"_a = nb::list(), "dtype"_a = Dtype::float32, "loc"_a = 0.0, "scale"_a = 1.0, "key"_a = nb::none(),
        "stream"_a = nb::none(),
        nb::sig("def laplace(shape: Sequence[int] = [], dtype: Dtype | None = float32, loc: float = 0.0, "
                "scale: float = 1.0, key: array | None = None, stream: Stream | Device | None = None) -> array"),
        "Samples of a Laplace distribution with mean loc and scale b.");
  m.def("categorical",
        [](const array& logits, int axis, nb::handle shape, std::optional<int> num_samples, std::optional<array> key,
           SD s) { return random::categorical(logits, axis, optional_shape(shape), num_samples, key_arg(key), s); },
        "logits"_a, "axis"_a = -1, "shape"_a = nb::none(), "num_samples"_a = nb::none(), "key"_a = nb::none(),
        nb::kw_only(), "stream"_a = nb::none());
  // As MLX, every argument of permutation may be positional (stream too).
  m.def("permutation",
        [](nb::handle x, int axis, std::optional<array> key, SD s) {
          if (PyLong_Check(x.ptr())) return random::permutation(nb::cast<int>(x), key_arg(key), s);
          if (!nb::isinstance<array>(x)) throw nb::type_error("[permutation] x must be an int or an array.");
          return random::permutation(nb::cast<array>(x), axis, key_arg(key), s);
        },
        "x"_a, "axis"_a = 0, "key"_a = nb::none(), "stream"_a = nb::none(),
        "A random permutation of arange(x) (uint32) for an int x, else x shuffled along axis.");
}
