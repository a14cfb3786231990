#include "trees.h"

#include <stdexcept>
#include <string>

namespace alloy::py {

void tree_flatten(nb::handle tree, std::vector<array>& out) {
  if (nb::isinstance<array>(tree)) {
    out.push_back(nb::cast<array>(tree));
  } else if (nb::isinstance<nb::list>(tree) || nb::isinstance<nb::tuple>(tree)) {
    for (nb::handle x : tree) tree_flatten(x, out);
  } else if (nb::isinstance<nb::dict>(tree)) {
    for (auto [k, v] : nb::borrow<nb::dict>(tree)) tree_flatten(v, out);
  }
}

nb::object tree_unflatten(nb::handle tree, const std::vector<array>& leaves, size_t& pos) {
  if (nb::isinstance<array>(tree)) return nb::cast(leaves.at(pos++));
  if (nb::isinstance<nb::list>(tree)) {
    nb::list l;
    for (nb::handle x : tree) l.append(tree_unflatten(x, leaves, pos));
    return l;
  }
  if (nb::isinstance<nb::tuple>(tree)) {
    nb::list l;
    for (nb::handle x : tree) l.append(tree_unflatten(x, leaves, pos));
    return nb::tuple(l);
  }
  if (nb::isinstance<nb::dict>(tree)) {
    nb::dict d;
    for (auto [k, v] : nb::borrow<nb::dict>(tree)) d[k] = tree_unflatten(v, leaves, pos);
    return d;
  }
  return nb::borrow(tree);
}

std::vector<array> outputs_to_arrays(nb::handle out, const char* op) {
  std::vector<array> arrays;
  if (nb::isinstance<array>(out)) {
    arrays.push_back(nb::cast<array>(out));
    return arrays;
  }
  if (nb::isinstance<nb::list>(out) || nb::isinstance<nb::tuple>(out)) {
    tree_flatten(out, arrays);
    return arrays;
  }
  throw nb::type_error((std::string("[") + op + "] the function must return an array or a tuple/list of arrays, not " +
                        nb::type_name(out.type()).c_str() + ".")
                           .c_str());
}

}  // namespace alloy::py
