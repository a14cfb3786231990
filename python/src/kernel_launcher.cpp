// The kernel launcher: instances of a vectorcall type (callable_object.h)
// whose keywords are matched by identity (keyword_call.h, both shared with
// alloy.mlx's kernel), and whose call's vectors are reused between calls on
// a thread: a tiny launch pays for its arrays and little else. A generic
// binding spent about as long converting arguments as building the node.
#include "kernel_launcher.h"

#include <array>
#include <optional>

#include "callable_object.h"
#include "convert.h"
#include "keyword_call.h"
#include "stream_or_device.h"

using namespace alloy;
using alloy::py::for_each_item;
using alloy::py::to_int64;

namespace {

// ---- converting arguments ---------------------------------------------

Dtype to_dtype(const char* api, PyObject* d) {
  Dtype dtype;
  if (!py::dtype_of(d, dtype)) throw nb::type_error((std::string("[") + api + "] output_dtypes must hold Dtypes.").c_str());
  return dtype;
}

fast::TemplateArg to_template_value(const char* api, const std::string& name, PyObject* v) {
  if (Dtype d; py::dtype_of(v, d)) return d;
  if (PyBool_Check(v)) return v == Py_True;
  if (PyLong_Check(v)) return py::to_int32(api, v, "template value for '" + name + "'");
  throw nb::type_error((std::string("[") + api + "] template value for '" + name +
                        "' must be a Dtype, int or bool, not " + Py_TYPE(v)->tp_name + ".").c_str());
}

// ---- the keywords -----------------------------------------------------

enum Keyword { kInputs, kOutputShapes, kOutputDtypes, kGrid, kThreadgroup, kTemplate, kInitValue, kVerbose,
               kEnsureRowContiguous, kStream, kTimeout, kKeywordCount };
constexpr const char* kKeywordNames[kKeywordCount] = {
    "inputs", "output_shapes", "output_dtypes", "grid", "threadgroup",
    "template", "init_value", "verbose", "ensure_row_contiguous", "stream", "timeout"};
// The first five must be given; made once the module imports (init_kernel_launcher).
const py::KeywordOnly<kKeywordCount>* keywords = nullptr;

fast::Dims3 to_dims(const char* api, PyObject* h, const char* what) {
  const std::array<int, 3> d = py::to_dims(api, h, what);
  return {d[0], d[1], d[2]};
}

// ---- the type -----------------------------------------------------------

using Launcher = py::CallableObject<fast::CustomKernelFunction>;

// A call's vectors, kept per thread so steady launches reuse their storage.
// A conversion can run Python code (a size's __index__) that launches
// again: that nested call gets fresh storage.
struct CallStorage {
  fast::KernelCall call;
  bool in_use = false;
};

void reset(fast::KernelCall& call) {
  call.inputs.clear();
  call.output_dtypes.clear();
  call.template_args.clear();
  call.init_value.reset();
  call.verbose = false;
  call.ensure_row_contiguous.reset();
  call.stream = StreamOrDevice();
  call.timeout.reset();
}

nb::object launch(Launcher& self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  const char* api = self.api;
  PyObject* given[kKeywordCount];
  keywords->match(self.name, "inputs=, output_shapes=, output_dtypes=, grid=, threadgroup= (and template=, "
                  "init_value=, verbose=, ensure_row_contiguous=, stream=, timeout=)", args, nargsf, kwnames, given);
  auto given_or_none = [&](int k) { return given[k] && given[k] != Py_None ? given[k] : nullptr; };

  thread_local CallStorage reused;
  CallStorage fresh;
  CallStorage& storage = reused.in_use ? fresh : reused;
  storage.in_use = true;
  struct Release {
    CallStorage& s;
    ~Release() {
      s.call.inputs.clear();  // the arrays, not the storage
      s.call.template_args.clear();
      s.in_use = false;
    }
  } release{storage};
  fast::KernelCall& call = storage.call;

  reset(call);
  for_each_item(api, given[kInputs], "inputs", [&](PyObject* in) {
    if (nb::isinstance<array>(nb::handle(in))) {
      call.inputs.push_back(*nb::inst_ptr<array>(nb::handle(in)));
    } else {
      call.inputs.push_back(py::to_array(in));
    }
  });
  size_t n_shapes = 0;  // the Shapes already there keep their storage
  for_each_item(api, given[kOutputShapes], "output_shapes", [&](PyObject* s) {
    if (n_shapes == call.output_shapes.size()) call.output_shapes.emplace_back();
    Shape& shape = call.output_shapes[n_shapes++];
    shape.clear();
    for_each_item(api, s, "each output shape", [&](PyObject* d) {
      shape.push_back(static_cast<ShapeElem>(py::to_int32(api, d, "a dimension in output_shapes")));
    });
  });
  call.output_shapes.resize(n_shapes);
  for_each_item(api, given[kOutputDtypes], "output_dtypes", [&](PyObject* d) { call.output_dtypes.push_back(to_dtype(api, d)); });
  call.grid = to_dims(api, given[kGrid], "grid");
  call.threadgroup = to_dims(api, given[kThreadgroup], "threadgroup");
  if (PyObject* t = given_or_none(kTemplate)) {
    for_each_item(api, t, "template", [&](PyObject* item) {
      if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(item, 0))) {
        throw nb::type_error((std::string("[") + api + "] template entries must be (name, value) tuples.").c_str());
      }
      std::string name = nb::cast<std::string>(nb::handle(PyTuple_GET_ITEM(item, 0)));
      fast::TemplateArg value = to_template_value(api, name, PyTuple_GET_ITEM(item, 1));
      call.template_args.emplace_back(std::move(name), value);
    });
  }
  if (PyObject* v = given_or_none(kInitValue)) {
    double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred()) throw nb::python_error();
    call.init_value = d;
  }
  if (PyObject* v = given_or_none(kVerbose)) {
    int truth = PyObject_IsTrue(v);
    if (truth < 0) throw nb::python_error();
    call.verbose = truth;
  }
  if (PyObject* v = given_or_none(kEnsureRowContiguous)) {
    int truth = PyObject_IsTrue(v);
    if (truth < 0) throw nb::python_error();
    call.ensure_row_contiguous = truth != 0;
  }
  if (PyObject* v = given_or_none(kTimeout)) {
    double t = PyFloat_AsDouble(v);
    if (t == -1.0 && PyErr_Occurred()) throw nb::python_error();
    call.timeout = t;
  }
  if (PyObject* v = given_or_none(kStream)) {
    nb::detail::make_caster<StreamOrDevice> caster;
    if (!caster.from_python(v, static_cast<uint8_t>(nb::detail::cast_flags::convert), nullptr)) {
      throw nb::type_error((std::string("[") + api + "] stream must be a Stream, a Device or None, not " +
                            Py_TYPE(v)->tp_name + ".").c_str());
    }
    call.stream = caster.value;
  }

  std::vector<array> outs = (*self.fn)(call);
  return alloy::py::list_of(std::move(outs));
}

using LauncherType = py::CallableType<fast::CustomKernelFunction, launch>;

}  // namespace

nb::object make_kernel_launcher(const char* api, fast::CustomKernelFunction fn, const std::string& name) {
  return LauncherType::make(api, std::move(fn), name);
}

void init_kernel_launcher(nb::module_& m) {
  keywords = new py::KeywordOnly<kKeywordCount>(kKeywordNames, kThreadgroup + 1);  // never freed
  PyTypeObject* launcher_type = LauncherType::create(
      "alloy.core.fast.KernelLauncher", "<%s launcher '%U'>",
      "k(*, inputs, output_shapes, output_dtypes, grid, threadgroup, template=None, init_value=None, verbose=False, "
      "ensure_row_contiguous=None, stream=None, timeout=None): launches the kernel and returns a list of lazy output "
      "arrays; a launch on the CPU running longer than timeout seconds is stopped (TimeoutError).");
  m.attr("KernelLauncher") = nb::handle(reinterpret_cast<PyObject*>(launcher_type));
}
