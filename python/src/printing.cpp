// array.__repr__ / __str__ as MLX writes them, and the print options.
//
// MLX's layout: elements joined by ", ", rows by ",\n" indented to sit under
// the opening bracket, any axis longer than 6 shown as its first 3 and last
// 3 entries around "...". Numbers are written by C++ streams: floats in the
// shortest form of 6 significant digits, or fixed with `precision` digits
// after the point when a precision is set.
#include "printing.h"

#include <iomanip>
#include <sstream>

#include <nanobind/stl/string.h>

#include "bindings.h"

using namespace alloy;

namespace {

constexpr int kSummaryThreshold = 6;  // longer axes are summarized
constexpr int kEdgeItems = 3;

struct PrintOptions {
  int precision = -1;  // digits after the point; negative: the stream's default
};

PrintOptions& global_options() {
  static PrintOptions options;
  return options;
}

void write_float(std::ostream& os, double v, int p) {
  if (p >= 0) os << std::fixed << std::setprecision(p) << v << std::defaultfloat << std::setprecision(6);
  else os << v;
}

class Formatter {
 public:
  Formatter(const array& a, int precision)
      : a_(to_host(a)), base_(static_cast<const char*>(a_.raw_data())), precision_(precision) {}

  std::string run() {
    std::ostringstream os;
    os << "array(";
    if (a_.ndim() == 0) element(os, 0);
    else block(os, 0, 0);
    os << ", dtype=" << dtype_name(a_.dtype()) << ")";
    return os.str();
  }

 private:
  void element(std::ostream& os, int64_t offset) {
    const char* p = base_ + offset * static_cast<int64_t>(a_.itemsize());
    Dtype d = a_.dtype();
    switch (kind_of(d)) {
      case DtypeKind::Bool: os << (*reinterpret_cast<const bool*>(p) ? "True" : "False"); break;
      case DtypeKind::Unsigned: {
        uint64_t v;
        convert_scalar(p, d, &v, Dtype::uint64);
        os << v;
        break;
      }
      case DtypeKind::Signed: {
        int64_t v;
        convert_scalar(p, d, &v, Dtype::int64);
        os << v;
        break;
      }
      case DtypeKind::Floating: {
        double v;
        convert_scalar(p, d, &v, Dtype::float64);
        write_float(os, v, precision_);
        break;
      }
      case DtypeKind::Complex: {
        const float* c = reinterpret_cast<const float*>(p);
        // The imaginary part carries its own '-'; MLX adds '+' otherwise
        // (so -0.0 shows as "+-0j" and NaN as "+nanj", as there).
        write_float(os, c[0], precision_);
        if (!(c[1] < 0)) os << "+";
        write_float(os, c[1], precision_);
        os << "j";
        break;
      }
    }
  }

  void block(std::ostream& os, int dim, int64_t offset) {
    const int n = a_.shape(dim);
    const int64_t stride = a_.strides(dim);
    const bool innermost = dim == a_.ndim() - 1;
    // Rows start under the first element of the enclosing bracket:
    // len("array(") plus one column per open bracket.
    const std::string sep = innermost ? ", " : ",\n" + std::string(6 + dim + 1, ' ');
    auto item = [&](int i) {
      if (innermost) element(os, offset + i * stride);
      else block(os, dim + 1, offset + i * stride);
    };
    os << "[";
    if (n > kSummaryThreshold) {
      for (int i = 0; i < kEdgeItems; ++i) item(i), os << sep;
      os << "..." << sep;
      for (int i = n - kEdgeItems; i < n; ++i) {
        item(i);
        if (i + 1 < n) os << sep;
      }
    } else {
      for (int i = 0; i < n; ++i) {
        item(i);
        if (i + 1 < n) os << sep;
      }
    }
    os << "]";
  }

  array a_;
  const char* base_;
  int precision_;
};

// `with mx.printoptions(...)`: sets the options on entry, puts back the ones
// found at entry on exit (whatever was set inside).
struct PrintOptionsContext {
  PrintOptions options;
  PrintOptions saved;
};

}  // namespace

std::string format_array(const array& a) {
  int precision = global_options().precision;  // read while holding the GIL
  nb::gil_scoped_release release;              // evaluation may be long; other threads run
  return Formatter(a, precision).run();
}

void init_printing(nb::module_& m) {
  // Replaces array.cpp's numpy-based text with MLX's own layout. A fresh
  // function object (no scope), so it replaces rather than overloads.
  nb::handle cls = nb::type<array>();
  for (const char* name : {"__repr__", "__str__"}) {
    nb::setattr(cls, name, nb::cpp_function([](const array& a) { return format_array(a); }, nb::name(name), nb::is_method()));
  }
  nb::class_<PrintOptions>(m, "PrintOptions", "Options for the text form of arrays.")
      .def(nb::init<>())
      .def("__init__", [](PrintOptions* self, int precision) { new (self) PrintOptions{precision}; },
           nb::arg("precision") = -1)
      .def_rw("precision", &PrintOptions::precision, "Digits after the decimal point; -1 for the default format.");
  nb::class_<PrintOptionsContext>(m, "_PrintOptionsContext", "Context manager returned by mx.printoptions.")
      .def("__enter__",
           [](nb::handle self) {
             auto& ctx = nb::cast<PrintOptionsContext&>(self);
             ctx.saved = global_options();
             global_options() = ctx.options;
             return nb::borrow(self);
           })
      .def("__exit__",
           [](PrintOptionsContext& ctx, nb::args) {
             global_options() = ctx.saved;
             return false;
           });
  m.def("get_printoptions", [] { return global_options(); }, "The current print options (a copy).");
  m.def("set_printoptions", [](int precision) { global_options().precision = precision; }, nb::arg("precision") = -1,
        "Sets the number of digits after the decimal point used to print floats (-1: the default format).");
  m.def("printoptions", [](int precision) { return PrintOptionsContext{PrintOptions{precision}, {}}; },
        nb::arg("precision") = -1, "A context manager that sets print options for the duration of a ``with`` block.");
}
