"""MSL language rules where C++ differs, which a sweep of the language found
broken: floating literals are floats (MSL has no double), hex half literals,
a conditional's arm right after its `:`, half and bfloat converting
implicitly to integers, conditionals mixing scalar types, Metal's
predefined macros,
`metal::array`, complex64 parameters, `offsetof`.

Each kernel runs on the test device (and, on a CPU run, is compiled for CUDA
too), on fresh random inputs against numpy; outputs are poisoned with NaN.
"""
import numpy as np
import pytest

import alloy.core as mx

F32 = np.float32


def run(source, inputs, n_out, header="", out_dtype=mx.float32, threads=1):
    names = [f"a{i}" for i in range(len(inputs))]
    k = mx.fast.metal_kernel(name="semantics", input_names=names, output_names=["out"], source=source,
                             header=header)
    (out,) = k(inputs=[mx.array(x) for x in inputs], grid=(threads, 1, 1), threadgroup=(threads, 1, 1),
               output_shapes=[(n_out,)], output_dtypes=[out_dtype],
               init_value=float("nan") if out_dtype == mx.float32 else -7)
    return np.array(out)


def test_floating_literals_are_floats(rng):
    # The float operations MSL performs: x * 0.3f rounded once in float, a
    # tiny addend lost in float, the float 0.1f equal to the literal 0.1.
    x = rng.uniform(0.5, 4, 64).astype(F32)
    got = run("uint i = thread_position_in_grid.x; float v = a0[i];\n"
              "out[4*i] = v * 0.3; out[4*i+1] = (1.0 + v * 1e-9) - 1.0;\n"
              "out[4*i+2] = (float(0.1f) == 0.1); out[4*i+3] = sizeof(0.5);", [x], 256, threads=64)
    got = got.reshape(64, 4)
    np.testing.assert_array_equal(got[:, 0].view(np.uint32), (x * F32(0.3)).view(np.uint32))
    np.testing.assert_array_equal(got[:, 1], (F32(1) + x * F32(1e-9)) - F32(1))
    np.testing.assert_array_equal(got[:, 2:], [[1, 4]] * 64)


def test_literals_in_overloads_and_deduction(rng):
    # f(1.0) picks the float overload (not ambiguous with half); g(x, 2.0)
    # deduces T = float; select(x, 0.0, c) takes two floats.
    header = """
METAL_FUNC float f(float x) { return 1 + x; }
METAL_FUNC half f(half x) { return 100; }
template <typename T> METAL_FUNC T g(T a, T b) { return a + b; }
"""
    x = F32(rng.uniform(0.3, 1))
    got = run("float x = a0[0]; out[0] = f(1.0); out[1] = g(x, 2.0); out[2] = select(x, 0.0, x > 0.2f);",
              [np.array([x])], 3, header=header)
    np.testing.assert_array_equal(got, np.array([2, x + F32(2), 0], dtype=F32))


def test_half_literals_and_conditional_arms(rng):
    n = int(rng.integers(2, 9))
    got = run("int n = int(a0[0]);\n"
              "out[0] = float(0x1.8p1h) + float(0x1p-2H); out[1] = n<=1?1:n*2; out[2] = (n>1)?(0.5):(n);",
              [np.array([n], dtype=F32)], 3)
    np.testing.assert_array_equal(got, [3.25, 2 * n, 0.5])



def bf16(a):
    """float32 values rounded to bfloat16 (nearest, ties to even), as float32."""
    bits = np.asarray(a, F32).view(np.uint32).astype(np.uint64)
    return (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(F32)


def test_scalar_conversions_and_mixed_conditionals(rng):
    # Metal converts half and bfloat to and from every scalar type implicitly
    # (`int j = h;`, an int buffer given a half), and a conditional whose arms
    # are scalars of two types has their common type: half or bfloat with an
    # integer is half or bfloat (the integer rounded), with a float is float
    # (the float not rounded). Integers past 2048 (half) and 256 (bfloat)
    # show the rounding; odd threads take the first arm.
    n_threads = 64
    x = rng.uniform(-300, 300, n_threads).astype(F32)
    m = (2 * rng.integers(1025, 2047, n_threads) + 1).astype(F32)  # odd, 2051..4095: not halves
    k = (2 * rng.integers(129, 255, n_threads) + 1).astype(F32)    # odd, 259..511: not bfloats
    source = """
    uint i = thread_position_in_grid.x;
    float f = a0[i];
    half h = half(f);
    bfloat b = bfloat(f);
    int m = int(a1[i]), k = int(a2[i]);
    int j = h;
    int jb = b;
    bool t = h;
    bool odd = i & 1;
    float p = 0, q = 0;
    (odd ? p : q) = f;
    device const float* src = odd ? a0 : 0;
    out[8*i] = j; out[8*i+1] = jb; out[8*i+2] = t;
    out[8*i+3] = odd ? h : f;
    out[8*i+4] = float(odd ? h : m) + 0.25f * sizeof(odd ? h : m);
    out[8*i+5] = float(odd ? b : k) + 0.25f * sizeof(odd ? b : k);
    out[8*i+6] = odd ? b : f;
    out[8*i+7] = p - q + (src ? 1000.0f : 0.0f);
    """
    got = run(source, [x, m, k], 8 * n_threads, threads=n_threads).reshape(n_threads, 8)
    odd = (np.arange(n_threads) & 1).astype(bool)
    h, b = x.astype(np.float16).astype(F32), bf16(x)
    want = np.stack([np.trunc(h), np.trunc(b), (h != 0).astype(F32),
                     np.where(odd, h, x),
                     np.where(odd, h, m.astype(np.float16).astype(F32)) + 0.5,
                     np.where(odd, b, bf16(k)) + 0.5,
                     np.where(odd, b, x),
                     np.where(odd, x + 1000, -x)], axis=1)
    np.testing.assert_array_equal(got, want)
    # An int buffer given a half and a bfloat: converted toward zero.
    got = run("uint i = thread_position_in_grid.x; half h = half(a0[i]); bfloat b = bfloat(a0[i]);"
              "out[2*i] = h; out[2*i+1] = b;", [x], 2 * n_threads, out_dtype=mx.int32, threads=n_threads)
    np.testing.assert_array_equal(got.reshape(n_threads, 2), np.stack([np.trunc(h), np.trunc(b)], 1).astype(np.int32))


def test_half_literals_pasted_by_a_macro(rng):
    # `#define H(x) x##h` makes `H(0.1)` the half literal 0.1h: the value
    # rounded to half (as numpy's float16 rounds it), in any expression.
    v = float(rng.choice([0.1, 0.3, 1.7, 3.14159, 1e-5, 65519.0]))
    header = "#define H(x) x##h\n#define HALF_OF(x) (x ## H * 0.5h)\n"
    got = run(f"half a = H({v!r}); half b = HALF_OF(3); out[0] = a; out[1] = b; out[2] = sizeof(H(2));",
              [np.zeros(1, F32)], 3, header=header)
    np.testing.assert_array_equal(got, [np.float16(v), 1.5, 2])

def test_metal_predefined_macros():
    # Metal's compiler defines __METAL_VERSION__ (MSL 3.1 here: bfloat) and
    # __METAL__, <metal_config> __HAVE_BFLOAT__; code picks its branches by them.
    got = run("""
#if defined(__METAL_VERSION__) && __METAL_VERSION__ >= 310
    out[0] = __METAL_VERSION__;
#else
    out[0] = -1;
#endif
#ifdef __HAVE_BFLOAT__
    out[1] = float(bfloat(1.5f));
#else
    out[1] = -1;
#endif
#ifdef __METAL__
    out[2] = 1;
#else
    out[2] = -1;
#endif
""", [np.zeros(1, F32)], 3)
    np.testing.assert_array_equal(got, [310, 1.5, 1])


def test_metal_array_and_offsetof(rng):
    x = rng.standard_normal(4).astype(F32)
    got = run("metal::array<float, 4> a; for (uint k = 0; k < a.size(); ++k) a[k] = a0[k];\n"
              "float s = 0; for (float v : a) s += v;\n"
              "out[0] = s; out[1] = offsetof(S, c); out[2] = sizeof(S);",
              [x], 3, header="struct S { float a; float3 b; float c; };")
    np.testing.assert_allclose(got[0], x.astype(np.float64).sum(), rtol=1e-6)
    np.testing.assert_array_equal(got[1:], [32, 48])  # float3 is 16 bytes, 16-aligned


def test_complex64_parameters_need_no_other_name(rng):
    z = (rng.standard_normal(8) + 1j * rng.standard_normal(8)).astype(np.complex64)
    k = mx.fast.metal_kernel(name="complex_copy", input_names=["z"], output_names=["out"],
                             source="uint i = thread_position_in_grid.x; out[i] = z[i] * z[i];")
    (out,) = k(inputs=[mx.array(z)], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)],
               output_dtypes=[mx.complex64])
    np.testing.assert_allclose(np.array(out), z.astype(np.complex128) ** 2, rtol=1e-5)


def test_qualified_simd_calls_in_conditions(rng):
    # elome's VJP kernels: `if (metal::simd_is_first())` after a metal::simd_sum
    # (the qualified call differs by lane: the branch is not the group's).
    x = rng.standard_normal(128).astype(F32)
    k = mx.fast.metal_kernel(name="qualified_simd", input_names=["inp"], output_names=["out"], source="""
    uint i = thread_position_in_grid.x;
    float v = metal::simd_sum(inp[i]);
    if (metal::simd_is_first()) {
        out[i / 32u] = v;
    }
    if (metal::simd_shuffle(inp[i], 3) > 0 && metal::simd_is_first()) {
        out[4 + i / 32u] = 1;
    }
""")
    (out,) = k(inputs=[mx.array(x)], grid=(128, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(8,)],
               output_dtypes=[mx.float32], init_value=0)
    groups = x.astype(np.float64).reshape(4, 32)
    np.testing.assert_allclose(np.array(out)[:4], groups.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.array(out)[4:], (groups[:, 3] > 0).astype(F32))


def test_char_is_int8(rng):
    # Metal's char is int8_t: an int8 input reaches a helper taking
    # `const device char*`, and a whole program's `device char*` parameter
    # takes an int8 array.
    x = rng.integers(-128, 128, 64).astype(np.int8)
    k = mx.fast.metal_kernel(name="char_input", input_names=["p"], output_names=["out"],
                             header="inline float twice(const device char* q, uint i) { char c = q[i]; return c * 2; }",
                             source="uint i = thread_position_in_grid.x; out[i] = twice(p, i);")
    (out,) = k(inputs=[mx.array(x)], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(64,)],
               output_dtypes=[mx.float32], init_value=float("nan"))
    np.testing.assert_array_equal(np.array(out), 2 * x.astype(F32))
    lib = mx.fast.metal_library("kernel void neg(device const char* p [[buffer(0)]], device char* q [[buffer(1)]], "
                                "uint i [[thread_position_in_grid]]) { q[i] = char(-p[i] / 2); }")
    outs = lib.kernel("neg")(args={"p": mx.array(x), "q": ((64,), mx.int8)}, grid=(64, 1, 1), threadgroup=(32, 1, 1))
    np.testing.assert_array_equal(np.array(outs[-1]), np.trunc(-x.astype(np.int32) / 2).astype(np.int8))


def test_overloads_on_address_space_only(rng):
    # Identical bodies for device and threadgroup pointers (and MLX's
    # gemv_masked.h _NoMask, whose operator bool() is defined for four
    # address spaces) are one function here; different bodies are refused.
    x = rng.standard_normal(32).astype(F32)
    header = """
#include "mlx/backend/metal/kernels/gemv_masked.h"
inline float twice(const device float* p, uint i) { return 2 * p[i]; }
inline float twice(const threadgroup float* p, uint i) { return 2 * p[i]; }
"""
    got = run("uint i = thread_position_in_grid.x; threadgroup float t[32]; t[i] = a0[i] + 1;\n"
              "threadgroup_barrier(mem_flags::mem_threadgroup);\n"
              "nomask_t m; out[i] = bool(m) ? twice(a0, i) + twice(t, i) : -1.0f;", [x], 32, header=header, threads=32)
    np.testing.assert_allclose(got, 4 * x.astype(np.float64) + 2, rtol=1e-6, atol=1e-6)  # (x + 1 rounds in float)
    k = mx.fast.metal_kernel(name="space_overloads", input_names=["a"], output_names=["out"],
                             header="inline float ld(const device float* p) { return p[0]; }\n"
                                    "inline float ld(const threadgroup float* p) { return p[0] + 100; }",
                             source="out[0] = ld(a);")
    with pytest.raises(RuntimeError, match=r"header:2:14: error: 'ld' is defined again for another address space"):
        k(inputs=[mx.array(x)], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)], output_dtypes=[mx.float32])


def test_unorm565_packing(rng):
    # MSL 6.14 / 8.7: x in bits 0-4, y in 5-10, z in 11-15; clamped to
    # [0, 1], scaled by 31, 63, 31 and rounded to nearest even; unpacking
    # divides by the same.
    c = rng.uniform(-0.2, 1.2, (64, 3)).astype(F32)
    got = run("uint i = thread_position_in_grid.x; float3 c = float3(a0[3*i], a0[3*i+1], a0[3*i+2]);\n"
              "ushort p = pack_float_to_unorm565(c); float3 u = unpack_unorm565_to_float(p);\n"
              "half3 h = unpack_unorm565_to_half(pack_half_to_unorm565(half3(c)));\n"
              "out[5*i] = p; out[5*i+1] = u.x; out[5*i+2] = u.y; out[5*i+3] = u.z; out[5*i+4] = float(h.y);",
              [c.reshape(-1)], 5 * 64, threads=64).reshape(64, 5)
    codes = np.rint(np.clip(c.astype(np.float64), 0, 1) * [31, 63, 31]).astype(np.int64)
    np.testing.assert_array_equal(got[:, 0], (codes[:, 0] | codes[:, 1] << 5 | codes[:, 2] << 11).astype(F32))
    np.testing.assert_allclose(got[:, 1:4], codes / [31, 63, 31], rtol=1e-6)
    hy = np.rint(np.clip(c[:, 1].astype(np.float16).astype(np.float64), 0, 1) * 63) / 63
    np.testing.assert_allclose(got[:, 4], hy.astype(np.float16), rtol=1e-3)


def test_votes_on_a_partial_simd_group():
    # MSL 6.9.2: simd_all looks at the active threads only; simd_ballot's
    # bits of absent threads are 0, so simd_ballot(expr).all() is false in a
    # group of 8 (threads 32..39 of a threadgroup of 40).
    got = run("uint i = thread_position_in_grid.x; bool t = a0[i] > 0;\n"
              "out[3*i] = simd_all(t); out[3*i+1] = simd_ballot(t).all(); out[3*i+2] = simd_any(!t);",
              [np.ones(40, F32)], 120, threads=40).reshape(40, 3)
    np.testing.assert_array_equal(got[:32], [[1, 1, 0]] * 32)
    np.testing.assert_array_equal(got[32:], [[1, 0, 0]] * 8)


@pytest.mark.parametrize("source,line,message", [
    ("float x = a0[0];\ndouble d = x;\nout[0] = d;", 2, "no 'double' type"),
    ("uint i = thread_position_in_grid.x;\nif (i > 0) goto done;\nout[i] = a0[i];\ndone:;", 2, "no 'goto'"),
    # g++ takes a variable-length array as an extension; Metal and CUDA do not.
    ("int n = int(a0[0]);\nfloat t[n];\nt[0] = a0[1];\nout[0] = t[0];", 2,
     "variable length array|expression must have a constant value"),
])
def test_cpp_that_metal_lacks_is_refused_at_its_line(rng, source, line, message):
    # A kernel written on Linux fails here as it would under Apple's compiler,
    # naming the line, instead of computing in double or jumping; the
    # process goes on and a valid kernel still runs after it.
    x = rng.uniform(1, 4, 4).astype(F32)
    with pytest.raises(RuntimeError, match=rf"source:{line}:\d+: error: .*({message})") as e:
        run(source, [x], 1)
    assert source.splitlines()[line - 1] in str(e.value)
    np.testing.assert_array_equal(run("out[0] = a0[1] * 2;", [x], 1), [x[1] * 2])
