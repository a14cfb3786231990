// The kernel's signature, shared by every target: its name, template
// parameters and parameter list, in MLX's order.
#pragma once

#include <string>
#include <vector>

#include "alloy/msl/translate.h"

namespace alloy::msl {

struct KernelParam {
  enum class Kind { Input, Shape, Strides, Ndim, Output, Attribute };
  Kind kind = Kind::Input;
  int index = 0;      // Input/Shape/Strides/Ndim: input index; Output: output index
  std::string name;   // the parameter's name inside the kernel
  std::string type;   // element type for Input/Output; uint/uint3 for Attribute
  bool is_scalar = false;
  bool in_constant = false;
};

// Throws std::invalid_argument for a spec no target can express (bad math
// mode, template value of the wrong form, names that are not identifiers).
void check_spec(const KernelSpec& spec);

// Inputs, each followed by its used shape/strides/ndim, then outputs, then
// the attributes the body uses.
std::vector<KernelParam> kernel_params(const KernelSpec& spec, const Analysis& analysis);

// "template <typename T, int N, bool B>" or "" without template arguments.
std::string template_header(const KernelSpec& spec);

// The template argument list: "<float, 256, 1>" as MLX writes it (bools as
// 1/0) or, with cpp_bools, "<float, 256, true>"; "" without template arguments.
std::string template_values(const KernelSpec& spec, bool cpp_bools);

// The glue's parameters (everything but attributes), named in<i>,
// in<i>_shape, in<i>_strides, in<i>_ndim and out<j>.
std::vector<GlueParam> glue_params(const std::vector<KernelParam>& params, int n_inputs);

}  // namespace alloy::msl
