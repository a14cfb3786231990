// mx.grad, mx.value_and_grad, mx.vjp, mx.jvp, mx.stop_gradient,
// mx.custom_function: Python callables over nested containers of arrays.
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "alloy/ops.h"
#include "alloy/transforms.h"
#include "bindings.h"
#include "stream_or_device.h"
#include "trees.h"

using namespace alloy;

namespace {

// Python objects held by graph nodes may be released where the GIL is not
// held (after an eval that released it): take it to let go.
std::shared_ptr<nb::object> gil_safe(nb::object o) {
  return std::shared_ptr<nb::object>(new nb::object(std::move(o)), [](nb::object* p) {
    nb::gil_scoped_acquire gil;
    delete p;
  });
}

std::vector<int> to_argnums(const std::optional<std::variant<int, std::vector<int>>>& argnums, bool& single,
                            bool has_argnames) {
  single = true;
  if (!argnums) {
    if (has_argnames) return {};
    return {0};
  }
  if (std::holds_alternative<int>(*argnums)) return {std::get<int>(*argnums)};
  // As MLX: one argnum gives one gradient, even as a sequence (argnums=(0,)).
  const std::vector<int>& nums = std::get<std::vector<int>>(*argnums);
  single = nums.size() == 1;
  return nums;
}

struct GradFunction {
  std::shared_ptr<nb::object> fun;
  std::vector<int> argnums;
  std::vector<std::string> argnames;
  bool single;
  bool with_value;

  nb::object operator()(nb::args args, nb::kwargs kwargs) const {
    const char* op = with_value ? "value_and_grad" : "grad";
    std::vector<array> flat;
    std::vector<size_t> ends;
    for (int a : argnums) {
      if (a < 0 || a >= static_cast<int>(args.size())) {
        throw std::invalid_argument(std::string("[") + op + "] argnums " + std::to_string(a) +
                                    " is out of range for a call with " + std::to_string(args.size()) +
                                    " positional arguments.");
      }
      py::tree_flatten(args[a], flat);
      ends.push_back(flat.size());
    }
    for (auto& name : argnames) {
      if (!kwargs.contains(name.c_str())) {
        throw std::invalid_argument(std::string("[") + op + "] keyword argument '" + name + "' was not passed.");
      }
      py::tree_flatten(kwargs[name.c_str()], flat);
      ends.push_back(flat.size());
    }
    if (flat.empty()) {
      throw std::invalid_argument(std::string("[") + op + "] the arguments to differentiate hold no arrays.");
    }

    nb::object value_tree;
    Function f = [&](const std::vector<array>& xs) -> std::vector<array> {
      nb::list new_args;
      for (nb::handle h : args) new_args.append(h);
      nb::dict new_kwargs;
      for (auto [k, v] : kwargs) new_kwargs[k] = v;
      size_t pos = 0;
      for (int a : argnums) new_args[a] = py::tree_unflatten(args[a], xs, pos);
      for (auto& name : argnames) new_kwargs[name.c_str()] = py::tree_unflatten(kwargs[name.c_str()], xs, pos);
      nb::object out = (*fun)(*nb::tuple(new_args), **new_kwargs);
      if (!with_value && !nb::isinstance<array>(out)) {
        throw std::invalid_argument("[grad] the function must return a scalar array, not " +
                                    std::string(nb::type_name(out.type()).c_str()) + ".");
      }
      value_tree = out;
      return py::outputs_to_arrays(out, op);
    };
    std::vector<int> all(flat.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    auto [values, grads] = value_and_grad(f, all)(flat);

    // Gradients in the structure of the differentiated arguments.
    size_t pos = 0;
    nb::list parts;
    for (int a : argnums) parts.append(py::tree_unflatten(args[a], grads, pos));
    for (auto& name : argnames) parts.append(py::tree_unflatten(kwargs[name.c_str()], grads, pos));
    nb::object g;
    if (argnames.empty() && single) {
      g = parts[0];
    } else if (argnames.empty()) {
      g = nb::tuple(parts);
    } else {
      // (positional grads, {name: grad})
      nb::list positional;
      nb::dict named;
      for (size_t i = 0; i < argnums.size(); ++i) positional.append(parts[i]);
      for (size_t i = 0; i < argnames.size(); ++i) named[argnames[i].c_str()] = parts[argnums.size() + i];
      nb::object pos_part = argnums.empty() ? nb::object(nb::none())
                                            : (single ? nb::object(positional[0]) : nb::object(nb::tuple(positional)));
      g = nb::make_tuple(pos_part, named);
    }
    if (!with_value) return g;
    size_t vpos = 0;
    return nb::make_tuple(py::tree_unflatten(value_tree, values, vpos), g);
  }
};

// The positional arguments as a custom rule receives them: MLX hands a
// function of one argument its primals (and tangents) as that argument
// itself, and a function of several as a tuple.
nb::object single_or_tuple(nb::object args) {
  nb::tuple t = nb::borrow<nb::tuple>(args);
  return t.size() == 1 ? nb::borrow<nb::object>(t[0]) : args;
}

// mx.custom_function(f): f.vjp / f.jvp register rules; calling runs f.
struct CustomFunction {
  std::shared_ptr<nb::object> fun;
  std::shared_ptr<nb::object> vjp_fun;
  std::shared_ptr<nb::object> jvp_fun;

  nb::object call(nb::args args, nb::kwargs kwargs) const {
    // Outside grad/vjp/jvp no input is a tracer and no rule can apply: the
    // function runs as itself and its outputs come back as it made them, as
    // MLX does (the node below would only share their memory). Plain array
    // arguments are checked where they are; containers are flattened first.
    bool all_arrays = true, traced = false;
    for (nb::handle h : args) {
      array* a = nullptr;
      if (!nb::try_cast<array*>(h, a) || !a) {
        all_arrays = false;
        break;
      }
      traced = traced || a->is_tracer();
    }
    std::vector<array> flat;
    if (!all_arrays) {
      py::tree_flatten(args, flat);
      for (const array& x : flat) traced = traced || x.is_tracer();
    }
    if (!traced) return (*fun)(*args, **kwargs);
    if (all_arrays) py::tree_flatten(args, flat);
    auto args_tree = gil_safe(nb::borrow<nb::object>(args));
    auto kwargs_obj = gil_safe(nb::borrow<nb::object>(kwargs));
    auto out_tree = std::make_shared<std::shared_ptr<nb::object>>();
    auto f = fun;
    Function body = [f, args_tree, kwargs_obj, out_tree](const std::vector<array>& xs) {
      nb::gil_scoped_acquire gil;
      size_t pos = 0;
      nb::object a = py::tree_unflatten(*args_tree, xs, pos);
      nb::object out = (*f)(*a, **nb::borrow<nb::dict>(*kwargs_obj));
      *out_tree = gil_safe(out);
      return py::outputs_to_arrays(out, "custom_function");
    };
    std::optional<CustomVjp> vjp_rule;
    if (vjp_fun) {
      auto v = vjp_fun;
      vjp_rule = [v, args_tree, out_tree](const std::vector<array>& primals, const std::vector<array>& cots,
                                          const std::vector<array>& outs) {
        nb::gil_scoped_acquire gil;
        size_t p = 0, c = 0, o = 0;
        nb::object primals_obj = single_or_tuple(py::tree_unflatten(*args_tree, primals, p));
        nb::object cots_obj = py::tree_unflatten(**out_tree, cots, c);
        nb::object outs_obj = py::tree_unflatten(**out_tree, outs, o);
        nb::object r = (*v)(primals_obj, cots_obj, outs_obj);
        return py::outputs_to_arrays(r, "custom_function.vjp");
      };
    }
    std::optional<CustomJvp> jvp_rule;
    if (jvp_fun) {
      auto j = jvp_fun;
      jvp_rule = [j, args_tree, out_tree](const std::vector<array>& primals, const std::vector<array>& tangents,
                                          const std::vector<int>& argnums) {
        nb::gil_scoped_acquire gil;
        // Tangents for every primal: zeros where none was given.
        std::vector<array> full;
        for (auto& p : primals) full.push_back(zeros_like(p));
        for (size_t k = 0; k < argnums.size(); ++k) full[argnums[k]] = tangents[k];
        size_t p = 0, t = 0;
        nb::object primals_obj = single_or_tuple(py::tree_unflatten(*args_tree, primals, p));
        nb::object tangents_obj = single_or_tuple(py::tree_unflatten(*args_tree, full, t));
        nb::object r = (*j)(primals_obj, tangents_obj);
        return py::outputs_to_arrays(r, "custom_function.jvp");
      };
    }
    std::vector<array> outs = custom_function(body, vjp_rule, jvp_rule)(flat);
    size_t pos = 0;
    return py::tree_unflatten(**out_tree, outs, pos);
  }
};

// A Python function of positional arrays as a Function of an array list.
Function positional_function(nb::callable fun, const char* op) {
  return [fun, op](const std::vector<array>& xs) {
    nb::list l;
    for (auto& x : xs) l.append(nb::cast(x));
    return py::outputs_to_arrays(fun(*nb::tuple(l)), op);
  };
}

}  // namespace

void init_transforms(nb::module_& m) {
  // grad and value_and_grad share everything but whether the value is returned.
  auto make_grad = [](bool with_value) {
    return [with_value](nb::callable fun, std::optional<std::variant<int, std::vector<int>>> argnums,
                        std::variant<std::string, std::vector<std::string>> argnames) {
      std::vector<std::string> names = std::holds_alternative<std::string>(argnames)
                                           ? std::vector<std::string>{std::get<std::string>(argnames)}
                                           : std::get<std::vector<std::string>>(argnames);
      if (names.size() == 1 && names[0].empty()) names.clear();
      bool single;
      auto nums = to_argnums(argnums, single, !names.empty());
      GradFunction g{gil_safe(fun), nums, names, single, with_value};
      return nb::cpp_function([g](nb::args a, nb::kwargs k) { return g(a, k); });
    };
  };
  m.def("grad", make_grad(false), nb::arg("fun"), nb::arg("argnums") = nb::none(),
        nb::arg("argnames") = std::vector<std::string>{},
        "Returns a function computing the gradient of `fun` (which returns a scalar) with respect to "
        "the arguments `argnums` (default 0) and keyword arguments `argnames`.");
  m.def("value_and_grad", make_grad(true), nb::arg("fun"), nb::arg("argnums") = nb::none(),
        nb::arg("argnames") = std::vector<std::string>{},
        "Like grad, returning (value, gradients); `fun` may return (loss, aux...).");
  m.def("vjp",
        [](nb::callable fun, std::vector<array> primals, std::vector<array> cotangents) {
          return vjp(positional_function(fun, "vjp"), primals, cotangents);
        },
        nb::arg("fun"), nb::arg("primals"), nb::arg("cotangents"),
        "Vector-Jacobian product: returns (outputs, cotangents of the primals).");
  m.def("jvp",
        [](nb::callable fun, std::vector<array> primals, std::vector<array> tangents) {
          return jvp(positional_function(fun, "jvp"), primals, tangents);
        },
        nb::arg("fun"), nb::arg("primals"), nb::arg("tangents"),
        "Jacobian-vector product: returns (outputs, tangents of the outputs).");
  m.def("stop_gradient", [](const array& a, StreamOrDevice s) { return stop_gradient(a, s); }, nb::arg("a"),
        nb::kw_only(), nb::arg("stream") = nb::none());

  nb::class_<CustomFunction>(m, "custom_function",
                             "Wraps a function so that custom vjp/jvp rules define its derivatives.")
      .def("__init__", [](CustomFunction* self,
                          nb::callable f) { new (self) CustomFunction{gil_safe(f), nullptr, nullptr}; })
      .def("__call__", &CustomFunction::call)
      // Both decorators return the custom function itself, as MLX does, so
      // `@f.vjp` over a `def f(...)` keeps `f` bound to the custom function.
      .def("vjp",
           [](nb::handle_t<CustomFunction> self, nb::callable f) {
             nb::cast<CustomFunction&>(self).vjp_fun = gil_safe(f);
             return nb::borrow<nb::object>(self);
           },
           nb::arg("f"), "Decorator: f(primals, cotangents, outputs) -> cotangents of the primals.")
      .def("jvp",
           [](nb::handle_t<CustomFunction> self, nb::callable f) {
             nb::cast<CustomFunction&>(self).jvp_fun = gil_safe(f);
             return nb::borrow<nb::object>(self);
           },
           nb::arg("f"), "Decorator: f(primals, tangents) -> tangents of the outputs.");
}
