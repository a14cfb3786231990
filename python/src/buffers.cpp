// Arrays and their memory: mx.from_dlpack (import through DLPack) and
// mx.get_array_buffer_size (bytes of the distinct buffers behind arrays).
#include <nanobind/stl/optional.h>

#include <stdexcept>
#include <unordered_set>

#include "alloy/ops.h"
#include "bindings.h"
#include "convert.h"
#include "trees.h"

using namespace alloy;
using namespace nb::literals;

namespace {

array from_dlpack(nb::handle x, std::optional<bool> copy_mode) {
  // The buffer protocol counts too (numpy scalars), as for MLX.
  if (!nb::hasattr(x, "__dlpack__") && !PyObject_CheckBuffer(x.ptr())) {
    throw nb::type_error((std::string("[from_dlpack] Expected an object implementing __dlpack__, got ") +
                          nb::type_name(x.type()).c_str() + ".")
                             .c_str());
  }
  // As MLX's CPU build: host memory is always copied, so copy=False cannot be honoured.
  if (copy_mode && !*copy_mode) throw std::invalid_argument("[convert] Cannot import a CPU array without a copy.");
  array a = py::to_array(x);
  // MLX imports float64 as float32, as for numpy input.
  if (a.dtype() == float64) a = astype(a, float32);
  array out = copy(a);
  {
    nb::gil_scoped_release release;
    out.eval();
  }
  return out;
}

size_t array_buffer_size(nb::args args) {
  std::vector<array> leaves;
  py::tree_flatten(args, leaves);
  std::unordered_set<const void*> seen;
  size_t total = 0;
  for (const array& a : leaves) {
    if (!a.is_evaluated()) {
      throw std::invalid_argument("[get_array_buffer_size] Arrays must be evaluated before querying buffer size.");
    }
    // Views share their source's buffer: count each buffer once.
    if (seen.insert(a.data_shared_ptr().get()).second) total += a.buffer().size;
  }
  return total;
}

}  // namespace

void init_buffers(nb::module_& m) {
  m.def("from_dlpack", &from_dlpack, nb::arg(), nb::kw_only(), "copy"_a.none() = nb::none(),
        nb::sig("def from_dlpack(x: object, /, *, copy: bool | None = None) -> array"),
        "An array holding a copy of the data of an object that implements __dlpack__ (numpy, PyTorch, "
        "alloy arrays ...). copy=False is refused: host memory is always copied, as in MLX's CPU build.");
  m.def("get_array_buffer_size", &array_buffer_size,
        nb::sig("def get_array_buffer_size(*args) -> int"),
        "Bytes of the distinct buffers behind the arrays in args (arrays or trees of them; other leaves are "
        "ignored). The arrays must be evaluated.");
}
