// File arguments as MLX takes them: a str or any os.PathLike.
#pragma once

#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

namespace nb = nanobind;

inline bool is_path(nb::handle f) { return PyUnicode_Check(f.ptr()) || nb::hasattr(f, "__fspath__"); }

inline std::string path_of(nb::handle f) {
  return nb::cast<std::string>(nb::module_::import_("os").attr("fspath")(f));
}
