// iter(array) -> mx.ArrayIterator over axis 0, and the mx.ArrayLike name.
#include "alloy/ops.h"
#include "bindings.h"

using namespace alloy;

namespace {

// Yields the array's entries along axis 0, each a view of one row (as MLX's
// iterator does).
struct ArrayIterator {
  array a;
  int index = 0;
};

array row(const array& a, int i) {
  Shape start(a.ndim(), 0), stop(a.shape()), steps(a.ndim(), 1);
  start[0] = i;
  stop[0] = i + 1;
  return squeeze(slice(a, start, stop, steps), std::vector<int>{0});
}

// mx.ArrayLike: MLX exposes it as a typing name (an object with
// __mlx_array__); an instance only holds what it was made from.
struct ArrayLike {
  nb::object obj;
};

}  // namespace

void init_array_iteration(nb::module_& m) {
  nb::class_<ArrayIterator>(m, "ArrayIterator", "Iterates over the first axis of an array.")
      .def("__iter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__next__", [](ArrayIterator& it) {
        if (it.index >= it.a.shape(0)) throw nb::stop_iteration();
        return row(it.a, it.index++);
      });
  def_array_method("__iter__", [](const array& a) {
    if (a.ndim() == 0) throw nb::type_error("iter() 0-dimensional array.");
    return ArrayIterator{a, 0};
  });
  nb::class_<ArrayLike>(m, "ArrayLike", "Any Python object which can be converted to an array (has __mlx_array__).")
      .def("__init__", [](ArrayLike* self, nb::object obj) { new (self) ArrayLike{std::move(obj)}; }, nb::arg("arg"));
}
