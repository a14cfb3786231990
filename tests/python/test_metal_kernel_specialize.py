"""On the GPU, a metal_kernel launched again and again with the same input
shapes and strides gets a build with those as constants, made in the
background (backend/cuda/specialize.h). Its results are the generic build's,
for every layout, contiguous or strided, and a layout it was not built for
still runs the generic build."""
import pathlib
import sys

import numpy as np
import pytest

import alloy.core as mx

from conftest import DEVICE

pytestmark = pytest.mark.skipif(DEVICE != "gpu", reason="specialized builds are the GPU backend's; "
                                "ALLOY_TEST_DEVICE=gpu runs them")

ROOT = pathlib.Path(__file__).resolve().parents[2]

# Reads an input through its shape, strides and ndim (row-contiguity off),
# with divisions by the shape, as the seeds do.
STRIDED = """
    uint i = thread_position_in_grid.x;
    int cols = inp_shape[inp_ndim - 1];
    uint row = i / cols, col = i % cols;
    out[i] = inp[row * inp_strides[0] + col * inp_strides[1]] * 2.0f + float(row);
"""


def strided_kernel():
    return mx.fast.metal_kernel(name="specialize_strided", input_names=["inp"], output_names=["out"],
                                source=STRIDED, ensure_row_contiguous=False)


def run_strided(k, a):
    n = a.shape[0] * a.shape[1]
    return k(inputs=[a], grid=(n, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(n,)], output_dtypes=[mx.float32],
             init_value=float("nan"))[0]


def want_strided(x):
    rows = np.repeat(np.arange(x.shape[0]), x.shape[1])
    return x.astype(np.float64).reshape(-1) * 2 + rows


def test_repeated_launches_get_a_specialized_build_with_the_same_results(rng):
    k = strided_kernel()
    x = rng.standard_normal((37, 29)).astype(np.float32)
    layouts = {"row-major": mx.array(x), "transposed": mx.transpose(mx.array(np.ascontiguousarray(x.T)))}
    before = mx.fast._specialized_kernels_built()
    for name, a in layouts.items():
        for _ in range(4):
            np.testing.assert_allclose(np.array(run_strided(k, a)), want_strided(x), rtol=1e-6, err_msg=name)
    mx.fast._wait_for_specialized_kernels()
    assert mx.fast._specialized_kernels_built() >= before + 2  # one build per layout
    for name, a in layouts.items():
        for _ in range(2):
            np.testing.assert_allclose(np.array(run_strided(k, a)), want_strided(x), rtol=1e-6,
                                       err_msg=f"{name}, specialized")
    # Another shape: the generic build, then its own.
    y = rng.standard_normal((5, 64)).astype(np.float32)
    for _ in range(5):
        np.testing.assert_allclose(np.array(run_strided(k, mx.array(y))), want_strided(y), rtol=1e-6)
        mx.fast._wait_for_specialized_kernels()


def test_the_seeds_grid_sample_specialized_matches_float64(rng, monkeypatch):
    # The seed loads all four corners before masking those outside the
    # image, so it reads outside `x`: run as written, unchecked.
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")
    sys.path.insert(0, str(ROOT / "examples" / "seeds"))
    import grid_sample
    from shared_fixtures import grid_sample_numpy

    x = rng.standard_normal((2, 9, 11, 3)).astype(np.float32)
    g = rng.uniform(-1.1, 1.1, (2, 7, 5, 2)).astype(np.float32)
    want = grid_sample_numpy(x.astype(np.float64), g.astype(np.float64))
    before = mx.fast._specialized_kernels_built()
    outs = []
    for i in range(6):
        outs.append(np.array(grid_sample.grid_sample(mx.array(x), mx.array(g))))
        if i == 3:
            mx.fast._wait_for_specialized_kernels()
    assert mx.fast._specialized_kernels_built() > before
    for out in outs:
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


# Entries of a shape or strides past the input's ndim: the generic build's
# ShapeArg/StridesArg holds zeros there, and the specialized build's
# constant arrays are as long, with zeros past ndim too.
PAST_NDIM = """
    uint i = thread_position_in_grid.x;
    out[i] = inp[i] + float(inp_shape[3]) + float(inp_strides[5]) + float(inp_ndim);
"""


def test_a_shape_read_past_ndim_is_zero_in_both_builds(rng, monkeypatch):
    # Read past ndim on purpose (Metal leaves it undefined; the CUDA builds
    # agree on zeros), so unchecked.
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")
    k = mx.fast.metal_kernel(name="specialize_past_ndim", input_names=["inp"], output_names=["out"],
                             source=PAST_NDIM)
    x = rng.standard_normal((6, 10)).astype(np.float32)
    a = mx.array(x)
    before = mx.fast._specialized_kernels_built()

    def run():
        return np.array(k(inputs=[a], grid=(60, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(6, 10)],
                          output_dtypes=[mx.float32], init_value=float("nan"))[0])

    for _ in range(4):
        np.testing.assert_array_equal(run(), x + 2)
    mx.fast._wait_for_specialized_kernels()
    assert mx.fast._specialized_kernels_built() >= before + 1
    np.testing.assert_array_equal(run(), x + 2)
