// Python's buffer protocol for mx.array, as MLX's arrays offer it:
// memoryview(a), bytes(a), np.frombuffer(a, ...), struct.unpack_from. The
// buffer is the evaluated array's own memory with its strides (a view, a
// broadcast), read-only like Alloy's numpy views (array_protocol in
// convert.cpp says why); a consumer that cannot take strides gets a
// row-major copy. Format codes are MLX's. Arrays in GPU memory and bfloat16
// arrays have no buffer (get_buffer says why; numpy then converts them
// through __array__).
#include "buffer_protocol.h"

#include <string>
#include <vector>

#include "alloy/array.h"
#include "alloy/dtype.h"
#include "convert.h"

using namespace alloy;

namespace {

const char* format_code(Dtype d) {
  switch (d) {
    case Dtype::bool_: return "?";
    case Dtype::uint8: return "B";
    case Dtype::uint16: return "H";
    case Dtype::uint32: return "I";
    case Dtype::uint64: return "Q";
    case Dtype::int8: return "b";
    case Dtype::int16: return "h";
    case Dtype::int32: return "i";
    case Dtype::int64: return "q";
    case Dtype::float16: return "e";
    case Dtype::bfloat16: break;  // refused in get_buffer
    case Dtype::float32: return "f";
    case Dtype::float64: return "d";
    case Dtype::complex64: return "Zf";
  }
  return "B";
}

// What a buffer keeps alive until it is released: the array whose memory it
// shows and the shape and strides it points to.
struct Exported {
  array a;
  std::vector<Py_ssize_t> shape, strides;
};

int get_buffer(PyObject* self, Py_buffer* view, int flags) {
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError,
                    "alloy.core.array buffers are read-only (Alloy's buffers never change once written); "
                    "np.array(a) gives a writable copy.");
    return -1;
  }
  Exported* e = nullptr;
  try {
    array a = *nb::inst_ptr<array>(nb::handle(self));
    // bfloat16 has no PEP 3118 code: MLX's "bfloat16" makes numpy, which
    // asks for a buffer first, fail on np.array(a). Refused here, numpy
    // goes on to __array__, which gives an ml_dtypes.bfloat16 array.
    if (a.dtype() == Dtype::bfloat16) {
      PyErr_SetString(PyExc_BufferError,
                      "alloy.core.array: bfloat16 has no buffer format code; np.array(a) gives an ml_dtypes.bfloat16 "
                      "array, and a.view(mx.uint16) a buffer of its bits.");
      return -1;
    }
    // GPU memory is not host memory, and a buffer of a host copy would let
    // np.array(a, copy=False), which numpy answers from a buffer first,
    // copy silently; refused, numpy goes on to __array__ (which copies, or
    // refuses copy=False). Known before evaluating.
    if (a.device().type != Device::cpu) {
      PyErr_SetString(PyExc_BufferError,
                      "alloy.core.array: the array lives in GPU memory, which offers no buffer; np.array(a) copies "
                      "it to the host.");
      return -1;
    }
    {
      nb::gil_scoped_release release;
      a.eval();
    }
    // Without PyBUF_STRIDES the consumer reads the memory as C-contiguous.
    const bool strided_ok = (flags & PyBUF_STRIDES) == PyBUF_STRIDES;
    if (!strided_ok && !a.flags().row_contiguous) a = py::host_row_major(a);
    e = new Exported{a, {}, {}};
    for (int i = 0; i < a.ndim(); ++i) {
      e->shape.push_back(a.shape(i));
      e->strides.push_back(static_cast<Py_ssize_t>(a.strides()[i] * static_cast<int64_t>(a.itemsize())));
    }
  } catch (const std::exception& ex) {
    delete e;
    PyErr_SetString(PyExc_RuntimeError, (std::string("[array buffer] ") + ex.what()).c_str());
    return -1;
  }
  const array& a = e->a;
  view->buf = a.size() ? a.raw_data() : nullptr;
  view->obj = Py_NewRef(self);
  view->len = static_cast<Py_ssize_t>(a.size() * a.itemsize());
  view->readonly = 1;
  view->itemsize = static_cast<Py_ssize_t>(a.itemsize());
  view->format = (flags & PyBUF_FORMAT) == PyBUF_FORMAT ? const_cast<char*>(format_code(a.dtype())) : nullptr;
  view->ndim = a.ndim();
  view->shape = (flags & PyBUF_ND) == PyBUF_ND ? e->shape.data() : nullptr;
  view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? e->strides.data() : nullptr;
  view->suboffsets = nullptr;
  view->internal = e;
  return 0;
}

void release_buffer(PyObject*, Py_buffer* view) { delete static_cast<Exported*>(view->internal); }

PyType_Slot slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(get_buffer)},
                       {Py_bf_releasebuffer, reinterpret_cast<void*>(release_buffer)},
                       {0, nullptr}};

}  // namespace

PyType_Slot* array_buffer_slots() { return slots; }
