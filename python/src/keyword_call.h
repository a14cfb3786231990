// What a custom-kernel launcher called through vectorcall needs from its
// arguments (and its list of outputs), shared by Alloy's launcher (kernel_launcher.cpp) and alloy.mlx's
// (plugin/mlx/src/bindings.cpp): keyword-only arguments matched against
// interned names by identity, and integers, lists and 3-tuples read without
// the generic conversions. Header-only: each module keeps its own copy.
// `api` ("metal_kernel") prefixes every message.
#pragma once

#include <nanobind/nanobind.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace alloy::py {

namespace nb = nanobind;

// A Python int (the common case) without the generic conversion; numpy
// integers (the seeds pass np.prod(shape)) go through __index__.
inline int64_t to_int64(const char* api, PyObject* x) {
  if (PyLong_CheckExact(x)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (!overflow) return v;
  }
  PyObject* index = PyNumber_Index(x);
  if (!index) throw nb::python_error();
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
  Py_DECREF(index);
  if (overflow) throw std::invalid_argument(std::string("[") + api + "] an integer argument is out of range.");
  if (v == -1 && PyErr_Occurred()) throw nb::python_error();
  return v;
}

// An integer that must fit in 32 bits (an output dimension, a template
// value): a ValueError naming `what` otherwise, never a wrapped value or a
// bare std::bad_cast.
inline int to_int32(const char* api, PyObject* x, const std::string& what) {
  const int64_t v = to_int64(api, x);
  if (v > INT32_MAX || v < INT32_MIN) {
    throw std::invalid_argument(std::string("[") + api + "] " + what + " is " + std::to_string(v) +
                                ", which does not fit in 32 bits.");
  }
  return static_cast<int>(v);
}

// The arguments that hold several values take a list or a tuple; anything
// else is a TypeError naming the argument.
inline void require_list(const char* api, PyObject* seq, const char* what) {
  if (!PyList_Check(seq) && !PyTuple_Check(seq)) {
    throw nb::type_error((std::string("[") + api + "] " + what + " must be a list, not " + Py_TYPE(seq)->tp_name +
                          ".").c_str());
  }
}

// The items of a list or tuple, without an iterator object. A list is read
// afresh at each step and its item held, since converting an item can run
// Python code (__index__) that changes the list.
template <class F>
void for_each_item(const char* api, PyObject* seq, const char* what, F&& f) {
  require_list(api, seq, what);
  if (PyTuple_Check(seq)) {
    for (Py_ssize_t i = 0, n = PyTuple_GET_SIZE(seq); i < n; ++i) f(PyTuple_GET_ITEM(seq, i));
    return;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(seq); ++i) {
    nb::object item = nb::borrow(PyList_GET_ITEM(seq, i));
    f(item.ptr());
  }
}

// input_names= / output_names=: a list or tuple of str (a bare str would be
// taken letter by letter; anything else was a bare std::bad_cast).
inline std::vector<std::string> to_names(const char* api, PyObject* seq, const char* what) {
  require_list(api, seq, what);
  std::vector<std::string> names;
  for_each_item(api, seq, what, [&](PyObject* item) {
    Py_ssize_t length = 0;
    const char* chars = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &length) : nullptr;
    if (!chars) {
      if (PyErr_Occurred()) throw nb::python_error();
      throw nb::type_error((std::string("[") + api + "] " + what + " must hold str, not " + Py_TYPE(item)->tp_name +
                            ".").c_str());
    }
    names.emplace_back(chars, static_cast<size_t>(length));
  });
  return names;
}

// grid= and threadgroup=: three integers.
inline std::array<int, 3> to_dims(const char* api, PyObject* h, const char* what) {
  if (!PyTuple_Check(h) && !PyList_Check(h)) {
    throw nb::type_error((std::string("[") + api + "] " + what + " must be a tuple of 3 integers.").c_str());
  }
  std::array<int, 3> dims{};
  Py_ssize_t n = 0;
  for_each_item(api, h, what, [&](PyObject* item) {
    int64_t v = to_int64(api, item);
    if (v > INT32_MAX || v < INT32_MIN) {
      throw std::invalid_argument(std::string("[") + api + "] " + what + " dimension " + std::to_string(n) +
                                  " is too large (" + std::to_string(v) + ").");
    }
    if (n < 3) dims[n] = static_cast<int>(v);
    ++n;
  });
  if (n != 3) {
    throw std::invalid_argument(std::string("[") + api + "] " + what + " must have 3 dimensions, got " +
                                std::to_string(n) + ".");
  }
  return dims;
}

// A launch's outputs (arrays, moved) as the Python list it returns.
template <class T>
nb::list list_of(std::vector<T>&& items) {
  nb::list result = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(items.size())));
  if (!result.is_valid()) throw nb::python_error();
  for (size_t k = 0; k < items.size(); ++k) {
    PyList_SET_ITEM(result.ptr(), static_cast<Py_ssize_t>(k), nb::cast(std::move(items[k])).release().ptr());
  }
  return result;
}

// A callable's keyword-only arguments: `names`, the first `required` of
// them required. Python passes keywords as a tuple of names, interned when
// written in the source, so matching is by identity first.
template <int N>
struct KeywordOnly {
  const char* const* names;
  int required;
  PyObject* interned[N] = {};

  KeywordOnly(const char* const (&n)[N], int r) : names(n), required(r) {
    for (int i = 0; i < N; ++i) interned[i] = PyUnicode_InternFromString(names[i]);  // kept for the module's life
  }

  int index(PyObject* name) const {
    for (int i = 0; i < N; ++i)
      if (interned[i] == name) return i;
    // Names built at run time (a dict's keys) may not be interned.
    for (int i = 0; i < N; ++i)
      if (PyUnicode_CompareWithASCIIString(name, names[i]) == 0) return i;
    return -1;
  }

  // given[k]: the value passed for names[k], or null. `callable` (a str) and
  // `usage` name the call in TypeErrors, as Python's own would.
  void match(PyObject* callable, const char* usage, PyObject* const* args, size_t nargsf, PyObject* kwnames,
             PyObject* (&given)[N]) const {
    auto text = [](PyObject* str) {
      const char* utf8 = PyUnicode_AsUTF8(str);
      return std::string(utf8 ? utf8 : "?");
    };
    if (PyVectorcall_NARGS(nargsf) != 0) {
      throw nb::type_error((text(callable) + "() takes keyword arguments only: " + usage + ".").c_str());
    }
    for (auto& g : given) g = nullptr;
    const Py_ssize_t n_kw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < n_kw; ++i) {
      PyObject* name = PyTuple_GET_ITEM(kwnames, i);
      const int k = index(name);
      if (k < 0) {
        throw nb::type_error((text(callable) + "() got an unexpected keyword argument '" + text(name) + "'.").c_str());
      }
      given[k] = args[i];
    }
    for (int k = 0; k < required; ++k) {
      if (!given[k]) {
        throw nb::type_error((text(callable) + "() missing required keyword argument '" + names[k] + "'.").c_str());
      }
    }
  }
};

}  // namespace alloy::py
