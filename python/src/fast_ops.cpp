// mx.fast.rms_norm, layer_norm, rope, scaled_dot_product_attention and
// cross_entropy and gated_delta_update, with MLX's signatures, beside metal_kernel in mx.fast.
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include "alloy/fast_ops.h"
#include "bindings.h"
#include "convert.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

namespace {

std::optional<array> optional_array(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  return py::to_array(h);
}

}  // namespace

void init_fast_ops(nb::module_& m) {
  nb::module_ f = nb::borrow<nb::module_>(m.attr("fast"));
  f.def(
      "rms_norm",
      [](nb::handle x, nb::handle weight, float eps, StreamOrDevice s) {
        return fast::rms_norm(py::to_array(x), optional_array(weight), eps, s);
      },
      "x"_a, "weight"_a.none(), "eps"_a, nb::kw_only(), "stream"_a = nb::none(),
      "Root-mean-square normalisation over the last axis, scaled by `weight` unless it is None.");
  f.def(
      "layer_norm",
      [](nb::handle x, nb::handle weight, nb::handle bias, float eps, StreamOrDevice s) {
        return fast::layer_norm(py::to_array(x), optional_array(weight), optional_array(bias), eps, s);
      },
      "x"_a, "weight"_a.none(), "bias"_a.none(), "eps"_a, nb::kw_only(), "stream"_a = nb::none(),
      "Layer normalisation over the last axis; `weight` scales and `bias` shifts unless they are None.");
  f.def(
      "rope",
      [](nb::handle a, int dims, bool traditional, std::optional<float> base, float scale,
         std::variant<int, nb::handle> offset, nb::handle freqs, StreamOrDevice s) {
        array x = py::to_array(a);
        std::optional<array> fr = optional_array(freqs);
        if (const int* o = std::get_if<int>(&offset)) return fast::rope(x, dims, traditional, base, scale, *o, fr, s);
        return fast::rope(x, dims, traditional, base, scale, py::to_array(std::get<nb::handle>(offset)), fr, s);
      },
      "a"_a, "dims"_a, nb::kw_only(), "traditional"_a, "base"_a.none(), "scale"_a, "offset"_a,
      "freqs"_a.none() = nb::none(), "stream"_a = nb::none(),
      "Rotary positional encoding of the first `dims` features of an input (B, *, T, D).");
  f.def(
      "scaled_dot_product_attention",
      [](nb::handle q, nb::handle k, nb::handle v, float scale, nb::handle mask, nb::handle sinks, bool force_fused,
         StreamOrDevice s) {
        if (force_fused) {
          throw std::invalid_argument(
              "[scaled_dot_product_attention] force_fused=True, but Alloy has no fused attention kernel (it runs "
              "the composite on every device).");
        }
        std::string mode;
        std::optional<array> mask_arr;
        if (nb::isinstance<nb::str>(mask)) {
          mode = nb::cast<std::string>(mask);
        } else if (!mask.is_none()) {
          mask_arr = py::to_array(mask);
        }
        return fast::scaled_dot_product_attention(py::to_array(q), py::to_array(k), py::to_array(v), scale, mode,
                                                  mask_arr, optional_array(sinks), s);
      },
      "q"_a, "k"_a, "v"_a, nb::kw_only(), "scale"_a, "mask"_a.none() = nb::none(), "sinks"_a.none() = nb::none(),
      "force_fused"_a = false, "stream"_a = nb::none(),
      "softmax(scale * q @ k^T + mask) @ v with grouped-query heads, a 'causal' or array mask, and attention sinks.");
  f.def(
      "gated_delta_update",
      [](nb::handle q, nb::handle k, nb::handle v, nb::handle gamma, nb::handle beta, nb::handle initial_state,
         nb::handle mask, StreamOrDevice s) {
        // A list, as MLX returns.
        return fast::gated_delta_update(py::to_array(q), py::to_array(k), py::to_array(v), py::to_array(gamma),
                                        py::to_array(beta), optional_array(initial_state), optional_array(mask), s);
      },
      "q"_a, "k"_a, "v"_a, "gamma"_a, "beta"_a, "initial_state"_a.none() = nb::none(), "mask"_a.none() = nb::none(),
      "stream"_a = nb::none(),
      "The gated delta rule over T steps; returns (output (B, T, Hv, Dv), final state (B, Hv, Dv, Dk)).");
  f.def(
      "cross_entropy",
      [](nb::handle logits, nb::handle targets, StreamOrDevice s) {
        return fast::cross_entropy(py::to_array(logits), py::to_array(targets), s);
      },
      "logits"_a, "targets"_a, nb::kw_only(), "stream"_a = nb::none(),
      "Cross entropy over the last axis with class-index targets, in float32.");
}
