"""Metal function constants in metal_library programs: program-scope
`constant T name [[function_constant(i)]];` given values per kernel
(`lib.kernel(name, function_constants={...})`, Metal's
MTLFunctionConstantValues), `is_function_constant_defined`, and the errors.
Checked against numpy float64 on fresh inputs, on the test device."""
import numpy as np
import pytest

import alloy.core as mx

PROGRAM = """
#include <metal_stdlib>
using namespace metal;

constant bool use_scale [[function_constant(0)]];
constant float scale_value [[function_constant(1)]];
constant uint power [[function_constant(2)]];
constant bool has_scale = is_function_constant_defined(scale_value);
constant bool has_power = is_function_constant_defined(power);

kernel void transform(device const float* a [[buffer(0)]],
                      device float* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    float v = a[i];
    if (use_scale && has_scale) v *= scale_value;
    if (has_power) {
        float p = 1.0f;
        for (uint k = 0; k < power; ++k) p *= v;
        v = p;
    }
    out[i] = v;
}
"""


def run(lib, x, constants):
    k = lib.kernel("transform", function_constants=constants)
    out = k(args={"a": mx.array(x), "out": ((x.size,), mx.float32)}, grid=(x.size, 1, 1), threadgroup=(32, 1, 1))[0]
    return np.array(out).astype(np.float64)


@pytest.mark.parametrize("constants,expect", [
    ({}, lambda x: x),
    ({0: True}, lambda x: x),  # scale_value undefined: has_scale is false
    ({0: True, 1: 2.5}, lambda x: x * 2.5),
    ({"use_scale": False, "scale_value": 3.0}, lambda x: x),
    ({"use_scale": True, "scale_value": -1.5, "power": 3}, lambda x: (x * -1.5) ** 3),
    ({2: 2}, lambda x: x ** 2),
])
def test_values_by_index_and_name(rng, constants, expect):
    lib = mx.fast.metal_library(PROGRAM)
    assert lib.function_constants == ["bool use_scale [[function_constant(0)]]",
                                      "float scale_value [[function_constant(1)]]",
                                      "uint power [[function_constant(2)]]"]
    x = rng.uniform(-2, 2, 100).astype(np.float32)
    np.testing.assert_allclose(run(lib, x, constants), expect(x.astype(np.float64)), rtol=1e-6, atol=1e-6)


def test_each_set_of_values_is_its_own_kernel(rng):
    lib = mx.fast.metal_library(PROGRAM)
    x = rng.uniform(-2, 2, 64).astype(np.float32)
    a = run(lib, x, {"use_scale": True, "scale_value": 2.0})
    b = run(lib, x, {"use_scale": True, "scale_value": 4.0})
    np.testing.assert_allclose(b, 2 * a, rtol=1e-6)


def test_errors_name_the_constant():
    lib = mx.fast.metal_library(PROGRAM)
    with pytest.raises(ValueError, match="no function constant 'missing'.*bool use_scale"):
        lib.kernel("transform", function_constants={"missing": 1})
    with pytest.raises(ValueError, match="no function constant '7'"):
        lib.kernel("transform", function_constants={7: 1})
    with pytest.raises(ValueError, match="'power' \\(uint\\) takes an integer"):
        lib.kernel("transform", function_constants={"power": 2.5})
    with pytest.raises(TypeError, match="bool, int or float"):
        lib.kernel("transform", function_constants={"power": "two"})
    with pytest.raises(RuntimeError, match=r"source:3:.*no initializer"):
        mx.fast.metal_library("#include <metal_stdlib>\nusing namespace metal;\n"
                              "constant int n [[function_constant(0)]] = 3;\n"
                              "kernel void k(device float* o [[buffer(0)]]) { o[0] = n; }")
    with pytest.raises(RuntimeError, match="repeats the index"):
        mx.fast.metal_library("constant int n [[function_constant(0)]];\nconstant int m [[function_constant(0)]];\n"
                              "kernel void k(device float* o [[buffer(0)]]) { o[0] = n + m; }")
    with pytest.raises(RuntimeError, match="'nope' is not a function constant"):
        mx.fast.metal_library("constant int n [[function_constant(0)]];\n"
                              "constant bool d = is_function_constant_defined(nope);\n"
                              "kernel void k(device float* o [[buffer(0)]]) { o[0] = n; }").kernel("k")
