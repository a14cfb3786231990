// mx.conv1d/2d/3d, conv_general, conv_transpose1d/2d/3d and convolve, with
// MLX's signatures: per-axis arguments take an int (the same for every
// spatial axis) or one entry per axis.
#include <array>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nanobind/stl/array.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "alloy/ops_conv.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

namespace {

template <size_t D>
using IntOrTuple = std::variant<int, std::array<int, D>>;

template <size_t D>
std::array<int, D> per_axis(const IntOrTuple<D>& v) {
  if (const int* i = std::get_if<int>(&v)) {
    std::array<int, D> r;
    r.fill(*i);
    return r;
  }
  return std::get<std::array<int, D>>(v);
}

using IntOrSeq = std::variant<int, std::vector<int>>;
// conv_general's padding: one int, one sequence for both sides, or a
// (low, high) pair of sequences.
using Padding = std::variant<int, std::vector<int>, std::pair<std::vector<int>, std::vector<int>>>;

std::vector<int> per_axis(const IntOrSeq& v, int spatial) {
  if (const int* i = std::get_if<int>(&v)) return std::vector<int>(spatial, *i);
  return std::get<std::vector<int>>(v);
}

template <size_t D>
void def_conv_nd(nb::module_& m, const char* name) {
  m.def(
      name,
      [](nb::handle input, nb::handle weight, const IntOrTuple<D>& stride, const IntOrTuple<D>& padding,
         const IntOrTuple<D>& dilation, int groups, StreamOrDevice s) {
        array x = py::to_array(input), w = py::to_array(weight);
        if constexpr (D == 2) return conv2d(x, w, per_axis(stride), per_axis(padding), per_axis(dilation), groups, s);
        else return conv3d(x, w, per_axis(stride), per_axis(padding), per_axis(dilation), groups, s);
      },
      nb::arg(), nb::arg(), "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1, "groups"_a = 1,
      nb::kw_only(), "stream"_a = nb::none(),
      "Convolution over channels-last input (N, spatial..., C_in) with weight (C_out, kernel..., C_in / groups).");
}

template <size_t D>
void def_conv_transpose_nd(nb::module_& m, const char* name) {
  m.def(
      name,
      [](nb::handle input, nb::handle weight, const IntOrTuple<D>& stride, const IntOrTuple<D>& padding,
         const IntOrTuple<D>& dilation, const IntOrTuple<D>& output_padding, int groups, StreamOrDevice s) {
        array x = py::to_array(input), w = py::to_array(weight);
        if constexpr (D == 2) {
          return conv_transpose2d(x, w, per_axis(stride), per_axis(padding), per_axis(dilation),
                                  per_axis(output_padding), groups, s);
        } else {
          return conv_transpose3d(x, w, per_axis(stride), per_axis(padding), per_axis(dilation),
                                  per_axis(output_padding), groups, s);
        }
      },
      nb::arg(), nb::arg(), "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
      "output_padding"_a = 0, "groups"_a = 1, nb::kw_only(), "stream"_a = nb::none(),
      "Transposed convolution over channels-last input (N, spatial..., C_in) with weight "
      "(C_out, kernel..., C_in / groups).");
}

}  // namespace

void init_conv(nb::module_& m) {
  m.def(
      "conv1d",
      [](nb::handle input, nb::handle weight, int stride, int padding, int dilation, int groups, StreamOrDevice s) {
        return conv1d(py::to_array(input), py::to_array(weight), stride, padding, dilation, groups, s);
      },
      nb::arg(), nb::arg(), "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1, "groups"_a = 1,
      nb::kw_only(), "stream"_a = nb::none(),
      "1-D convolution over input (N, L, C_in) with weight (C_out, K, C_in / groups).");
  def_conv_nd<2>(m, "conv2d");
  def_conv_nd<3>(m, "conv3d");
  m.def(
      "conv_general",
      [](nb::handle input, nb::handle weight, const IntOrSeq& stride, const Padding& padding,
         const IntOrSeq& kernel_dilation, const IntOrSeq& input_dilation, int groups, bool flip, StreamOrDevice s) {
        array x = py::to_array(input), w = py::to_array(weight);
        const int spatial = std::max(x.ndim() - 2, 0);
        std::vector<int> lo, hi;
        if (const auto* both = std::get_if<std::pair<std::vector<int>, std::vector<int>>>(&padding)) {
          lo = both->first;
          hi = both->second;
        } else {
          lo = hi = per_axis(std::holds_alternative<int>(padding) ? IntOrSeq(std::get<int>(padding))
                                                                   : IntOrSeq(std::get<std::vector<int>>(padding)),
                             spatial);
        }
        return conv_general(x, w, per_axis(stride, spatial), lo, hi, per_axis(kernel_dilation, spatial),
                            per_axis(input_dilation, spatial), groups, flip, s);
      },
      nb::arg(), nb::arg(), "stride"_a = 1, "padding"_a = 0, "kernel_dilation"_a = 1,
      "input_dilation"_a = 1, "groups"_a = 1, "flip"_a = false, nb::kw_only(), "stream"_a = nb::none(),
      "General convolution with asymmetric padding, kernel and input dilation, groups and an optional kernel flip.");
  m.def(
      "conv_transpose1d",
      [](nb::handle input, nb::handle weight, int stride, int padding, int dilation, int output_padding, int groups,
         StreamOrDevice s) {
        return conv_transpose1d(py::to_array(input), py::to_array(weight), stride, padding, dilation, output_padding,
                                groups, s);
      },
      nb::arg(), nb::arg(), "stride"_a = 1, "padding"_a = 0, "dilation"_a = 1,
      "output_padding"_a = 0, "groups"_a = 1, nb::kw_only(), "stream"_a = nb::none(),
      "1-D transposed convolution over input (N, L, C_in) with weight (C_out, K, C_in / groups).");
  def_conv_transpose_nd<2>(m, "conv_transpose2d");
  def_conv_transpose_nd<3>(m, "conv_transpose3d");
  m.def(
      "convolve",
      [](nb::handle a, nb::handle v, const std::string& mode, StreamOrDevice s) {
        return convolve(py::to_array(a), py::to_array(v), mode, s);
      },
      nb::arg(), nb::arg(), "mode"_a = "full", nb::kw_only(), "stream"_a = nb::none(),
      "The discrete convolution of two 1-D arrays (numpy.convolve); mode is 'full', 'same' or 'valid'.");
}
