"""metal_kernel bodies that MSL accepts and the translation used to reject:
bfloat conditionals and arithmetic with literals, and every MSL math macro.
Each kernel runs on the test device; with ALLOY_CHECK_CUDA=1 (conftest) its
CUDA translation is also compiled by NVRTC for sm_90a."""
import math

import numpy as np
import pytest

import alloy.core as mx

NAN = float("nan")


def launch(name, source, inputs, n_out, dtype, header=""):
    k = mx.fast.metal_kernel(name=name, input_names=[f"in{i}" for i in range(len(inputs))],
                             output_names=["out"], source=source, header=header)
    return k(inputs=inputs, output_shapes=[(n_out,)], output_dtypes=[dtype], grid=(n_out, 1, 1),
             threadgroup=(32, 1, 1), init_value=NAN)[0]


def bf16_np(x):
    """float64 values rounded to bfloat16 (nearest even), as float64."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


# Each: the body's expression of x (bfloat) and c (bool), and its numpy float64 value.
BF_EXPRESSIONS = [
    ("c ? x : 0", lambda x, c: np.where(c, x, 0.0)),
    ("c ? x : 0.5f", lambda x, c: np.where(c, x, 0.5)),
    ("c ? 0.25f : x", lambda x, c: np.where(c, 0.25, x)),
    ("c ? x : 0.0", lambda x, c: np.where(c, x, 0.0)),
    ("c ? -1 : x", lambda x, c: np.where(c, -1.0, x)),
    ("x > 0 ? x : -x", lambda x, c: np.abs(x)),
    ("x + 1", lambda x, c: bf16_np(x + 1)),
    ("x * 2.0", lambda x, c: x * 2),
    ("(x < 0.5f) ? 1.0f : 2.0f", lambda x, c: np.where(x < 0.5, 1.0, 2.0)),
    ("float(x == 0) + float(1.0 >= x) * 2 + float(x != 0.5h) * 4",
     lambda x, c: (x == 0) + 2.0 * (1.0 >= x) + 4.0 * (x != 0.5)),
]


@pytest.mark.parametrize("i", range(len(BF_EXPRESSIONS)))
def test_bfloat_with_literals(rng, i):
    expr, ref = BF_EXPRESSIONS[i]
    n = 64
    xs = bf16_np(rng.standard_normal(n))
    xs[:4] = [0.0, 0.5, 1.0, -1.0]  # hit the comparisons' equal cases
    cs = rng.integers(0, 2, n).astype(bool)
    source = f"""
        uint i = thread_position_in_grid.x;
        bfloat16_t x = in0[i];
        bool c = in1[i];
        out[i] = float({expr});
    """
    out = launch(f"bf_literal_{i}", source, [mx.array(xs.astype(np.float32)).astype(mx.bfloat16), mx.array(cs)],
                 n, mx.float32)
    np.testing.assert_allclose(np.array(out).astype(np.float64), ref(xs, cs), rtol=0, atol=0)


def test_bfloat_conditional_in_template_helper(rng):
    # The same conditional inside a header template and a macro body.
    header = """
    template <typename T> T relu(T v) { return v > 0 ? v : 0; }
    #define CLAMP_LOW(v) ((v) < 0.5f ? 0.5f : (v))
    """
    n = 64
    xs = bf16_np(rng.standard_normal(n))
    source = """
        uint i = thread_position_in_grid.x;
        out[i] = relu(in0[i]) + CLAMP_LOW(in0[i]);
    """
    out = launch("bf_cond_header", source, [mx.array(xs.astype(np.float32)).astype(mx.bfloat16)], n, mx.bfloat16,
                 header=header)
    ref = bf16_np(np.maximum(xs, 0) + np.maximum(xs, 0.5))
    np.testing.assert_allclose(np.array(out.astype(mx.float32)).astype(np.float64), ref, rtol=0, atol=0)


@pytest.mark.parametrize("acc_type", ["float", "int", "half"])
def test_compound_assignment_with_a_bfloat_operand(rng, acc_type):
    """`float acc += bfloat` (mlx-vlm's quantized verifiers accumulate bfloat
    inputs in a float): MSL computes `acc = acc op b` in the common type
    (float for float and half, bfloat for an integer) and converts back."""
    n, terms = 64, 4
    xs = bf16_np(rng.uniform(0.5, 2.0, (n, terms)))
    source = f"""
        uint i = thread_position_in_grid.x;
        {acc_type} acc = {acc_type}(3);
        for (int k = 0; k < {terms}; ++k) {{
          acc += in0[i * {terms} + k];
          acc -= in0[i * {terms} + k] * 0.25f;
          acc *= in0[i * {terms}];
          acc /= in0[i * {terms}];
        }}
        out[i] = float(acc);
    """
    out = launch(f"bf_compound_{acc_type}", source, [mx.array(xs.astype(np.float32).reshape(-1)).astype(mx.bfloat16)],
                 n, mx.float32)
    want = np.full(n, 3.0)
    for k in range(terms):
        b, b0 = xs[:, k], xs[:, 0]
        if acc_type == "int":  # each step in bfloat, truncated back to int
            want = np.trunc(bf16_np(want + b))
            want = np.trunc(bf16_np(want - bf16_np(b * 0.25)))
            want = np.trunc(bf16_np(want * b0))
            want = np.trunc(bf16_np(want / b0))
        else:
            step = (lambda v: v.astype(np.float32).astype(np.float64)) if acc_type == "float" else (
                lambda v: v.astype(np.float16).astype(np.float64))
            for op in (lambda v: v + b, lambda v: v - b * 0.25, lambda v: v * b0, lambda v: v / b0):
                want = step(op(want).astype(np.float32).astype(np.float64))
    tol = {"float": 1e-6, "int": 0, "half": 2e-3}[acc_type]
    np.testing.assert_allclose(np.array(out).astype(np.float64), want, rtol=tol, atol=tol)


# Every math macro MSL defines, with its value as numpy float64 (float or
# half values as their type holds them).
F32 = lambda v: float(np.float32(v))  # noqa: E731
F16 = lambda v: float(np.float16(v))  # noqa: E731
MACROS = {
    "INFINITY": math.inf, "-INFINITY": -math.inf, "HUGE_VALF": math.inf, "HUGE_VALH": math.inf,
    "MAXFLOAT": F32(np.finfo(np.float32).max), "FLT_MAX": F32(np.finfo(np.float32).max),
    "FLT_MIN": F32(np.finfo(np.float32).tiny), "FLT_EPSILON": F32(np.finfo(np.float32).eps),
    "FLT_DIG": 6, "FLT_MANT_DIG": 24, "FLT_MAX_10_EXP": 38, "FLT_MAX_EXP": 128, "FLT_MIN_10_EXP": -37,
    "FLT_MIN_EXP": -125, "FLT_RADIX": 2,
    "HALF_MAX": 65504.0, "MAXHALF": 65504.0, "HALF_MIN": 2.0 ** -14, "HALF_EPSILON": 2.0 ** -10,
    "HALF_DIG": 3, "HALF_MANT_DIG": 11, "HALF_MAX_10_EXP": 4, "HALF_MAX_EXP": 16, "HALF_MIN_10_EXP": -4,
    "HALF_MIN_EXP": -13, "HALF_RADIX": 2,
    "CHAR_BIT": 8, "SCHAR_MAX": 127, "SCHAR_MIN": -128, "UCHAR_MAX": 255, "SHRT_MAX": 32767,
    "SHRT_MIN": -32768, "USHRT_MAX": 65535, "INT_MAX": 2**31 - 1, "INT_MIN": -2**31, "UINT_MAX": 2**32 - 1,
}
CONSTANTS = {"E": math.e, "LOG2E": math.log2(math.e), "LOG10E": math.log10(math.e), "LN2": math.log(2),
             "LN10": math.log(10), "PI": math.pi, "PI_2": math.pi / 2, "PI_4": math.pi / 4, "1_PI": 1 / math.pi,
             "2_PI": 2 / math.pi, "2_SQRTPI": 2 / math.sqrt(math.pi), "SQRT2": math.sqrt(2),
             "SQRT1_2": math.sqrt(0.5)}
for _n, _v in CONSTANTS.items():
    MACROS[f"M_{_n}_F"] = F32(_v)
    MACROS[f"M_{_n}_H"] = F16(_v)


def test_every_msl_math_macro():
    names = list(MACROS)
    # float(...) of each: integer macros widen exactly, half ones are exact in float.
    body = "".join(f"    out[{i}] = float({n});\n" for i, n in enumerate(names))
    source = "if (thread_position_in_grid.x == 0) {\n" + body + "    out[%d] = float(NAN);\n}\n" % len(names)
    out = launch("msl_math_macros", source, [mx.array([0.0])], len(names) + 1, mx.float32)
    got = np.array(out).astype(np.float64)
    for i, n in enumerate(names):
        assert got[i] == F32(MACROS[n]), f"{n}: got {got[i]!r}, expected {F32(MACROS[n])!r}"
    assert math.isnan(got[-1])


def test_infinity_in_a_reduction(rng):
    # The common use: a running max that starts at -INFINITY, here per row.
    x = rng.standard_normal((8, 37)).astype(np.float32)
    source = """
        uint r = thread_position_in_grid.x;
        float m = -INFINITY;
        for (int j = 0; j < in0_shape[1]; ++j) m = metal::max(m, in0[r * in0_shape[1] + j]);
        out[r] = m;
    """
    out = launch("row_max_inf", source, [mx.array(x)], 8, mx.float32)
    np.testing.assert_array_equal(np.array(out), x.max(axis=1))


# `#pragma STDC FP_CONTRACT OFF` (and clang's spelling): each product rounds
# before the add, as mflux's Qwen-Image RoPE kernel needs to match MLX's
# composed ops. g++ ignores the pragma and NVRTC knows neither; both would
# contract a*b - c*d into an FMA, which differs in the last bit for most
# random inputs.
CONTRACT_OFF = [
    ("body", "#pragma STDC FP_CONTRACT OFF", ""),
    ("body, clang's spelling", "#pragma clang fp contract(off)", ""),
    ("body, in a loop", None, ""),
    ("header", "", "#pragma STDC FP_CONTRACT OFF\n"),
]


@pytest.mark.parametrize("where,pragma,header", CONTRACT_OFF, ids=[c[0] for c in CONTRACT_OFF])
def test_fp_contract_off_rounds_each_product(rng, capfd, where, pragma, header):
    n = 4096
    a, b, c, d = (rng.standard_normal(n).astype(np.float32) for _ in range(4))
    if pragma is None:  # mflux's place for it: the first line of a loop's body
        source = """
            uint i = thread_position_in_grid.x;
            for (uint k = 0; k < 1; ++k) {
                #pragma STDC FP_CONTRACT OFF
                out[i] = in0[i] * in1[i] - in2[i] * in3[i];
            }"""
    else:
        source = f"""
            {pragma}
            uint i = thread_position_in_grid.x;
            out[i] = in0[i] * in1[i] - in2[i] * in3[i];"""
    k = mx.fast.metal_kernel(name="no_contract", input_names=["in0", "in1", "in2", "in3"],
                             output_names=["out"], source=source, header=header)
    out = k(inputs=[mx.array(v) for v in (a, b, c, d)], output_shapes=[(n,)], output_dtypes=[mx.float32],
            grid=(n, 1, 1), threadgroup=(64, 1, 1), init_value=NAN, verbose=True)[0]
    # numpy float32: each product rounded, then the difference rounded.
    want = np.float32(a * b) - np.float32(c * d)
    got = np.array(out)
    assert np.array_equal(got, want), f"{int((got != want).sum())} of {n} differ from the rounded products"
    assert "without contracting a * b + c into an FMA" in capfd.readouterr().out


def test_fp_contract_on_leaves_contraction_to_the_compiler(capfd):
    # ON is the default's licence: no note, and the kernel still runs.
    k = mx.fast.metal_kernel(name="contract_on", input_names=["in0"], output_names=["out"],
                             source="#pragma STDC FP_CONTRACT ON\nuint i = thread_position_in_grid.x;\n"
                                    "out[i] = in0[i] * 2.0f + 1.0f;")
    x = mx.array(np.arange(64, dtype=np.float32))
    out = k(inputs=[x], output_shapes=[(64,)], output_dtypes=[mx.float32], grid=(64, 1, 1),
            threadgroup=(32, 1, 1), verbose=True)[0]
    assert np.array_equal(np.array(out), np.arange(64, dtype=np.float32) * 2 + 1)
    assert "FMA" not in capfd.readouterr().out


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_a_view_at_an_offset_read_as_float4_is_realigned(rng, offset):
    # Kernels read buffers as float4 (mhc-mlx, mlx-vlm's hyper-connections),
    # sound on Metal, whose buffers start on pages. A slice at an offset
    # starts 4-12 bytes past that: the launch gives such a kernel an aligned
    # copy (the CPU's aligned vector moves fault, the GPU's misaligned access
    # ends its context).
    src = """
        uint i = thread_position_in_grid.x;
        float4 v = *(const device float4*)(inp + 4 * i);
        *(device float4*)(out + 4 * i) = v * 2.0f + 1.0f;
    """
    base = rng.standard_normal(4 * 33 + 3).astype(np.float32)
    x = mx.array(base)[offset:offset + 4 * 33]  # a view of the same buffer
    k = mx.fast.metal_kernel(name="float4_of_a_view", input_names=["inp"], output_names=["out"], source=src)
    (out,) = k(inputs=[x], grid=(33, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(4 * 33,)],
               output_dtypes=[mx.float32])
    np.testing.assert_array_equal(np.array(out), base[offset:offset + 4 * 33] * 2 + 1)
