// mx.save / load / savez / savez_compressed / save_safetensors / save_gguf.
// The formats live in src/io (C++); this file turns paths and Python file
// objects into streams, and builds .npz archives with Python's zipfile (as
// MLX does: zip handling is not worth a C++ dependency).
#include <sstream>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unordered_map.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "alloy/io.h"
#include "bindings.h"
#include "paths.h"
#include "stream_or_device.h"

using namespace alloy;

namespace {

// Bytes written by `write` go to a path or to the file object's write().
template <typename Write>
void save_to(nb::handle file, const char* op, Write&& write) {
  if (is_path(file)) {
    std::string path = path_of(file);
    write(path);
    return;
  }
  if (!nb::hasattr(file, "write")) {
    throw std::invalid_argument(std::string("[") + op + "] Input must be a file-like object, or string");
  }
  std::ostringstream out;
  write(out);
  std::string bytes = out.str();
  file.attr("write")(nb::bytes(bytes.data(), bytes.size()));
}

std::istringstream read_all(nb::handle file) {
  nb::object data = file.attr("read")();
  if (!PyBytes_Check(data.ptr())) throw nb::type_error("[load] the file object must be opened in binary mode");
  nb::bytes b = nb::borrow<nb::bytes>(data);
  return std::istringstream(std::string(b.c_str(), b.size()));
}

std::unordered_map<std::string, array> array_dict(nb::handle d, const char* op) {
  if (!nb::isinstance<nb::dict>(d)) throw nb::type_error((std::string("[") + op + "] arrays must be a dict of str to array").c_str());
  std::unordered_map<std::string, array> out;
  for (auto [k, v] : nb::borrow<nb::dict>(d)) {
    if (!nb::isinstance<nb::str>(k) || !nb::isinstance<array>(v)) {
      throw nb::type_error((std::string("[") + op + "] arrays must be a dict of str to array").c_str());
    }
    out.emplace(nb::cast<std::string>(k), nb::cast<array>(v));
  }
  return out;
}

nb::dict to_dict(const std::unordered_map<std::string, array>& m) {
  nb::dict d;
  for (auto& [k, v] : m) d[nb::str(k.c_str())] = nb::cast(v);
  return d;
}

// ---- .npz: a zip of .npy members named arr_0.npy ... and <keyword>.npy
void savez_impl(nb::handle file, nb::args args, nb::kwargs kwargs, bool compressed) {
  const char* op = compressed ? "savez_compressed" : "savez";
  std::vector<std::pair<std::string, array>> members;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = "arr_" + std::to_string(i);
    if (kwargs.contains(name.c_str())) {
      throw std::invalid_argument(std::string("[") + op + "] Cannot use un-named variables and keyword " + name);
    }
    if (!nb::isinstance<array>(args[i])) {
      throw nb::type_error((std::string("[") + op + "] expected arrays, got " +
                            nb::cast<std::string>(nb::str(nb::handle(args[i]).type().attr("__name__"))))
                               .c_str());
    }
    members.emplace_back(name, nb::cast<array>(args[i]));
  }
  for (auto [k, v] : kwargs) {
    if (!nb::isinstance<array>(v)) {
      throw nb::type_error((std::string("[") + op + "] expected arrays, got " +
                            nb::cast<std::string>(nb::str(v.type().attr("__name__"))) + " for " + nb::cast<std::string>(k))
                               .c_str());
    }
    members.emplace_back(nb::cast<std::string>(k), nb::cast<array>(v));
  }
  nb::module_ zipfile = nb::module_::import_("zipfile");
  nb::object target;
  if (is_path(file)) {
    std::string path = path_of(file);
    if (path.size() < 4 || path.compare(path.size() - 4, 4, ".npz") != 0) path += ".npz";
    target = nb::str(path.c_str());
  } else if (nb::hasattr(file, "write")) {
    target = nb::borrow(file);
  } else {
    throw std::invalid_argument(std::string("[") + op + "] Input must be a file-like object, or string");
  }
  nb::object mode = zipfile.attr(compressed ? "ZIP_DEFLATED" : "ZIP_STORED");
  nb::object zf = zipfile.attr("ZipFile")(target, "w", mode, nb::arg("allowZip64") = true);
  try {
    for (auto& [name, a] : members) {
      std::ostringstream out;
      save(out, a);
      std::string bytes = out.str();
      zf.attr("writestr")(name + ".npy", nb::bytes(bytes.data(), bytes.size()));
    }
  } catch (...) {
    zf.attr("close")();
    throw;
  }
  zf.attr("close")();
}

nb::dict load_npz(nb::handle file) {
  nb::module_ zipfile = nb::module_::import_("zipfile");
  nb::object src = is_path(file) ? nb::object(nb::str(path_of(file).c_str())) : nb::borrow(file);
  // A missing file is not a zip file either: MLX reports both as ValueError.
  if (!nb::cast<bool>(zipfile.attr("is_zipfile")(src))) {
    throw std::invalid_argument(
        "[load_npz] Input must be a zip file or a file-like object that can be opened with zipfile.ZipFile");
  }
  if (!is_path(file)) file.attr("seek")(0);  // is_zipfile moved the position
  nb::object zf = zipfile.attr("ZipFile")(src, "r");
  nb::dict out;
  try {
    for (nb::handle n : zf.attr("namelist")()) {
      std::string name = nb::cast<std::string>(n);
      nb::bytes b = nb::borrow<nb::bytes>(zf.attr("read")(n));
      std::istringstream in(std::string(b.c_str(), b.size()));
      std::string key = name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0 ? name.substr(0, name.size() - 4) : name;
      out[nb::str(key.c_str())] = nb::cast(load(in, name));
    }
  } catch (...) {
    zf.attr("close")();
    throw;
  }
  zf.attr("close")();
  return out;
}

nb::object gguf_metadata_to_py(const GGUFMetaData& v) {
  if (auto* a = std::get_if<array>(&v)) return nb::cast(*a);
  if (auto* s = std::get_if<std::string>(&v)) return nb::str(s->c_str(), s->size());
  if (auto* l = std::get_if<std::vector<std::string>>(&v)) {
    nb::list out;
    for (auto& s : *l) out.append(nb::str(s.c_str(), s.size()));
    return out;
  }
  return nb::none();
}

std::unordered_map<std::string, GGUFMetaData> gguf_metadata_from_py(nb::handle md) {
  std::unordered_map<std::string, GGUFMetaData> out;
  if (md.is_none()) return out;
  if (!nb::isinstance<nb::dict>(md)) throw nb::type_error("[save_gguf] metadata must be a dict");
  for (auto [k, v] : nb::borrow<nb::dict>(md)) {
    if (!nb::isinstance<nb::str>(k)) throw nb::type_error("[save_gguf] metadata keys must be strings");
    std::string key = nb::cast<std::string>(k);
    if (nb::isinstance<array>(v)) {
      out[key] = nb::cast<array>(v);
    } else if (nb::isinstance<nb::str>(v)) {
      out[key] = nb::cast<std::string>(v);
    } else if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
      std::vector<std::string> list;
      for (nb::handle s : v) {
        if (!nb::isinstance<nb::str>(s)) {
          throw nb::type_error(("[save_gguf] metadata " + key + ": lists must hold only strings").c_str());
        }
        list.push_back(nb::cast<std::string>(s));
      }
      out[key] = std::move(list);
    } else {
      throw nb::type_error(("[save_gguf] metadata " + key + " must be an array, a str or a list of str, not " +
                            nb::cast<std::string>(nb::str(v.type().attr("__name__"))))
                               .c_str());
    }
  }
  return out;
}

nb::object load_impl(nb::handle file, std::optional<std::string> format, bool return_metadata, StreamOrDevice) {
  std::string fmt;
  if (format) {
    fmt = *format;
  } else {
    // File objects are named by their .name, as in MLX.
    std::string name = is_path(file) ? path_of(file) : nb::cast<std::string>(nb::str(file.attr("name")));
    size_t dot = name.rfind('.');
    size_t slash = name.rfind('/');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
      throw std::invalid_argument("[load] Could not infer file format from extension");
    }
    fmt = name.substr(dot + 1);
  }
  if (fmt != "npy" && fmt != "npz" && fmt != "safetensors" && fmt != "gguf") {
    throw std::invalid_argument("[load] Unknown file format " + fmt);
  }
  if (return_metadata && (fmt == "npy" || fmt == "npz")) {
    throw std::invalid_argument("[load] metadata not supported for format " + fmt);
  }
  if (fmt == "npz") return load_npz(file);

  std::string path;
  std::istringstream bytes;
  if (is_path(file)) path = path_of(file);
  else bytes = read_all(file);
  auto from = [&](auto&& by_path, auto&& by_stream) {
    nb::gil_scoped_release release;
    return path.empty() ? by_stream(bytes) : by_path(path);
  };

  if (fmt == "npy") {
    array a = from([](const std::string& p) { return load(p); }, [](std::istream& in) { return load(in, "stream"); });
    return nb::cast(a);
  }
  if (fmt == "safetensors") {
    SafetensorsLoad r = from([](const std::string& p) { return load_safetensors(p); },
                             [](std::istream& in) { return load_safetensors(in, "stream"); });
    nb::dict arrays = to_dict(r.first);
    if (!return_metadata) return arrays;
    nb::dict md;
    for (auto& [k, v] : r.second) md[nb::str(k.c_str())] = nb::str(v.c_str(), v.size());
    return nb::make_tuple(arrays, md);
  }
  GGUFLoad r = from([](const std::string& p) { return load_gguf(p); }, [](std::istream& in) { return load_gguf(in, "stream"); });
  nb::dict arrays = to_dict(r.first);
  if (!return_metadata) return arrays;
  nb::dict md;
  for (auto& [k, v] : r.second) md[nb::str(k.c_str())] = gguf_metadata_to_py(v);
  return nb::make_tuple(arrays, md);
}

}  // namespace

void init_io(nb::module_& m) {
  m.def(
      "save",
      [](nb::handle file, const array& a) {
        save_to(file, "save", [&](auto& target) { save(target, a); });
      },
      nb::arg("file"), nb::arg("arr"), nb::sig("def save(file: file | str | pathlib.Path, arr: array) -> None"),
      "Saves an array to a ``.npy`` file (``.npy`` is appended to a path that lacks it).");
  m.def("load", &load_impl, nb::arg("file"), nb::arg("format") = nb::none(), nb::arg("return_metadata") = false,
        nb::kw_only(), nb::arg("stream") = nb::none(),
        nb::sig("def load(file: file | str | pathlib.Path, /, format: str | None = None, return_metadata: bool = False, "
                "*, stream: Stream | Device | None = None) -> array | dict[str, array] | "
                "tuple[dict[str, array], dict[str, Any]]"),
        "Loads a ``.npy`` file (an array), or a ``.npz``, ``.safetensors`` or ``.gguf`` file (a dict of arrays;\n"
        "with ``return_metadata=True`` also the file's metadata). ``format`` overrides the file's extension.");
  m.def(
      "savez", [](nb::handle file, nb::args args, nb::kwargs kwargs) { savez_impl(file, args, kwargs, false); },
      nb::arg("file"), nb::arg("args"), nb::arg("kwargs"),
      "Saves arrays to an uncompressed ``.npz`` file: positional ones as ``arr_0``, ``arr_1``..., keyword ones by name.");
  m.def(
      "savez_compressed", [](nb::handle file, nb::args args, nb::kwargs kwargs) { savez_impl(file, args, kwargs, true); },
      nb::arg("file"), nb::arg("args"), nb::arg("kwargs"),
      "Saves arrays to a deflate-compressed ``.npz`` file (names as in savez).");
  m.def(
      "save_safetensors",
      [](nb::handle file, nb::handle arrays, nb::handle metadata) {
        auto arr = array_dict(arrays, "save_safetensors");
        std::unordered_map<std::string, std::string> md;
        if (!metadata.is_none()) {
          bool ok = nb::isinstance<nb::dict>(metadata);
          if (ok) {
            for (auto [k, v] : nb::borrow<nb::dict>(metadata)) {
              if (!nb::isinstance<nb::str>(k) || !nb::isinstance<nb::str>(v)) {
                ok = false;
                break;
              }
              md[nb::cast<std::string>(k)] = nb::cast<std::string>(v);
            }
          }
          if (!ok) throw std::invalid_argument("[save_safetensors] Metadata must be a dictionary with string keys and values");
        }
        save_to(file, "save_safetensors", [&](auto& target) { save_safetensors(target, arr, md); });
      },
      nb::arg("file"), nb::arg("arrays"), nb::arg("metadata") = nb::none(),
      nb::sig("def save_safetensors(file: file | str | pathlib.Path, arrays: dict[str, array], "
              "metadata: dict[str, str] | None = None)"),
      "Saves a dict of arrays (and optional str-to-str metadata) to a ``.safetensors`` file.");
  m.def(
      "save_gguf",
      [](nb::handle file, nb::handle arrays, nb::handle metadata) {
        auto arr = array_dict(arrays, "save_gguf");
        auto md = gguf_metadata_from_py(metadata);
        save_to(file, "save_gguf", [&](auto& target) { save_gguf(target, arr, md); });
      },
      nb::arg("file"), nb::arg("arrays"), nb::arg("metadata") = nb::none(),
      nb::sig("def save_gguf(file: file | str | pathlib.Path, arrays: dict[str, array], "
              "metadata: dict[str, array | str | list[str]] | None = None)"),
      "Saves a dict of arrays (float32, float16, int8, int16, int32) to a ``.gguf`` file. Metadata values may be a\n"
      "scalar or 1-D array, a str, or a list of str.");
}
