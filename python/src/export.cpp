// mx.export_function / import_function / exporter / FunctionExporter (as
// mlx.core 0.32.4; the traces and the file are C++, src/export). Inputs are
// arrays given as *args/**kwargs, or as one tuple/list and/or one dict.
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "alloy/compile.h"
#include "alloy/export.h"
#include "bindings.h"
#include "paths.h"

using namespace alloy;
using namespace nb::literals;

namespace {

std::string file_path(nb::handle file, const char* op) {
  if (is_path(file)) return path_of(file);
  if (PyCallable_Check(file.ptr())) {
    throw std::invalid_argument(std::string("[") + op +
                                "] Exporting to a callback is not supported by Alloy; give a file path.");
  }
  throw nb::type_error((std::string("[") + op + "] The file must be a path.").c_str());
}

array as_input(nb::handle v, const char* op, const std::string& what) {
  if (!nb::isinstance<array>(v)) {
    throw std::invalid_argument(std::string("[") + op + "] Inputs must be arrays (or one tuple of arrays and/or one "
                                "dict of str to array); " + what + " is " + Py_TYPE(v.ptr())->tp_name + ".");
  }
  return nb::cast<array>(v);
}

// MLX's two calling forms: arrays as *args/**kwargs, or (tuple, dict).
std::pair<ExportArgs, ExportKwargs> inputs_of(nb::args args, nb::kwargs kwargs, const char* op) {
  std::vector<nb::handle> pos(args.begin(), args.end());
  nb::dict kw = kwargs;
  const bool single_tuple = !pos.empty() && (nb::isinstance<nb::tuple>(pos[0]) || nb::isinstance<nb::list>(pos[0]));
  const bool trailing_dict = !pos.empty() && nb::isinstance<nb::dict>(pos.back());
  if (trailing_dict && kwargs.size() == 0 && pos.size() <= 2 && (pos.size() == 1 || single_tuple)) {
    kw = nb::borrow<nb::dict>(pos.back());
    pos.pop_back();
  }
  if (pos.size() == 1 && (nb::isinstance<nb::tuple>(pos[0]) || nb::isinstance<nb::list>(pos[0]))) {
    nb::handle seq = pos[0];
    pos.clear();
    for (nb::handle v : nb::borrow<nb::sequence>(seq)) pos.push_back(v);
  } else {
    for (nb::handle v : pos) {
      if (nb::isinstance<nb::tuple>(v) || nb::isinstance<nb::list>(v) || nb::isinstance<nb::dict>(v)) {
        throw std::invalid_argument(std::string("[") + op + "] Inputs can either be a variable number of positional "
                                    "and keyword arrays or a single tuple and/or dictionary of arrays.");
      }
    }
  }
  ExportArgs a;
  for (size_t i = 0; i < pos.size(); ++i) a.push_back(as_input(pos[i], op, "positional input " + std::to_string(i)));
  ExportKwargs k;
  for (auto [key, v] : kw) {
    if (!nb::isinstance<nb::str>(key)) throw std::invalid_argument(std::string("[") + op + "] Keyword names must be strings.");
    const std::string name = nb::cast<std::string>(key);
    k.emplace(name, as_input(v, op, "keyword input '" + name + "'"));
  }
  return {std::move(a), std::move(k)};
}

// The Python function as one taking and returning arrays.
ExportableFunction wrap(nb::callable fun) {
  return [fun](const ExportArgs& args, const ExportKwargs& kwargs) {
    nb::list pos;
    for (const array& a : args) pos.append(nb::cast(a));
    nb::dict kw;
    for (const auto& [name, a] : kwargs) kw[nb::str(name.c_str())] = nb::cast(a);
    nb::object out = fun(*nb::tuple(pos), **kw);
    std::vector<array> outs;
    if (nb::isinstance<array>(out)) {
      outs.push_back(nb::cast<array>(out));
    } else if (nb::isinstance<nb::tuple>(out) || nb::isinstance<nb::list>(out)) {
      for (nb::handle v : nb::borrow<nb::sequence>(out)) {
        if (!nb::isinstance<array>(v)) {
          throw std::invalid_argument("[export_function] The function must return an array or a tuple/list of arrays.");
        }
        outs.push_back(nb::cast<array>(v));
      }
    } else {
      throw std::invalid_argument("[export_function] The function must return an array or a tuple/list of arrays.");
    }
    return outs;
  };
}

nb::tuple as_tuple(const std::vector<array>& outs) {
  nb::list l;
  for (const array& a : outs) l.append(nb::cast(a));
  return nb::tuple(l);
}

}  // namespace

void init_export(nb::module_& m) {
  // The core of mx.compile (python/alloy/_core/transforms.py adds trees,
  // constants and inputs=/outputs= state): a function of a flat list of
  // arrays, traced once per signature.
  m.def(
      "_compile_flat",
      [](nb::callable fun, bool shapeless) {
        Function f = [fun](const std::vector<array>& xs) {
          nb::list l;
          for (const array& x : xs) l.append(nb::cast(x));
          return nb::cast<std::vector<array>>(fun(l));
        };
        return compile(std::move(f), shapeless);
      },
      "fun"_a, "shapeless"_a = false);

  nb::class_<FunctionExporter>(m, "FunctionExporter",
                               "Exports traces of one function to a file; made by mx.exporter. A context manager: "
                               "leaving the with-block closes it.")
      .def(
          "__call__",
          [](FunctionExporter& e, nb::args args, nb::kwargs kwargs) {
            auto [a, k] = inputs_of(args, kwargs, "export_function");
            e(a, k);
          },
          "Traces the function on these example inputs and adds the trace to the file.")
      .def("close", &FunctionExporter::close, "No more traces.")
      .def("__enter__", [](nb::handle self) { return self; }, nb::rv_policy::reference)
      .def("__exit__", [](FunctionExporter& e, nb::args) { e.close(); });

  m.def(
      "exporter",
      [](nb::handle file, nb::callable fun, bool shapeless, std::optional<std::string> metadata) {
        return FunctionExporter(file_path(file, "export_function"), wrap(fun), shapeless, metadata.value_or(""));
      },
      "file"_a, "fun"_a, nb::kw_only(), "shapeless"_a = false, "metadata"_a.none() = nb::none(),
      nb::sig("def exporter(file: str, fun: Callable, *, shapeless: bool = False, metadata: str | None = None) "
              "-> FunctionExporter"),
      "A callable object that exports several traces of `fun` to one file.");

  m.def(
      "export_function",
      [](nb::handle file, nb::callable fun, nb::args args, bool shapeless, std::optional<std::string> metadata,
         nb::kwargs kwargs) {
        auto [a, k] = inputs_of(args, kwargs, "export_function");
        export_function(file_path(file, "export_function"), wrap(fun), a, k, shapeless, metadata.value_or(""));
      },
      "file"_a, "fun"_a, "args"_a, "shapeless"_a = false, "metadata"_a.none() = nb::none(), "kwargs"_a,
      nb::sig("def export_function(file: str, fun: Callable, *args, shapeless: bool = False, "
              "metadata: str | None = None, **kwargs) -> None"),
      "Traces `fun` on the example inputs and writes its graph (with the arrays it closes over) to `file`. "
      "The file is Alloy's own format; import it with import_function.");

  nb::class_<ImportedFunction>(m, "ImportedFunction", "A function read by mx.import_function.")
      .def(
          "__call__",
          [](const ImportedFunction& f, nb::args args, nb::kwargs kwargs) {
            auto [a, k] = inputs_of(args, kwargs, "import_function::call");
            return as_tuple(f(a, k));
          },
          "Runs the first trace whose input shapes and dtypes match; returns a tuple of arrays.");

  m.def(
      "import_function",
      [](nb::handle file, bool return_metadata) -> nb::object {
        ImportedFunction f = import_function(file_path(file, "import_function"));
        if (return_metadata) return nb::make_tuple(f, f.metadata());
        return nb::cast(std::move(f));
      },
      "file"_a, "return_metadata"_a = false,
      nb::sig("def import_function(file: str, return_metadata: bool = False) -> Callable | tuple[Callable, str]"),
      "The function exported to `file` (by export_function or exporter); it returns a tuple of arrays.");
}
