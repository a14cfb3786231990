"""mx.fast.metal_library: whole Metal programs, launched by binding parameters
by name. The contract (binding, dispatch modes, in-out buffers, threadgroup
memory, vector element types, errors before anything runs, autodiff through
custom_function); the guide's kernels are in test_metal_library_guide.py."""
import warnings

import numpy as np
import pytest

import alloy.core as mx

PROGRAM = r"""
#include <metal_stdlib>
using namespace metal;

constant uint GROUP = 64;

struct Affine { float scale; float shift; };

template <typename T> T twice(T x) { return x + x; }

kernel void affine(device const float* x [[buffer(0)]],
                   device float* y [[buffer(1)]],
                   constant float& scale [[buffer(2)]],
                   constant float& shift [[buffer(3)]],
                   uint i [[thread_position_in_grid]]) {
  y[i] = x[i] * scale + shift;
}

kernel void accumulate(device const float* x [[buffer(0)]],
                       device float* acc [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
  acc[i] += twice(x[i]);
}

// One block sum per threadgroup through threadgroup memory given at launch.
kernel void block_sum(device const float* x [[buffer(0)]],
                      device float* sums [[buffer(1)]],
                      constant uint& n [[buffer(2)]],
                      threadgroup float* scratch [[threadgroup(0)]],
                      uint gid [[thread_position_in_grid]],
                      uint lid [[thread_position_in_threadgroup]],
                      uint tg [[threadgroup_position_in_grid]],
                      uint tg_size [[threads_per_threadgroup]]) {
  scratch[lid] = gid < n ? x[gid] : 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (lid == 0) {
    float s = 0.0f;
    for (uint k = 0; k < tg_size; ++k) s += scratch[k];
    sums[tg] = s;
  }
}

kernel void positions(device uint* out [[buffer(0)]],
                      uint2 gid [[thread_position_in_grid]],
                      uint2 grid [[threads_per_grid]],
                      ushort2 tpos [[thread_position_in_threadgroup]]) {
  uint at = gid.y * grid.x + gid.x;
  out[3 * at] = gid.x;
  out[3 * at + 1] = gid.y;
  out[3 * at + 2] = tpos.x + 1000u * tpos.y;
}

kernel void vec_scale(device const float4* x [[buffer(0)]],
                      device float4* y [[buffer(1)]],
                      constant Affine& p [[buffer(2)]],
                      uint i [[thread_position_in_grid]]) {
  y[i] = x[i] * p.scale + p.shift;
}

template <typename T>
kernel void square(device const T* x [[buffer(0)]], device T* y [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
  y[i] = x[i] * x[i];
}
template [[host_name("square_f32")]] kernel void square<float>(device const float*, device float*, uint);
template [[host_name("square_f16")]] kernel void square<half>(device const half*, device half*, uint);

[[max_total_threads_per_threadgroup(128)]]
kernel void capped(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) { y[i] = float(GROUP); }
"""


@pytest.fixture(scope="module")
def lib():
    return mx.fast.metal_library(PROGRAM)


def f64(a):
    return np.array(a).astype(np.float64)


def test_kernel_names_and_parameters(lib):
    assert lib.kernel_names == ["affine", "accumulate", "block_sum", "positions", "vec_scale", "square_f32",
                                "square_f16", "capped"]
    k = lib.kernel("block_sum")
    assert k.output_names == ["sums"]
    assert k.arg_names == ["x", "sums", "n", "scratch"]
    assert lib.kernel("capped").max_total_threads_per_threadgroup == 128
    with pytest.raises(ValueError, match="no kernel 'nope'.*'affine', 'accumulate'"):
        lib.kernel("nope")


@pytest.mark.parametrize("n", [1, 255, 1000, 4097])
def test_values_by_name_and_buffer_index(lib, rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    scale, shift = float(rng.uniform(0.5, 2)), float(rng.uniform(-1, 1))
    k = lib.kernel("affine")
    (y,) = k(args={"x": mx.array(x), "y": ((n,), mx.float32), "scale": scale, "shift": mx.array(shift)},
             grid=(n, 1, 1), threadgroup=(256, 1, 1))
    ref = x.astype(np.float64) * np.float32(scale) + np.float32(shift)
    np.testing.assert_allclose(f64(y), ref, rtol=1e-6, atol=1e-6)
    (y2,) = k(args={0: mx.array(x), 1: ((n,), mx.float32), 2: scale, 3: shift}, grid=(n, 1, 1),
              threadgroup=(64, 1, 1))
    np.testing.assert_array_equal(np.array(y2), np.array(y))


def test_in_out_buffer_starts_from_the_array_and_leaves_it_alone(lib, rng):
    n = 777
    x = rng.standard_normal(n).astype(np.float32)
    acc0 = rng.standard_normal(n).astype(np.float32)
    acc = mx.array(acc0)
    (out,) = lib.kernel("accumulate")(args={"x": mx.array(x), "acc": acc}, grid=(n, 1, 1), threadgroup=(128, 1, 1))
    np.testing.assert_allclose(f64(out), acc0.astype(np.float64) + 2 * x, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(np.array(acc), acc0)  # functional: the input is not modified


@pytest.mark.parametrize("n,tg", [(1000, 64), (4096, 256), (70, 32)])
def test_threadgroup_memory_and_dispatch_threadgroups(lib, rng, n, tg):
    x = rng.standard_normal(n).astype(np.float32)
    groups = -(-n // tg)
    k = lib.kernel("block_sum")
    (sums,) = k(args={"x": mx.array(x), "sums": ((groups,), mx.float32), "n": n, "scratch": tg * 4},
                grid=(groups, 1, 1), threadgroup=(tg, 1, 1), dispatch="threadgroups")
    padded = np.zeros(groups * tg)
    padded[:n] = x
    np.testing.assert_allclose(f64(sums), padded.reshape(groups, tg).sum(1), rtol=1e-5, atol=1e-4)
    # dispatchThreads: the last threadgroup is partial and sums only its threads.
    (sums_t,) = k(args={"x": mx.array(x), "sums": ((groups,), mx.float32), "n": n, "scratch": tg * 4},
                  grid=(n, 1, 1), threadgroup=(tg, 1, 1))
    np.testing.assert_allclose(f64(sums_t), padded.reshape(groups, tg).sum(1), rtol=1e-5, atol=1e-4)


def test_attribute_parameters_take_their_declared_width(lib):
    gx, gy, tx, ty = 37, 5, 8, 2
    poison = mx.array(np.full(gx * gy * 3, 0xDEADBEEF, dtype=np.uint32))
    (out,) = lib.kernel("positions")(args={"out": poison}, grid=(gx, gy, 1), threadgroup=(tx, ty, 1))
    got = np.array(out).reshape(gy, gx, 3)
    yy, xx = np.mgrid[0:gy, 0:gx]
    np.testing.assert_array_equal(got[..., 0], xx)
    np.testing.assert_array_equal(got[..., 1], yy)
    np.testing.assert_array_equal(got[..., 2], (xx % tx) + 1000 * (yy % ty))


def test_vector_element_types_and_struct_values(lib, rng):
    n = 4 * 300
    x = rng.standard_normal(n).astype(np.float32)
    params = mx.array(np.array([1.5, -0.25], dtype=np.float32))  # the bytes of struct Affine
    (y,) = lib.kernel("vec_scale")(args={"x": mx.array(x), "y": ((n,), mx.float32), "p": params},
                                   grid=(n // 4, 1, 1), threadgroup=(64, 1, 1))
    np.testing.assert_allclose(f64(y), x.astype(np.float64) * 1.5 - 0.25, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="'x'.*4 float32 elements per float4.*1001 elements"):
        lib.kernel("vec_scale")(args={"x": mx.zeros((1001,)), "y": ((1000,), mx.float32), "p": params},
                                grid=(250, 1, 1), threadgroup=(64, 1, 1))


@pytest.mark.parametrize("name,dtype,rtol", [("square_f32", mx.float32, 1e-6), ("square_f16", mx.float16, 2e-3)])
def test_templated_instantiations(lib, rng, name, dtype, rtol):
    n = 513
    x = mx.array(rng.standard_normal(n).astype(np.float32)).astype(dtype)
    (y,) = lib.kernel(name)(args={"x": x, "y": ((n,), dtype)}, grid=(n, 1, 1), threadgroup=(128, 1, 1))
    assert y.dtype == dtype
    np.testing.assert_allclose(f64(y), f64(x) ** 2, rtol=rtol, atol=rtol)


def test_bad_arguments_are_clear_errors_before_anything_runs(lib):
    k = lib.kernel("affine")
    ok = {"x": mx.zeros((8,)), "y": ((8,), mx.float32), "scale": 1.0, "shift": 0.0}
    launch = dict(grid=(8, 1, 1), threadgroup=(8, 1, 1))
    with pytest.raises(TypeError, match="parameter 'x' \\(device const float\\*\\) takes mx.float32.*mx.float16"):
        k(args={**ok, "x": mx.zeros((8,), dtype=mx.float16)}, **launch)
    with pytest.raises(TypeError, match="parameter 'y'.*mx.float32.*mx.int32"):
        k(args={**ok, "y": ((8,), mx.int32)}, **launch)
    with pytest.raises(ValueError, match="missing argument 'shift'"):
        k(args={key: v for key, v in ok.items() if key != "shift"}, **launch)
    with pytest.raises(ValueError, match="no parameter is named 'bias'"):
        k(args={**ok, "bias": 1.0}, **launch)
    with pytest.raises(ValueError, match="'i' is a thread-position attribute"):
        k(args={**ok, "i": 0}, **launch)
    with pytest.raises(ValueError, match="no parameter at \\[\\[buffer\\(7\\)\\]\\]"):
        k(args={**ok, 7: 1.0}, **launch)
    with pytest.raises(TypeError, match="'x'.*takes an array, not a number"):
        k(args={**ok, "x": 3.0}, **launch)
    with pytest.raises(ValueError, match="1025 threads; the limit is 1024"):
        k(args=ok, grid=(2050, 1, 1), threadgroup=(1025, 1, 1))
    with pytest.raises(ValueError, match="max_total_threads_per_threadgroup\\(128\\)"):
        lib.kernel("capped")(args={"y": ((256,), mx.float32)}, grid=(256, 1, 1), threadgroup=(256, 1, 1))
    with pytest.raises(ValueError, match="dispatch must be 'threads'"):
        k(args=ok, dispatch="warps", **launch)
    with pytest.raises(TypeError, match="'scratch'.*size in bytes"):
        lib.kernel("block_sum")(args={"x": mx.zeros((8,)), "sums": ((1,), mx.float32), "n": 8, "scratch": 2.5},
                                **launch)


def test_sized_threadgroup_array_needs_its_bytes():
    lib = mx.fast.metal_library(r"""
kernel void transpose32(device const float* m [[buffer(0)]], device float* out [[buffer(1)]],
                        threadgroup float tile[32][33] [[threadgroup(0)]],
                        uint2 lid [[thread_position_in_threadgroup]]) {
  tile[lid.y][lid.x] = m[lid.y * 32 + lid.x];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[lid.y * 32 + lid.x] = tile[lid.x][lid.y];
}
""")
    k = lib.kernel("transpose32")
    m = mx.array(np.arange(32 * 32, dtype=np.float32).reshape(32, 32))
    with pytest.raises(ValueError, match="'tile'.*needs 4224 bytes.*gives 4096"):
        k(args={"m": m, "out": ((32, 32), mx.float32), "tile": 4096}, grid=(32, 32, 1), threadgroup=(32, 32, 1))
    (out,) = k(args={"m": m, "out": ((32, 32), mx.float32), "tile": 32 * 33 * 4}, grid=(32, 32, 1),
               threadgroup=(32, 32, 1))
    np.testing.assert_array_equal(np.array(out), np.array(m).T)


def test_program_errors_quote_the_line():
    with pytest.raises(RuntimeError, match="declares no kernel"):
        mx.fast.metal_library("float f(float x) { return x; }\n")
    with pytest.raises(RuntimeError, match=r"source:2:.*'uint4' is not valid for \[\[thread_position_in_grid\]\]"):
        mx.fast.metal_library("kernel void f(device float* o [[buffer(0)]],\n"
                              "              uint4 id [[thread_position_in_grid]]) { o[id.x] = 1; }\n")
    with pytest.raises(RuntimeError, match="two kernels are named 'f'"):
        mx.fast.metal_library("kernel void f(device float* o [[buffer(0)]]) { o[0] = 1; }\n"
                              "kernel void f(device float* o [[buffer(0)]]) { o[0] = 2; }\n")
    # The forms AIX writes, misused: a specialization needs its entry's name;
    # an attribute group holding `kernel` must close.
    with pytest.raises(RuntimeError, match=r"source:3:.*explicit specialization of kernel 'f' needs a name"):
        mx.fast.metal_library("template <typename T> kernel void f(device T* o [[buffer(0)]]) { o[0] = 1; }\n"
                              "template [[host_name(\"f_f32\")]] kernel void f<float>(device float* o [[buffer(0)]]);\n"
                              "template <> kernel void f<int>(device int* o [[buffer(0)]]) { o[0] = 2; }\n")
    with pytest.raises(RuntimeError, match=r"source:1:.*a kernel must return void"):
        mx.fast.metal_library("[[kernel]] float f(device float* o [[buffer(0)]]) { o[0] = 1; }\n")


def test_unknown_attribute_warns_and_compile_errors_name_the_line():
    src = ("kernel void f(device float* o [[buffer(0)]], uint id [[thread_position_in_grid]]) {\n"
           "  float acc = 0.0f;\n"
           "  [[unroll]] for (uint i = 0; i < 2; ++i) acc += float(i);\n"
           "  o[id] = acc;\n}\n")
    with pytest.warns(UserWarning, match="source:3:5: warning: unknown attribute 'unroll' ignored"):
        lib = mx.fast.metal_library(src)
    (o,) = lib.kernel("f")(args={"o": ((4,), mx.float32)}, grid=(4, 1, 1), threadgroup=(4, 1, 1))
    np.testing.assert_array_equal(np.array(o), np.ones(4, np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bad = mx.fast.metal_library("kernel void g(device float* o [[buffer(0)]], uint id [[thread_position_in_grid]])"
                                    " {\n  o[id] = undefined_name;\n}\n")
    with pytest.raises(RuntimeError, match="(?s)kernel 'g' failed to compile.*source:2.*undefined_name"):
        (o,) = bad.kernel("g")(args={"o": ((4,), mx.float32)}, grid=(4, 1, 1), threadgroup=(4, 1, 1))
        mx.eval(o)


def test_inside_custom_function_with_a_vjp(lib, rng):
    k = lib.kernel("square_f32")

    @mx.custom_function
    def square(x):
        return k(args={"x": x, "y": (x.shape, x.dtype)}, grid=(x.size, 1, 1), threadgroup=(64, 1, 1))[0]

    @square.vjp
    def square_vjp(x, cotangent, output):  # one primal arrives as itself, as in MLX
        return 2 * x * cotangent

    x = mx.array(rng.standard_normal(100).astype(np.float32))
    g = mx.grad(lambda v: mx.sum(square(v) * 3))(x)
    np.testing.assert_allclose(f64(g), 6 * f64(x), rtol=1e-6, atol=1e-6)


def test_kernel_that_writes_nothing_returns_no_outputs():
    lib = mx.fast.metal_library("kernel void reads(device const float* m [[buffer(0)]], "
                                "uint id [[thread_position_in_grid]]) { float v = m[id]; (void)v; }\n")
    assert lib.kernel("reads").output_names == []
    assert lib.kernel("reads")(args={"m": mx.zeros((4,))}, grid=(4, 1, 1), threadgroup=(4, 1, 1)) == []


def test_verbose_prints_the_program_and_its_translation(lib, capfd):
    lib.kernel("square_f32")(args={"x": mx.ones((4,)), "y": ((4,), mx.float32)}, grid=(4, 1, 1),
                             threadgroup=(4, 1, 1), verbose=True)
    out = capfd.readouterr().out
    assert 'template [[host_name("square_f32")]]' in out
    assert "---- translated for" in out and "square<float>(" in out


# The attribute form of an entry point (`[[kernel]]`, alone or with other
# attributes) and a host name written as adjacent literals, as AIX's shader
# library writes its kernels (godrays/AIX, aixDeviceMetalShaders.hpp).
ATTRIBUTE_FORM = r"""
#include <metal_stdlib>
using namespace metal;

[[kernel]] void negate(const device float* a [[buffer(0)]], device float* r [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
  r[i] = -a[i];
}

template <typename T>
[[kernel]] void axpy(const device T* x [[buffer(0)]], const device T* y [[buffer(1)]],
                     device T* r [[buffer(2)]], constant float& a [[buffer(3)]],
                     uint i [[thread_position_in_grid]]) {
  r[i] = T(a * float(x[i]) + float(y[i]));
}
template [[host_name("axpy_" "f32")]] [[kernel]] void axpy(const device float* x [[buffer(0)]],
    const device float* y [[buffer(1)]], device float* r [[buffer(2)]], constant float& a [[buffer(3)]],
    uint i [[thread_position_in_grid]]);
template [[host_name("axpy_" "f16")]]
[[kernel, max_total_threads_per_threadgroup(64)]] void axpy(const device half* x [[buffer(0)]],
    const device half* y [[buffer(1)]], device half* r [[buffer(2)]], constant float& a [[buffer(3)]],
    uint i [[thread_position_in_grid]]);
"""


def test_attribute_form_kernels_and_concatenated_host_names(rng):
    lib = mx.fast.metal_library(ATTRIBUTE_FORM)
    assert lib.kernel_names == ["negate", "axpy_f32", "axpy_f16"]
    assert lib.kernel("axpy_f16").max_total_threads_per_threadgroup == 64
    n = 300
    x = rng.standard_normal(n).astype(np.float32)
    (r,) = lib.kernel("negate")(args={"a": mx.array(x), "r": ((n,), mx.float32)}, grid=(n, 1, 1),
                                threadgroup=(64, 1, 1))
    np.testing.assert_array_equal(np.array(r), -x)
    y = rng.standard_normal(n).astype(np.float32)
    a = float(rng.uniform(0.5, 2))
    for name, dtype, tol in (("axpy_f32", mx.float32, 1e-6), ("axpy_f16", mx.float16, 2e-3)):
        xs, ys = mx.array(x).astype(dtype), mx.array(y).astype(dtype)
        (r,) = lib.kernel(name)(args={"x": xs, "y": ys, "r": ((n,), dtype), "a": a}, grid=(n, 1, 1),
                                threadgroup=(64, 1, 1))
        assert r.dtype == dtype
        np.testing.assert_allclose(f64(r), np.float32(a) * f64(xs) + f64(ys), rtol=tol, atol=tol)


# `constant` qualifying what a helper's returned pointer, or an alias,
# points to (AIX's preamble), not a program-scope constant of its own.
CONSTANT_POINTEES = r"""
#include <metal_stdlib>
using namespace metal;
using shape_ptr = const constant uint*;
METAL_FUNC uint rank_of(const constant uint* layout) { return layout[0]; }
METAL_FUNC const constant uint* shape_of(const constant uint* layout) { return layout + 1; }
METAL_FUNC shape_ptr strides_of(const constant uint* layout) { return layout + 1 + rank_of(layout); }
kernel void offsets(const constant uint* layout [[buffer(0)]], device uint* out [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
  out[i] = shape_of(layout)[i] * strides_of(layout)[i] + rank_of(layout);
}
"""


def test_constant_in_a_helpers_return_type_and_an_alias(rng):
    rank = 3
    shape, strides = rng.integers(1, 9, rank), rng.integers(1, 99, rank)
    layout = np.concatenate([[rank], shape, strides]).astype(np.uint32)
    lib = mx.fast.metal_library(CONSTANT_POINTEES)
    (out,) = lib.kernel("offsets")(args={"layout": mx.array(layout), "out": ((rank,), mx.uint32)},
                                   grid=(rank, 1, 1), threadgroup=(rank, 1, 1))
    np.testing.assert_array_equal(np.array(out), shape * strides + rank)


# An instantiation whose template argument is `char` (a signed byte of data
# in MSL, as AIX's int8 kernels instantiate their templates).
CHAR_ARGUMENT = r"""
#include <metal_stdlib>
using namespace metal;
template <typename T, int N>
kernel void shift(const device T* a [[buffer(0)]], device T* r [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  r[i] = T(a[i] / T(2) + T(N));
}
template [[host_name("shift_i8")]] kernel void shift<char, 3>(const device char* a [[buffer(0)]],
    device char* r [[buffer(1)]], uint i [[thread_position_in_grid]]);
"""


def test_a_char_template_argument_is_a_byte_of_data(rng):
    n = 200
    a = rng.integers(-120, 120, n).astype(np.int8)
    (r,) = mx.fast.metal_library(CHAR_ARGUMENT).kernel("shift_i8")(
        args={"a": mx.array(a), "r": ((n,), mx.int8)}, grid=(n, 1, 1), threadgroup=(64, 1, 1))
    assert r.dtype == mx.int8
    # C's division truncates toward zero.
    np.testing.assert_array_equal(np.array(r), (np.trunc(a / 2) + 3).astype(np.int8))


# Instantiations written by a macro, as AIX writes all of its kernels
# (`SpecializeAdd("f32", float4);`): found as kernels, the line numbers
# after them kept (an error below still quotes its own line).
MACRO_INSTANTIATIONS = r"""
#include <metal_stdlib>
using namespace metal;
template <typename T>
[[kernel]] void scale(const device T* a [[buffer(0)]], device T* r [[buffer(1)]],
                      constant float& k [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  r[i] = T(float(a[i]) * k);
}
#define SpecializeScale(tname, type)  \
    template [[ host_name("scale_" tname) ]]  \
    [[kernel]] void scale(const device type* a [[buffer(0)]], \
                          device type* r [[buffer(1)]], \
                          constant float& k [[buffer(2)]], \
                          uint i [[thread_position_in_grid]])

SpecializeScale("f32",  float);
SpecializeScale("f16",  half);
"""


def test_instantiations_written_by_a_macro(rng):
    lib = mx.fast.metal_library(MACRO_INSTANTIATIONS)
    assert lib.kernel_names == ["scale_f32", "scale_f16"]
    n, k = 64, float(rng.uniform(0.5, 2))
    x = rng.standard_normal(n).astype(np.float32)
    (r,) = lib.kernel("scale_f32")(args={"a": mx.array(x), "r": ((n,), mx.float32), "k": k}, grid=(n, 1, 1),
                                   threadgroup=(32, 1, 1))
    np.testing.assert_allclose(f64(r), x.astype(np.float64) * np.float32(k), rtol=1e-6, atol=1e-6)
    xh = mx.array(x).astype(mx.float16)
    (r,) = lib.kernel("scale_f16")(args={"a": xh, "r": ((n,), mx.float16), "k": k}, grid=(n, 1, 1),
                                   threadgroup=(32, 1, 1))
    np.testing.assert_allclose(f64(r), f64(xh) * np.float32(k), rtol=2e-3, atol=2e-3)
    broken = MACRO_INSTANTIATIONS + "kernel void late(device float* y [[buffer(0)]]) { y[0] = undefined_name; }\n"
    with pytest.raises(RuntimeError, match=r"source:18:.*undefined_name"):
        lib = mx.fast.metal_library(broken)
        lib.kernel("late")(args={"y": ((1,), mx.float32)}, grid=(1, 1, 1), threadgroup=(1, 1, 1))


# Apple's internal logical traits, as AIX's preamble reads them.
INTERNAL_TRAITS = r"""
#include <metal_stdlib>
using namespace metal;
#pragma METAL internals : enable
template <typename T>
constexpr constant bool atomic_native = _disjunction<is_same<T, int>, is_same<T, uint>, is_same<T, float>>::value;
template <typename T>
constexpr constant bool small_float = _conjunction<is_floating_point<T>, _negation<is_same<T, float>>>::value;
#pragma METAL internals : disable
kernel void traits(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  const int bits[6] = {atomic_native<int>, atomic_native<half>, atomic_native<float>,
                       small_float<half>, small_float<float>, small_float<int>};
  out[i] = bits[i];
}
"""


def test_internal_logical_traits():
    (out,) = mx.fast.metal_library(INTERNAL_TRAITS).kernel("traits")(
        args={"out": ((6,), mx.int32)}, grid=(6, 1, 1), threadgroup=(6, 1, 1))
    assert np.array(out).tolist() == [1, 0, 1, 1, 0, 0]


# An explicit specialization with a body of its own (AIX gives unsupported
# types an empty one), between instantiations of a template that
# synchronises, all in the attribute form: each entry keeps its own body.
SPECIALIZATION = r"""
#include <metal_stdlib>
using namespace metal;
template <typename T>
[[kernel]] void simd_total(const device T* a [[buffer(0)]], device T* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
  out[i] = simd_sum(a[i]);
}
template [[host_name("simd_total_f32")]] [[kernel]] void simd_total<float>(const device float* a [[buffer(0)]],
    device float* out [[buffer(1)]], uint i [[thread_position_in_grid]]);
template <> [[host_name("simd_total_i32")]] [[kernel]] void simd_total<int>(const device int* a [[buffer(0)]],
    device int* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  out[i] = -a[i];
}
template [[host_name("simd_total_f16")]] [[kernel]] void simd_total<half>(const device half* a [[buffer(0)]],
    device half* out [[buffer(1)]], uint i [[thread_position_in_grid]]);
"""


def test_an_explicit_specialization_is_an_entry_with_its_own_body(rng):
    lib = mx.fast.metal_library(SPECIALIZATION)
    assert lib.kernel_names == ["simd_total_f32", "simd_total_i32", "simd_total_f16"]
    n = 96
    x = rng.uniform(-1, 1, n).astype(np.float32)
    sums = np.repeat(x.astype(np.float64).reshape(-1, 32).sum(1), 32)
    for name, dtype, tol in (("simd_total_f32", mx.float32, 1e-5), ("simd_total_f16", mx.float16, 2e-2)):
        xs = mx.array(x).astype(dtype)
        (out,) = lib.kernel(name)(args={"a": xs, "out": ((n,), dtype)}, grid=(n, 1, 1), threadgroup=(n, 1, 1))
        want = np.repeat(f64(xs).reshape(-1, 32).sum(1), 32) if dtype == mx.float16 else sums
        np.testing.assert_allclose(f64(out), want, rtol=tol, atol=tol)
    k = rng.integers(-50, 50, n).astype(np.int32)
    (out,) = lib.kernel("simd_total_i32")(args={"a": mx.array(k), "out": ((n,), mx.int32)}, grid=(n, 1, 1),
                                          threadgroup=(n, 1, 1))
    np.testing.assert_array_equal(np.array(out), -k)
