// A Python type of its own whose instances hold a C++ callable and a name
// and are called through vectorcall (keywords as a tuple of names, no dict):
// the kernel objects mx.fast.metal_kernel / cuda_kernel return, in Alloy's
// module and in alloy.mlx's. Header-only: each module makes its own type.
#pragma once

#include <nanobind/nanobind.h>
#include <structmember.h>

#include <string>
#include <utility>

#include "raw_call.h"

namespace alloy::py {

namespace nb = nanobind;

template <class Fn>
struct CallableObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  const char* api;  // names the definition in messages ("metal_kernel"); a literal
  Fn* fn;           // owned
  PyObject* name;   // str
};

// `Call(self, args, nargsf, kwnames)` runs one call; what it throws becomes
// the Python exception nanobind would raise.
template <class Fn, nb::object (*Call)(CallableObject<Fn>&, PyObject* const*, size_t, PyObject*)>
class CallableType {
 public:
  using Object = CallableObject<Fn>;

  // Makes the type (once, at the module's init). `qualname` ("module.Type"),
  // `repr_format` (a PyUnicode_FromFormat format given the api, %s, and the
  // name, %U) and `doc` must be literals.
  static PyTypeObject* create(const char* qualname, const char* repr_format, const char* doc) {
    repr_format_ = repr_format;
    slots_[5] = {Py_tp_doc, const_cast<char*>(doc)};
    spec_ = {qualname, sizeof(Object), 0,
             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_DISALLOW_INSTANTIATION, slots_};
    type_ = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec_));
    if (!type_) throw nb::python_error();
    return type_;
  }

  static nb::object make(const char* api, Fn fn, const std::string& name) {
    PyObject* obj = type_->tp_alloc(type_, 0);
    if (!obj) throw nb::python_error();
    auto* self = reinterpret_cast<Object*>(obj);
    self->vectorcall = vectorcall;
    self->api = api;
    self->fn = new Fn(std::move(fn));
    self->name = PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
    nb::object result = nb::steal(obj);  // from here dealloc frees what is set
    if (!self->name) throw nb::python_error();
    return result;
  }

 private:
  static PyObject* vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    return call_translating_exceptions([&] { return Call(*reinterpret_cast<Object*>(self), args, nargsf, kwnames); });
  }
  static void dealloc(PyObject* self) {
    auto* o = reinterpret_cast<Object*>(self);
    delete o->fn;
    Py_XDECREF(o->name);
    PyTypeObject* type = Py_TYPE(self);
    type->tp_free(self);
    Py_DECREF(type);
  }
  static PyObject* name(PyObject* self, void*) {
    PyObject* n = reinterpret_cast<Object*>(self)->name;
    Py_INCREF(n);
    return n;
  }
  static PyObject* repr(PyObject* self) {
    auto* o = reinterpret_cast<Object*>(self);
    return PyUnicode_FromFormat(repr_format_, o->api, o->name);
  }

  static inline PyTypeObject* type_ = nullptr;
  static inline const char* repr_format_ = nullptr;
  static inline PyMemberDef members_[] = {
      {"__vectorcalloffset__", T_PYSSIZET, offsetof(Object, vectorcall), READONLY, nullptr},
      {nullptr, 0, 0, 0, nullptr}};
  static inline PyGetSetDef getset_[] = {{"__name__", name, nullptr, nullptr, nullptr},
                                         {"name", name, nullptr, nullptr, nullptr},
                                         {nullptr, nullptr, nullptr, nullptr, nullptr}};
  static inline PyType_Slot slots_[] = {{Py_tp_dealloc, reinterpret_cast<void*>(dealloc)},
                                        {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
                                        {Py_tp_repr, reinterpret_cast<void*>(repr)},
                                        {Py_tp_members, members_},
                                        {Py_tp_getset, getset_},
                                        {Py_tp_doc, nullptr},  // set by create()
                                        {0, nullptr}};
  static inline PyType_Spec spec_{};
};

}  // namespace alloy::py
