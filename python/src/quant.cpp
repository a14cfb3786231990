// Quantization and special matmuls: mx.quantize, dequantize,
// quantized_matmul, gather_qmm, gather_mm, to_fp8, from_fp8 (signatures as
// mlx.core 0.32.4; array arguments before `/` are positional-only).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "alloy/ops_quant.h"
#include "bindings.h"
#include "stream_or_device.h"

using namespace alloy;
using namespace nb::literals;

using SD = StreamOrDevice;
using OptArray = std::optional<array>;
using OptInt = std::optional<int>;

void init_quant(nb::module_& m) {
  m.def(
      "quantize",
      [](const array& w, OptInt group_size, OptInt bits, const std::string& mode, OptArray global_scale, SD s) {
        std::vector<array> r = quantize(w, group_size, bits, mode, global_scale, s);
        nb::list out;
        for (const array& a : r) out.append(nb::cast(a));
        return nb::tuple(out);
      },
      nb::arg(), "group_size"_a.none() = nb::none(), "bits"_a.none() = nb::none(), "mode"_a = "affine",
      nb::kw_only(), "global_scale"_a.none() = nb::none(), "stream"_a = nb::none(),
      nb::sig("def quantize(w: array, /, group_size: int | None = None, bits: int | None = None, "
              "mode: str = 'affine', *, global_scale: array | None = None, "
              "stream: Stream | Device | None = None) -> tuple[array, array, array]"),
      "Quantizes each group of group_size elements along the last axis of w. Returns (w_q, scales, biases) "
      "for mode 'affine', (w_q, scales) for 'mxfp4', 'mxfp8' and 'nvfp4'; w_q packs the codes into uint32.");
  m.def(
      "dequantize",
      [](const array& w, const array& scales, OptArray biases, OptInt group_size, OptInt bits,
         const std::string& mode, OptArray global_scale, std::optional<Dtype> dtype, SD s) {
        return dequantize(w, scales, biases, group_size, bits, mode, global_scale, dtype, s);
      },
      nb::arg(), "scales"_a, "biases"_a.none() = nb::none(), "group_size"_a.none() = nb::none(),
      "bits"_a.none() = nb::none(), "mode"_a = "affine", "global_scale"_a.none() = nb::none(),
      "dtype"_a.none() = nb::none(), nb::kw_only(), "stream"_a = nb::none(),
      nb::sig("def dequantize(w: array, /, scales: array, biases: array | None = None, group_size: int | None = None, "
              "bits: int | None = None, mode: str = 'affine', global_scale: array | None = None, "
              "dtype: Dtype | None = None, *, stream: Stream | Device | None = None) -> array"),
      "The values that quantize() packed into w. dtype defaults to that of scales and biases (affine) or "
      "bfloat16 (the MX modes).");
  m.def(
      "quantized_matmul",
      [](const array& x, const array& w, const array& scales, OptArray biases, bool transpose, OptInt group_size,
         OptInt bits, const std::string& mode, SD s) {
        return quantized_matmul(x, w, scales, biases, transpose, group_size, bits, mode, s);
      },
      nb::arg(), nb::arg(), "scales"_a, "biases"_a.none() = nb::none(), "transpose"_a = true,
      "group_size"_a.none() = nb::none(), "bits"_a.none() = nb::none(), "mode"_a = "affine", nb::kw_only(),
      "stream"_a = nb::none(),
      nb::sig("def quantized_matmul(x: array, w: array, /, scales: array, biases: array | None = None, "
              "transpose: bool = True, group_size: int | None = None, bits: int | None = None, "
              "mode: str = 'affine', *, stream: Stream | Device | None = None) -> array"),
      "x @ w.T (transpose=True) or x @ w, where w is a quantized matrix (see quantize).");
  m.def(
      "gather_qmm",
      [](const array& x, const array& w, const array& scales, OptArray biases, OptArray lhs, OptArray rhs,
         bool transpose, OptInt group_size, OptInt bits, const std::string& mode, OptArray global_scale,
         bool sorted_indices, SD s) {
        if (global_scale) throw std::invalid_argument("[gather_qmm] A global scale is not implemented in Alloy yet.");
        return gather_qmm(x, w, scales, biases, lhs, rhs, transpose, group_size, bits, mode, sorted_indices, s);
      },
      nb::arg(), nb::arg(), "scales"_a, "biases"_a.none() = nb::none(), "lhs_indices"_a.none() = nb::none(),
      "rhs_indices"_a.none() = nb::none(), "transpose"_a = true, "group_size"_a.none() = nb::none(),
      "bits"_a.none() = nb::none(), "mode"_a = "affine", "global_scale"_a.none() = nb::none(), nb::kw_only(),
      "sorted_indices"_a = false, "stream"_a = nb::none(),
      nb::sig("def gather_qmm(x: array, w: array, /, scales: array, biases: array | None = None, "
              "lhs_indices: array | None = None, rhs_indices: array | None = None, transpose: bool = True, "
              "group_size: int | None = None, bits: int | None = None, mode: str = 'affine', "
              "global_scale: array | None = None, *, sorted_indices: bool = False, "
              "stream: Stream | Device | None = None) -> array"),
      "quantized_matmul whose operands' batch entries are picked by flat indices (as gather_mm).");
  m.def(
      "qqmm",
      [](const array& x, const array& w, OptArray scales, OptInt group_size, OptInt bits, const std::string& mode,
         OptArray global_scale_x, OptArray global_scale_w, SD s) {
        return qqmm(x, w, scales, group_size, bits, mode, global_scale_x, global_scale_w, s);
      },
      "x"_a, "w"_a, "scales"_a.none() = nb::none(), "group_size"_a.none() = nb::none(), "bits"_a.none() = nb::none(),
      "mode"_a = "nvfp4", "global_scale_x"_a.none() = nb::none(), "global_scale_w"_a.none() = nb::none(),
      nb::kw_only(), "stream"_a = nb::none(),
      nb::sig("def qqmm(x: array, w: array, scales: array | None = None, group_size: int | None = None, "
              "bits: int | None = None, mode: str = 'nvfp4', global_scale_x: array | None = None, "
              "global_scale_w: array | None = None, *, stream: Stream | Device | None = None) -> array"),
      "x @ w.T with x quantized on the fly and w used as given when packed (with scales), else quantized on the "
      "fly, in mode 'nvfp4', 'mxfp8' or 'mxfp4'. The result has x's dtype; gradients need w unpacked.");
  m.def(
      "gather_qqmm",
      [](const array& x, const array& w, OptArray scales, OptArray lhs, OptArray rhs, OptInt group_size, OptInt bits,
         const std::string& mode, OptArray global_scale_x, OptArray global_scale_w, bool sorted_indices, SD s) {
        return gather_qqmm(x, w, scales, lhs, rhs, group_size, bits, mode, global_scale_x, global_scale_w,
                           sorted_indices, s);
      },
      nb::arg(), nb::arg(), "scales"_a.none() = nb::none(), "lhs_indices"_a.none() = nb::none(),
      "rhs_indices"_a.none() = nb::none(), "group_size"_a.none() = nb::none(), "bits"_a.none() = nb::none(),
      "mode"_a = "nvfp4", "global_scale_x"_a.none() = nb::none(), "global_scale_w"_a.none() = nb::none(),
      nb::kw_only(), "sorted_indices"_a = false, "stream"_a = nb::none(),
      nb::sig("def gather_qqmm(x: array, w: array, /, scales: array | None = None, "
              "lhs_indices: array | None = None, rhs_indices: array | None = None, group_size: int | None = None, "
              "bits: int | None = None, mode: str = 'nvfp4', global_scale_x: array | None = None, "
              "global_scale_w: array | None = None, *, sorted_indices: bool = False, "
              "stream: Stream | Device | None = None) -> array"),
      "qqmm over batch entries of x and w picked by flat indices (as gather_mm).");
  m.def(
      "gather_mm",
      [](const array& a, const array& b, OptArray lhs, OptArray rhs, bool sorted_indices, SD s) {
        return gather_mm(a, b, lhs, rhs, sorted_indices, s);
      },
      nb::arg(), nb::arg(), "lhs_indices"_a.none() = nb::none(), "rhs_indices"_a.none() = nb::none(), nb::kw_only(),
      "sorted_indices"_a = false, "stream"_a = nb::none(),
      nb::sig("def gather_mm(a: array, b: array, /, lhs_indices: array | None = None, "
              "rhs_indices: array | None = None, *, sorted_indices: bool = False, "
              "stream: Stream | Device | None = None) -> array"),
      "Matrix products of a's and b's batch entries picked by flat indices (default: all, in order); the "
      "index arrays broadcast together.");
  m.def("hadamard_transform",
        [](const array& a, std::optional<float> scale, SD s) { return hadamard_transform(a, scale, s); }, "a"_a,
        "scale"_a.none() = nb::none(), "stream"_a = nb::none(),
        nb::sig("def hadamard_transform(a: array, scale: float | None = None, "
                "stream: Stream | Device | None = None) -> array"),
        "The Walsh-Hadamard transform along the last axis times scale (default 1/sqrt(n)); n a power of two.");
  m.def("segmented_mm", [](const array& a, const array& b, const array& segments, SD s) {
          return segmented_mm(a, b, segments, s);
        },
        nb::arg(), nb::arg(), "segments"_a, nb::kw_only(), "stream"_a = nb::none(),
        nb::sig("def segmented_mm(a: array, b: array, /, segments: array, *, "
                "stream: Stream | Device | None = None) -> array"),
        "a[:, start:end] @ b[start:end, :] for each (start, end) pair in the last axis of segments.");
  m.def("block_masked_mm",
        [](const array& a, const array& b, int block_size, OptArray mask_out, OptArray mask_lhs, OptArray mask_rhs,
           SD s) { return block_masked_mm(a, b, block_size, mask_out, mask_lhs, mask_rhs, s); },
        nb::arg(), nb::arg(), "block_size"_a = 64, "mask_out"_a.none() = nb::none(),
        "mask_lhs"_a.none() = nb::none(), "mask_rhs"_a.none() = nb::none(), nb::kw_only(), "stream"_a = nb::none(),
        nb::sig("def block_masked_mm(a: array, b: array, /, block_size: int = 64, mask_out: array | None = None, "
                "mask_lhs: array | None = None, mask_rhs: array | None = None, *, "
                "stream: Stream | Device | None = None) -> array"),
        "a @ b with block_size x block_size blocks masked: bool masks drop blocks, other masks scale them.");
  m.def("to_fp8", [](const array& x, SD s) { return to_fp8(x, s); }, nb::arg(), nb::kw_only(), "stream"_a = nb::none(),
        nb::sig("def to_fp8(x: array, /, *, stream: Stream | Device | None = None) -> array"),
        "fp8 e4m3 codes (uint8) of a floating array, rounded to nearest even and saturating at +-448.");
  m.def("from_fp8", [](const array& x, Dtype dtype, SD s) { return from_fp8(x, dtype, s); }, nb::arg(),
        "dtype"_a = bfloat16, nb::kw_only(), "stream"_a = nb::none(),
        nb::sig("def from_fp8(x: array, /, dtype: Dtype = bfloat16, *, stream: Stream | Device | None = None) -> array"),
        "The values of fp8 e4m3 codes (uint8) as dtype.");
}
