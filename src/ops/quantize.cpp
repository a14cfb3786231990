// quantize, dequantize, quantized_matmul, gather_qmm as compositions: the
// codes are computed and (un)packed with elementwise ops, and the matmuls run
// on the dequantized weight, so both devices and autodiff (w.r.t. x) come
// from existing ops. The arithmetic follows MLX's CPU quantizer step by step
// (float32, round half to even) so packed words, scales and biases match it.
#include <sstream>
#include <stdexcept>
#include <string>

#include "alloy/ops.h"
#include "alloy/ops_quant.h"
#include "alloy/ops_shape.h"
#include "alloy/transforms.h"
#include "transforms/custom_function.h"
#include "op_utils.h"
#include "quant_formats.h"
#include "quant_pack.h"

namespace alloy {
namespace {

enum class Mode { affine, mxfp4, mxfp8, nvfp4 };

struct Spec {
  Mode mode;
  int group_size;
  int bits;
};

std::string err_prefix(const char* op) { return std::string("[") + op + "] "; }

Spec parse_spec(const char* op, const std::string& mode, std::optional<int> group_size, std::optional<int> bits) {
  auto fixed = [&](Mode m, int gs, int b) {
    if (group_size && *group_size != gs) {
      throw std::invalid_argument(err_prefix(op) + mode + " quantization requires group size " + std::to_string(gs) +
                                  " but got " + std::to_string(*group_size) + ".");
    }
    if (bits && *bits != b) {
      throw std::invalid_argument(err_prefix(op) + mode + " quantization requires bits to be " + std::to_string(b) +
                                  " but got " + std::to_string(*bits) + ".");
    }
    return Spec{m, gs, b};
  };
  if (mode == "mxfp4") return fixed(Mode::mxfp4, 32, 4);
  if (mode == "mxfp8") return fixed(Mode::mxfp8, 32, 8);
  if (mode == "nvfp4") return fixed(Mode::nvfp4, 16, 4);
  if (mode != "affine") throw std::invalid_argument(err_prefix(op) + "Invalid quantization mode '" + mode + "'.");
  Spec sp{Mode::affine, group_size.value_or(64), bits.value_or(4)};
  if (sp.group_size != 32 && sp.group_size != 64 && sp.group_size != 128) {
    throw std::invalid_argument(err_prefix(op) + "The requested group size " + std::to_string(sp.group_size) +
                                " is not supported. The supported group sizes are 32, 64, and 128.");
  }
  if (sp.bits < 1 || sp.bits > 8 || sp.bits == 7) {
    throw std::invalid_argument(err_prefix(op) + "The requested number of bits " + std::to_string(sp.bits) +
                                " is not supported. The supported bits are 1, 2, 3, 4, 5, 6 and 8.");
  }
  return sp;
}

// (..., K) -> (..., K / g, g)
array grouped(const array& a, int g, SD s) {
  Shape sh(a.shape().begin(), a.shape().end() - 1);
  sh.push_back(a.shape(-1) / g);
  sh.push_back(g);
  return reshape(a, sh, s);
}

Shape with_last(const Shape& shape, ShapeElem last) {
  Shape sh = shape;
  sh.back() = last;
  return sh;
}

std::vector<array> affine_quantize(const array& w, const Spec& sp, SD s) {
  array wf = grouped(astype(w, float32, s), sp.group_size, s);
  array n_bins(static_cast<float>((1 << sp.bits) - 1), float32);
  array zero(0.0f, float32);
  array w_max = max(wf, {-1}, true, s), w_min = min(wf, {-1}, true, s);
  array scale = maximum(divide(subtract(w_max, w_min, s), n_bins, s), array(1e-7f, float32), s);
  array bias = w_min;
  if (sp.bits > 1) {
    // The edge of larger magnitude maps exactly onto a code, so it is kept
    // exactly (and a zero edge gives a zero bias). MLX keeps the plain
    // min/max grid for one bit.
    array mask = greater(abs(w_min, s), abs(w_max, s), s);
    scale = where(mask, scale, negative(scale, s), s);
    array edge = where(mask, w_min, w_max, s);
    array q0 = round(divide(edge, scale, s), 0, s);
    array nonzero = not_equal(q0, zero, s);
    scale = where(nonzero, divide(edge, q0, s), scale, s);
    bias = where(nonzero, edge, zero, s);
  }
  array codes = clip(round(divide(subtract(wf, bias, s), scale, s), 0, s), zero, n_bins, s);
  codes = reshape(astype(codes, uint32, s), w.shape(), s);
  Shape gshape = with_last(w.shape(), w.shape(-1) / sp.group_size);
  return {quant::pack_bits(codes, sp.bits, s), reshape(astype(scale, w.dtype(), s), gshape, s),
          reshape(astype(bias, w.dtype(), s), gshape, s)};
}

// nvfp4's global scale g (the tensor's absolute maximum, typically) stretches
// the block scales over e4m3's range: a block's stored scale is
// e4m3(amax / 6 * (6 * 448 / g)) and its value times g / (6 * 448) applies.
constexpr float kNvfp4Range = 6.0f * 448.0f;

std::vector<array> fp_quantize(const array& w, const Spec& sp, const std::optional<array>& global_scale, SD s) {
  array wf = grouped(astype(w, float32, s), sp.group_size, s);
  array amax = max(abs(wf, s), {-1}, true, s);
  array scale_code = array(0u, uint32), scale = array(0.0f, float32);
  if (sp.mode == Mode::nvfp4) {
    // An e4m3 scale, rounded to nearest, for the block's largest magnitude.
    // amax / 6 rounds in w's type first (as MLX computes it), then takes the global factor.
    array block = astype(astype(divide(amax, array(6.0f, float32), s), w.dtype(), s), float32, s);
    if (global_scale) block = multiply(block, divide(array(kNvfp4Range), *global_scale, s), s);
    scale_code = quant::fp8_e4m3_encode(block, s);
    scale = quant::fp8_e4m3_decode(scale_code, s);
  } else {
    // A power-of-two scale rounded up, so no element overflows the format.
    const float max_code = sp.mode == Mode::mxfp4 ? 6.0f : 448.0f;
    scale_code = quant::e8m0_encode_ceil(divide(amax, array(max_code, float32), s), s);
    scale = quant::e8m0_decode(scale_code, s);
  }
  // A zero scale (an all-zero nvfp4 block) quantizes to zeros.
  array zero(0.0f, float32);
  // As MLX rounds it: w / scale in w's own type, then times the global factor.
  array scaled = astype(astype(divide(wf, scale, s), w.dtype(), s), float32, s);
  if (global_scale) scaled = multiply(scaled, divide(array(kNvfp4Range), *global_scale, s), s);
  scaled = where(equal(scale, zero, s), zero, scaled, s);
  array codes = sp.bits == 8 ? quant::fp8_e4m3_encode(scaled, s) : quant::fp4_e2m1_encode(scaled, s);
  codes = reshape(codes, w.shape(), s);
  Shape gshape = with_last(w.shape(), w.shape(-1) / sp.group_size);
  return {quant::pack_bits(codes, sp.bits, s), reshape(astype(scale_code, uint8, s), gshape, s)};
}

void check_packed(const char* op, const array& w, const array& scales, const std::optional<array>& biases,
                  const Spec& sp) {
  if (w.dtype() != uint32) {
    throw std::invalid_argument(err_prefix(op) + (std::string(op) == "dequantize"
                                                      ? "The matrix should be given as a uint32"
                                                      : std::string("The weight matrix should be uint32 but received ") +
                                                            dtype_name(w.dtype())));
  }
  if (sp.mode == Mode::affine) {
    if (!biases) throw std::invalid_argument(err_prefix(op) + "Biases must be provided for affine quantization.");
  } else if (scales.dtype() != uint8) {
    throw std::invalid_argument(err_prefix(op) + "Scale type must be uint8 but received type " +
                                dtype_name(scales.dtype()) + ".");
  }
  if (w.ndim() < 1 || scales.ndim() != w.ndim()) {
    throw std::invalid_argument(err_prefix(op) + "The weight and scales must have the same number of dimensions.");
  }
  bool ok = (static_cast<int64_t>(w.shape(-1)) * 32) % sp.bits == 0 &&
            static_cast<int64_t>(scales.shape(-1)) * sp.group_size == static_cast<int64_t>(w.shape(-1)) * 32 / sp.bits;
  for (int i = 0; i + 1 < w.ndim(); ++i) ok = ok && w.shape(i) == scales.shape(i);
  if (biases) ok = ok && biases->shape() == scales.shape();
  if (!ok) {
    std::ostringstream msg;
    msg << err_prefix(op) << "Shape of scales and biases does not match the matrix given the quantization "
        << "parameters. Provided matrix of shape " << shape_to_string(w.shape()) << " and scales/biases of shape "
        << shape_to_string(scales.shape()) << " with group_size=" << sp.group_size << " and bits=" << sp.bits << ".";
    throw std::invalid_argument(msg.str());
  }
}

array dequantize_checked(const array& w, const array& scales, const std::optional<array>& biases, const Spec& sp,
                         Dtype out, SD s, const std::optional<array>& global_scale = std::nullopt) {
  array codes = grouped(quant::unpack_bits(w, sp.bits, s), sp.group_size, s);
  Shape full = with_last(w.shape(), w.shape(-1) * 32 / sp.bits);
  if (sp.mode == Mode::affine) {
    // As MLX rounds it: scale times code in the scales' type, plus the bias
    // in the promoted type, then the requested type.
    array scaled = multiply(expand_dims(scales, -1, s), astype(codes, scales.dtype(), s), s);
    return reshape(astype(add(scaled, expand_dims(*biases, -1, s), s), out, s), full, s);
  }
  // Code times scale is exact in float32 for these formats (before a global scale).
  array values = sp.bits == 8 ? quant::fp8_e4m3_decode(codes, s) : quant::fp4_e2m1_decode(codes, s);
  array scale = sp.mode == Mode::nvfp4 ? quant::fp8_e4m3_decode(scales, s) : quant::e8m0_decode(scales, s);
  // The global factor joins the block scale before the code (MLX's rounding order).
  if (global_scale) scale = multiply(scale, divide(*global_scale, array(kNvfp4Range), s), s);
  return reshape(astype(multiply(values, expand_dims(scale, -1, s), s), out, s), full, s);
}

Dtype affine_dtype(const array& scales, const std::optional<array>& biases) {
  return biases ? promote_types(scales.dtype(), biases->dtype()) : scales.dtype();
}

void check_global_scale(const char* op, const std::optional<array>& global_scale, const Spec& sp) {
  if (!global_scale) return;
  if (sp.mode != Mode::nvfp4) {
    throw std::invalid_argument(err_prefix(op) + "Global scale is only supported for 'nvfp4' quantization mode.");
  }
  if (global_scale->ndim() != 0) {
    throw std::invalid_argument(err_prefix(op) + "Global scale must be a scalar but got shape " +
                                shape_to_string(global_scale->shape()) + ".");
  }
  if (global_scale->dtype() != float32) {
    throw std::invalid_argument(err_prefix(op) + "Global scale must have dtype float32 but got " +
                                dtype_name(global_scale->dtype()) + ".");
  }
}

}  // namespace

std::vector<array> quantize(const array& w, std::optional<int> group_size, std::optional<int> bits,
                            const std::string& mode, const std::optional<array>& global_scale, SD s) {
  Spec sp = parse_spec("quantize", mode, group_size, bits);
  check_global_scale("quantize", global_scale, sp);
  if (!is_floating(w.dtype())) {
    throw std::invalid_argument(std::string("[quantize] Only real floating types can be quantized but w has type ") +
                                dtype_name(w.dtype()) + ".");
  }
  if (w.ndim() < 2) {
    throw std::invalid_argument("[quantize] The matrix to be quantized must have at least 2 dimension but it has only " +
                                std::to_string(w.ndim()) + ".");
  }
  // A non-power-of-two width packs 32 codes at a time.
  const int align = (sp.bits & (sp.bits - 1)) == 0 ? sp.group_size : std::max(sp.group_size, 32);
  if (w.shape(-1) % align != 0) {
    throw std::invalid_argument("[quantize] The last dimension of the matrix needs to be divisible by the "
                                "quantization group size " +
                                std::to_string(sp.group_size) +
                                ". However the provided  matrix has shape " + shape_to_string(w.shape()));
  }
  return sp.mode == Mode::affine ? affine_quantize(w, sp, s) : fp_quantize(w, sp, global_scale, s);
}

array dequantize(const array& w, const array& scales, const std::optional<array>& biases,
                 std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                 const std::optional<array>& global_scale, std::optional<Dtype> dtype, SD s) {
  Spec sp = parse_spec("dequantize", mode, group_size, bits);
  check_global_scale("dequantize", global_scale, sp);
  check_packed("dequantize", w, scales, biases, sp);
  if (dtype && !is_floating(*dtype)) {
    throw std::invalid_argument(std::string("[dequantize] Only real floating types are supported but dtype == ") +
                                dtype_name(*dtype) + ".");
  }
  Dtype out = dtype ? *dtype : (sp.mode == Mode::affine ? affine_dtype(scales, biases) : bfloat16);
  return dequantize_checked(w, scales, biases, sp, out, s, global_scale);
}

namespace {

// Validates x against the packed weight and returns the dequantized weight,
// oriented as the right operand of x @ (.).
array qmm_rhs(const char* op, const array& x, const array& w, const array& scales, const std::optional<array>& biases,
              bool transpose, const Spec& sp, Dtype out, SD s, const std::optional<array>& global_scale = std::nullopt) {
  check_packed(op, w, scales, biases, sp);
  if (w.ndim() < 2) throw std::invalid_argument(err_prefix(op) + "The weight matrix must have at least 2 dimensions.");
  const ShapeElem rows = w.shape(-2), cols = w.shape(-1) * 32 / sp.bits;
  const ShapeElem k = transpose ? cols : rows;
  if (x.ndim() < 1 || x.shape(-1) != k) {
    std::ostringstream msg;
    msg << err_prefix(op) << "Last dimension of first input with shape (..., " << (x.ndim() ? x.shape(-1) : 0)
        << ") does not match the expanded quantized matrix (" << (transpose ? cols : rows) << ", "
        << (transpose ? rows : cols) << ") computed from shape " << shape_to_string(w.shape())
        << " with group_size=" << sp.group_size << ", bits=" << sp.bits
        << " and transpose=" << (transpose ? "true" : "false");
    throw std::invalid_argument(msg.str());
  }
  array wd = dequantize_checked(w, scales, biases, sp, out, s, global_scale);
  return transpose ? swapaxes(wd, -1, -2, s) : wd;
}

Dtype qmm_dtype(const array& x, const array& scales, const std::optional<array>& biases, const Spec& sp) {
  Dtype t = sp.mode == Mode::affine ? promote_types(x.dtype(), affine_dtype(scales, biases)) : x.dtype();
  return is_floating(t) ? t : float32;
}

}  // namespace

array quantized_matmul(const array& x, const array& w, const array& scales, const std::optional<array>& biases,
                       bool transpose, std::optional<int> group_size, std::optional<int> bits,
                       const std::string& mode, SD s) {
  Spec sp = parse_spec("quantized_matmul", mode, group_size, bits);
  Dtype out = qmm_dtype(x, scales, biases, sp);
  array rhs = qmm_rhs("quantized_matmul", x, w, scales, biases, transpose, sp, out, s);
  // A vector x multiplies as one row.
  if (x.ndim() == 1) return squeeze(matmul(expand_dims(astype(x, out, s), 0, s), rhs, s), {-2}, s);
  return matmul(astype(x, out, s), rhs, s);
}

array gather_qmm(const array& x, const array& w, const array& scales, const std::optional<array>& biases,
                 const std::optional<array>& lhs_indices, const std::optional<array>& rhs_indices, bool transpose,
                 std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                 bool sorted_indices, SD s) {
  Spec sp = parse_spec("gather_qmm", mode, group_size, bits);
  Dtype out = qmm_dtype(x, scales, biases, sp);
  array rhs = qmm_rhs("gather_qmm", x, w, scales, biases, transpose, sp, out, s);
  return gather_mm(astype(x, out, s), rhs, lhs_indices, rhs_indices, sorted_indices, s);
}

// ---- qqmm, gather_qqmm: both operands rounded through a floating format.
// The rounded operands are exact in float32 (a code times a power-of-two or
// e4m3 scale), so the product runs as a float32 matmul and is then cast to
// x's dtype.
namespace {

Spec parse_qq_spec(const char* op, const std::string& mode, std::optional<int> group_size, std::optional<int> bits) {
  if (mode == "affine") {
    // MLX accepts the name and fails when evaluating (RuntimeError); so do we, but up front.
    throw std::runtime_error(err_prefix(op) + "The 'affine' mode is not supported: both operands are quantized to a "
                             "floating format, one of 'nvfp4', 'mxfp8' or 'mxfp4'.");
  }
  return parse_spec(op, mode, group_size, bits);
}

bool is_qq_float(Dtype t) { return t == float32 || t == float16 || t == bfloat16; }

void check_qq_inputs(const char* op, const array& x, const array& w, const std::optional<array>& scales,
                     const Spec& sp, const std::optional<array>& gsx, const std::optional<array>& gsw) {
  if (w.dtype() == uint32) {
    if (!scales) throw std::invalid_argument(err_prefix(op) + "Scales must be provided if second argument is quantized.");
  } else {
    if (!is_qq_float(w.dtype())) {
      throw std::invalid_argument(err_prefix(op) + "Only real floating types except float64 are supported but "
                                  "second argument dtype == " + dtype_name(w.dtype()) + ".");
    }
    if (scales) {
      throw std::invalid_argument(err_prefix(op) + "Scales were given but the second argument is not quantized (" +
                                  dtype_name(w.dtype()) + ", not packed uint32).");
    }
  }
  if (!is_qq_float(x.dtype())) {
    throw std::invalid_argument(err_prefix(op) + "Only real floating types except float64 are supported but "
                                "first argument dtype == " + dtype_name(x.dtype()) + ".");
  }
  check_global_scale(op, gsx, sp);
  check_global_scale(op, gsw, sp);
  if (sp.mode == Mode::nvfp4 && gsx.has_value() != gsw.has_value()) {
    throw std::invalid_argument(err_prefix(op) + "For nvfp4 mode, either both global_scale_x and global_scale_w "
                                "must be provided, or neither.");
  }
}

// The right operand (..., K, N) in float32, checked against x.
array qq_weight(const char* op, const array& x, const array& w, const std::optional<array>& scales, const Spec& sp,
                const std::optional<array>& gsw, SD s) {
  if (w.dtype() == uint32) return qmm_rhs(op, x, w, *scales, std::nullopt, true, sp, float32, s, gsw);
  if (x.shape(-1) != w.shape(-1)) {
    throw std::invalid_argument(err_prefix(op) + "Last dimension of first input with shape " +
                                shape_to_string(x.shape()) + " must match last dimension of second input with shape " +
                                shape_to_string(w.shape()) + ".");
  }
  if (w.shape(-1) % sp.group_size != 0) {
    throw std::invalid_argument(err_prefix(op) + "The inner dimension " + std::to_string(w.shape(-1)) +
                                " must be divisible by the group size " + std::to_string(sp.group_size) + ".");
  }
  auto q = fp_quantize(w, sp, gsw, s);
  array wd = dequantize_checked(q[0], q[1], std::nullopt, sp, w.dtype(), s, gsw);
  return swapaxes(astype(wd, float32, s), -1, -2, s);
}

// x quantized along its last axis and back, in x's dtype (as MLX rounds it), then float32.
array qq_round_trip(const char* op, const array& x, const Spec& sp, const std::optional<array>& gsx, SD s) {
  if (x.shape(-1) % sp.group_size != 0) {
    throw std::invalid_argument(err_prefix(op) + "The last dimension of the first input (" +
                                std::to_string(x.shape(-1)) + ") must be divisible by the group size " +
                                std::to_string(sp.group_size) + ".");
  }
  auto q = fp_quantize(x, sp, gsx, s);
  return astype(dequantize_checked(q[0], q[1], std::nullopt, sp, x.dtype(), s, gsx), float32, s);
}

std::string mode_name(const Spec& sp) {
  return sp.mode == Mode::nvfp4 ? "nvfp4" : sp.mode == Mode::mxfp8 ? "mxfp8" : "mxfp4";
}

// primals: x (M, K), w, [scales], [global_scale_x, global_scale_w].
array qqmm_2d(const std::vector<array>& primals, bool has_scales, bool has_global, const Spec& sp, SD s) {
  auto parts = [=](const std::vector<array>& in) {
    std::optional<array> scales, gsx, gsw;
    if (has_scales) scales = in[2];
    if (has_global) gsx = in[2 + has_scales], gsw = in[3 + has_scales];
    return std::make_tuple(scales, gsx, gsw);
  };
  auto forward = [=](const std::vector<array>& in) -> std::vector<array> {
    auto [scales, gsx, gsw] = parts(in);
    array weight = qq_weight("qqmm", in[0], in[1], scales, sp, gsw, s);
    return {astype(matmul(qq_round_trip("qqmm", in[0], sp, gsx, s), weight, s), in[0].dtype(), s)};
  };
  // MLX's rule: each gradient is itself a qqmm, of the cotangent (quantized
  // along the other axis) with the other operand's transpose.
  // Only the wanted ones are built: each needs its own axes divisible by the
  // group size (dx: w's rows; dw: x's rows).
  auto backward = [=](const std::vector<array>& in, const std::vector<array>& cot,
                      const std::vector<int>& wanted) -> std::vector<array> {
    if (in[1].dtype() == uint32) {
      throw std::invalid_argument("[qqmm] Gradients need the weight in non-quantized form: pass the floating-point "
                                  "w (it is quantized on the fly).");
    }
    auto [scales, gsx, gsw] = parts(in);
    const array& c = cot[0];
    std::optional<array> c_amax;
    if (has_global) c_amax = astype(max(abs(c, s), false, s), float32, s);
    std::vector<array> out;
    for (size_t i = 0; i < in.size(); ++i) out.push_back(zeros_like(in[i], s));
    auto check_rows = [&](const array& operand, const char* gradient, const char* rows) {
      if (operand.shape(0) % sp.group_size != 0) {
        throw std::invalid_argument("[qqmm] The gradient with respect to " + std::string(gradient) +
                                    " quantizes along the rows of " + rows + ": their number (" +
                                    std::to_string(operand.shape(0)) + ") must be divisible by the group size " +
                                    std::to_string(sp.group_size) + ".");
      }
    };
    for (int a : wanted) {
      if (a == 0) check_rows(in[1], "x", "w");
      if (a == 1) check_rows(in[0], "w", "x");
      if (a == 0) {
        out[0] = qqmm(c, swapaxes(in[1], -1, -2, s), std::nullopt, sp.group_size, sp.bits, mode_name(sp), c_amax,
                      gsw, s);
      } else if (a == 1) {
        out[1] = qqmm(swapaxes(c, -1, -2, s), swapaxes(in[0], -1, -2, s), std::nullopt, sp.group_size, sp.bits,
                      mode_name(sp), c_amax, gsx, s);
      }
    }
    return out;
  };
  auto no_jvp = [](const std::vector<array>&, const std::vector<array>&,
                   const std::vector<int>&) -> std::vector<array> {
    throw std::runtime_error("[qqmm] Forward-mode derivatives (jvp) are not defined for qqmm (as in MLX).");
  };
  return detail::custom_function_of(forward, backward, no_jvp)(primals)[0];
}

}  // namespace

array qqmm(const array& x_in, const array& w, const std::optional<array>& scales, std::optional<int> group_size,
           std::optional<int> bits, const std::string& mode, const std::optional<array>& global_scale_x,
           const std::optional<array>& global_scale_w, SD s) {
  Spec sp = parse_qq_spec("qqmm", mode, group_size, bits);
  array x = x_in;
  if (x.ndim() == 1) {
    x = expand_dims(x, 0, s);
  } else if (w.ndim() == 2 && x.ndim() > 2) {
    x = flatten(x, 0, -2, s);
  }
  if (x.ndim() != 2 || w.ndim() != 2) {
    throw std::invalid_argument("[qqmm] Only 2D inputs are supported but x.ndim() == " + std::to_string(x.ndim()) +
                                " and w.ndim() == " + std::to_string(w.ndim()) + ".");
  }
  check_qq_inputs("qqmm", x, w, scales, sp, global_scale_x, global_scale_w);
  std::vector<array> primals{x, w};
  if (scales) primals.push_back(*scales);
  const bool has_global = global_scale_x.has_value();
  if (has_global) {
    primals.push_back(*global_scale_x);
    primals.push_back(*global_scale_w);
  }
  array out = qqmm_2d(primals, scales.has_value(), has_global, sp, s);
  if (x_in.ndim() > 2) return unflatten(out, 0, Shape(x_in.shape().begin(), x_in.shape().end() - 1), s);
  if (x_in.ndim() == 1) return squeeze(out, {0}, s);
  return out;
}

array gather_qqmm(const array& x, const array& w, const std::optional<array>& scales,
                  const std::optional<array>& lhs_indices, const std::optional<array>& rhs_indices,
                  std::optional<int> group_size, std::optional<int> bits, const std::string& mode,
                  const std::optional<array>& global_scale_x, const std::optional<array>& global_scale_w,
                  bool sorted_indices, SD s) {
  Spec sp = parse_qq_spec("gather_qqmm", mode, group_size, bits);
  if (x.ndim() < 2 || w.ndim() < 2) {
    throw std::invalid_argument("[gather_qqmm] x and w need at least 2 dimensions but x.ndim() == " +
                                std::to_string(x.ndim()) + " and w.ndim() == " + std::to_string(w.ndim()) + ".");
  }
  check_qq_inputs("gather_qqmm", x, w, scales, sp, global_scale_x, global_scale_w);
  std::vector<array> primals{x, w};
  if (scales) primals.push_back(*scales);
  if (global_scale_x) primals.insert(primals.end(), {*global_scale_x, *global_scale_w});
  if (lhs_indices) primals.push_back(*lhs_indices);
  if (rhs_indices) primals.push_back(*rhs_indices);
  auto forward = [=](const std::vector<array>& in) -> std::vector<array> {
    size_t i = 2;
    std::optional<array> sc, gx, gw, lhs, rhs;
    if (scales) sc = in[i++];
    if (global_scale_x) gx = in[i++], gw = in[i++];
    if (lhs_indices) lhs = in[i++];
    if (rhs_indices) rhs = in[i++];
    array weight = qq_weight("gather_qqmm", in[0], in[1], sc, sp, gw, s);
    array lhs_op = qq_round_trip("gather_qqmm", in[0], sp, gx, s);
    return {astype(gather_mm(lhs_op, weight, lhs, rhs, sorted_indices, s), in[0].dtype(), s)};
  };
  // The rounding has no useful derivative and MLX defines none for this op:
  // say so rather than differentiate the rounding into zeros.
  auto no_vjp = [](const std::vector<array>&, const std::vector<array>&,
                   const std::vector<array>&) -> std::vector<array> {
    throw std::runtime_error("[gather_qqmm] Gradients are not defined for gather_qqmm (as in MLX); use qqmm per "
                             "expert, or gather_mm on dequantized weights, to train.");
  };
  auto no_jvp = [](const std::vector<array>&, const std::vector<array>&,
                   const std::vector<int>&) -> std::vector<array> {
    throw std::runtime_error("[gather_qqmm] Forward-mode derivatives (jvp) are not defined for gather_qqmm.");
  };
  return custom_function(forward, no_vjp, no_jvp)(primals)[0];
}

}  // namespace alloy
