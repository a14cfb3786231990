"""What MLX prepends to every metal_kernel (its kernels/utils.h, which
includes complex.h), used without an #include, as real kernels do
(mtplx's hc_verify_read pastes MLX's GemvWide, with MLX_MTL_PRAGMA_UNROLL
and complex64_t, into its header); and function constants a header
declares but no kernel parameter gives (MLX's quantized.h declares them for
its own pipelines; mtplx's moe_sorted_gather_nax inlines it). Checked
against numpy float64 on the test device, and compiled by NVRTC too
(ALLOY_CHECK_CUDA=1, conftest). Outputs are poisoned with NaN."""
import numpy as np

import alloy.core as mx

UTILS_HEADER = """
template <typename T> struct Acc { using type = float; };
template <> struct Acc<complex64_t> { using type = complex64_t; };   // MLX's gemv.h pattern

template <typename T, int N>
float unrolled_dot(const device T* a, const device T* b) {
    float s = 0;
    MLX_MTL_PRAGMA_UNROLL
    for (int k = 0; k < N; k++) s += float(a[k]) * float(b[k]);
    return s;
}
"""

UTILS_SOURCE = """
    uint i = thread_position_in_grid.x;
    float dot = unrolled_dot<float, 4>(x + 4 * i, y + 4 * i);
    typename ConditionalType<(sizeof(T) == 2), half, float>::type narrow = T(dot);
    complex64_t z(x[4 * i], y[4 * i]);
    typename Acc<complex64_t>::type w = z * z;                 // (a + bi)^2
    out[4 * i] = float(narrow);
    out[4 * i + 1] = float(WorkPerThread<T>::n) + float(WorkPerThread<float>::n) * 10;
    out[4 * i + 2] = w.real + w.imag;
    out[4 * i + 3] = float(cast_to<bool>(z)) + 2 * float(cast_to<bool>(complex64_t(0.0f, 0.0f)))
                   + 4 * float(cast_to<int>(x[4 * i] * 3));
"""


def test_mlx_utils_names_need_no_include(rng):
    n = 64
    x = rng.standard_normal(4 * n).astype(np.float32)
    y = rng.standard_normal(4 * n).astype(np.float32)
    for dtype, narrow in ((mx.float16, np.float16), (mx.float32, np.float32)):
        k = mx.fast.metal_kernel(name="mlx_utils_names", input_names=["x", "y"], output_names=["out"],
                                 source=UTILS_SOURCE, header=UTILS_HEADER)
        (out,) = k(inputs=[mx.array(x), mx.array(y)], template=[("T", dtype)], grid=(n, 1, 1),
                   threadgroup=(32, 1, 1), output_shapes=[(4 * n,)], output_dtypes=[mx.float32],
                   init_value=float("nan"))
        got = np.array(out).reshape(n, 4)
        x64, y64 = x.astype(np.float64).reshape(n, 4), y.astype(np.float64).reshape(n, 4)
        dot = (x64 * y64).sum(axis=1)
        np.testing.assert_allclose(got[:, 0], dot.astype(np.float32).astype(narrow), rtol=2e-3, atol=2e-3)
        size = np.dtype(narrow).itemsize
        np.testing.assert_array_equal(got[:, 1], 8 // size + 2 * 10)
        a, b = x64[:, 0], y64[:, 0]
        np.testing.assert_allclose(got[:, 2], (a * a - b * b) + 2 * a * b, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(got[:, 3], 1 + 4 * np.trunc(x[::4] * np.float32(3)))


FC_HEADER = """
constant bool align_M [[function_constant(200)]];
constant int tile [[function_constant(201)]];
"""

FC_SOURCE = """
    uint i = thread_position_in_grid.x;
    float scale = is_function_constant_defined(align_M) ? 100.0f : 2.0f;
    out[i] = inp[i] * scale + (is_function_constant_defined(tile) ? 1.0f : 0.0f);
"""


def test_function_constants_a_header_declares_are_undefined(rng):
    # No kernel parameter gives them values: Metal compiles the kernel and
    # reports them undefined (their values would be unspecified).
    x = rng.standard_normal(40).astype(np.float32)
    k = mx.fast.metal_kernel(name="header_function_constants", input_names=["inp"], output_names=["out"],
                             source=FC_SOURCE, header=FC_HEADER)
    (out,) = k(inputs=[mx.array(x)], grid=(40, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(40,)],
               output_dtypes=[mx.float32], init_value=float("nan"))
    np.testing.assert_allclose(np.array(out), x.astype(np.float64) * 2, rtol=1e-6)
