"""Rows of threads on the CPU (msl/cpu_uniform_values.h, ThreadRows).

A kernel split into regions that names its position (`uint e =
thread_position_in_grid.x;`) and divides it by a value the group shares
(`e / C`, `e % C`: a point and its channel) runs its threads row by row,
the row counted instead of divided for (runtime: region_for_rows). Bounds
checks keep every declaration a thread's own, so these run without them. Rows may
straddle threadgroups, be longer than a group, be shorter than the runtime's
minimum (then each thread divides, as before), and the grid may have a
second dimension or threads that returned (also divided for). Every case
must give the fibers' numbers bit for bit and a float64 reference's.
"""
import numpy as np
import pytest

import alloy.core as mx
from test_cpu_sync_threads import runner, translations_and_results

pytestmark = pytest.mark.usefixtures("on_cpu")


@pytest.fixture
def on_cpu():
    mx.set_default_device(mx.cpu)


# out[e] = x[row, col] * w[row] + 2^-6 * (its SIMD group's sum of those);
# rows listed in `skip` return before the sum. The SIMD group's sum depends
# on which threads share one: 32 consecutive threads of a threadgroup.
BODY = """
    INDEX e = thread_position_in_grid.x;
    int C = x_shape[2];
    int R = x_shape[1];
    uint plane = thread_position_in_grid.y;
    float v = x[(plane * R + e / C) * C + e % C] * w[e / C];
    if (e / C == SKIP) return;
    float s = simd_sum(v);
    out[plane * R * C + e] = v + 0.015625f * s;
"""


def kernel(index, skip, template=False):
    # (template: the row length is the kernel's template constant C.)
    source = BODY.replace("INDEX", index).replace("SKIP", str(skip))
    if template:
        source = source.replace("int C = x_shape[2];", "")
    return mx.fast.metal_kernel(name=f"rows_{index}_{skip}_{template}".replace(" ", "_"), input_names=["x", "w"],
                                output_names=["out"], source=source)


def reference(x, w, group, skip):
    """float64: each thread's value, then its SIMD group's sum over the
    threads that did not return. A SIMD group is 32 consecutive threads of
    a threadgroup in its linear order (x fastest), across planes where a
    group holds two."""
    planes, R, C = x.shape
    n = R * C
    v = (x.astype(np.float64) * w.astype(np.float64)[None, :, None]).reshape(planes, n)
    alive = np.ones(n, bool)
    if 0 <= skip < R:
        alive[skip * C:(skip + 1) * C] = False
    out = np.full((planes, n), np.nan)
    for g0 in range(0, n, group):
        # The group's threads (plane, e) in its linear order.
        members = [(p, e) for p in range(planes) for e in range(g0, min(g0 + group, n))]
        for s0 in range(0, len(members), 32):
            lanes = [m for m in members[s0:s0 + 32] if alive[m[1]]]
            total = sum(v[p, e] for p, e in lanes)
            for p, e in lanes:
                out[p, e] = v[p, e] + 2.0 ** -6 * total
    return out.reshape(-1)


# (rows, row length C, group, planes, position type, row that returns):
# the VJP's shape (groups of whole rows), rows straddling groups, rows
# longer than a group, rows below the runtime's minimum of 8, a second grid
# dimension, a signed position, threads that return.
CASES = [
    (8, 64, 256, 1, "uint", -1),
    (13, 12, 100, 1, "uint", -1),
    (3, 1000, 256, 1, "uint", -1),
    (40, 3, 64, 1, "uint", -1),
    (9, 12, 50, 2, "uint", -1),
    (13, 12, 100, 1, "int", -1),
    (13, 24, 128, 1, "uint", 2),
    (13, 12, 100, 1, "auto", -1),
]


@pytest.mark.parametrize("template", [False, True], ids=["shape", "template"])
@pytest.mark.parametrize("R,C,group,planes,index,skip", CASES)
def test_rows_of_threads_agree_with_fibers_and_float64(monkeypatch, capfd, rng, R, C, group, planes, index, skip,
                                                       template):
    # (Bounds checks keep every declaration a thread's own: no rows.)
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")
    x = rng.standard_normal((planes, R, C)).astype(np.float32)
    w = rng.standard_normal(R).astype(np.float32)
    k = kernel(index, skip, template)
    launch = dict(inputs=[mx.array(x), mx.array(w)], output_shapes=[(planes * R * C,)],
                  output_dtypes=[mx.float32], grid=(R * C, planes, 1),
                  threadgroup=(group, planes, 1), init_value=float("nan"))
    if template:
        launch["template"] = [("C", C)]
    got = translations_and_results(monkeypatch, capfd, k, **launch)
    text, out = got["auto"]
    assert runner(text) == "regions", text
    assert f"region_for_rows<{'uint' if index == 'auto' else index}>(alloy_g, C," in text, text
    # Both divisions of the first statement are the row and column.
    assert "v = x[(plane * R + alloy_row ) * C + alloy_col ] * w[alloy_row ];" in text, text
    np.testing.assert_array_equal(out, got["fibers"][1])
    expected = reference(x, w, group, skip)
    returned = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(out), returned)
    np.testing.assert_allclose(out[~returned], expected[~returned], rtol=1e-5, atol=1e-5)


# Without a SIMD-group call: the kernel runs as one region only for its
# rows (plain loops otherwise, as ALLOY_CPU_SYNC=fibers keeps it), and a
# guard that returns past the end keeps the plain loops.
FORWARD = """
    uint e = thread_position_in_grid.x;
    int C = x_shape[1];
    float v = x[e / C * C + e % C] * w[e / C] + float(e % C);
    out[e] = v;
"""


@pytest.mark.parametrize("R,C,group", [(8, 64, 256), (13, 12, 100), (3, 1000, 256), (40, 3, 64)])
def test_a_kernel_without_sync_runs_its_rows_as_one_region(monkeypatch, capfd, rng, R, C, group):
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")
    x = rng.standard_normal((R, C)).astype(np.float32)
    w = rng.standard_normal(R).astype(np.float32)
    k = mx.fast.metal_kernel(name="rows_forward", input_names=["x", "w"], output_names=["out"], source=FORWARD)
    launch = dict(inputs=[mx.array(x), mx.array(w)], output_shapes=[(R * C,)], output_dtypes=[mx.float32],
                  grid=(R * C, 1, 1), threadgroup=(group, 1, 1), init_value=float("nan"))
    got = translations_and_results(monkeypatch, capfd, k, **launch)
    assert runner(got["auto"][0]) == "regions" and "region_for_rows<uint>(alloy_g, C," in got["auto"][0]
    assert "run</*uses_sync=*/false>(" in got["fibers"][0]
    expected = x.astype(np.float64) * w.astype(np.float64)[:, None] + np.arange(C)[None, :]
    np.testing.assert_allclose(got["auto"][1], expected.reshape(-1), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got["auto"][1], got["fibers"][1])
    guarded = mx.fast.metal_kernel(name="rows_guarded", input_names=["x", "w"], output_names=["out"],
                                   source=FORWARD.replace("uint e = thread_position_in_grid.x;",
                                                          "uint e = thread_position_in_grid.x;\n"
                                                          "    if (e >= uint(x_shape[0] * x_shape[1])) return;"))
    text = translations_and_results(monkeypatch, capfd, guarded, **launch)["auto"][0]
    assert "run</*uses_sync=*/false>(" in text, text


def test_a_zero_divisor_the_kernel_tests_for_does_not_fault(monkeypatch, capfd, rng):
    # The rows' fallback divides before the kernel's own code runs: a zero
    # row length (known only at run time) that the kernel never divides by
    # must not fault.
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")
    x = rng.standard_normal(64).astype(np.float32)
    k = mx.fast.metal_kernel(
        name="rows_zero", input_names=["x"], output_names=["out"],
        source="uint e = thread_position_in_grid.x;\n"
               "int C = x_shape[0] - 64;\n"
               "float v = x[e];\n"
               "if (C > 0) v += float(e / C) + float(e % C);\n"
               "if (C < -1) v -= float(e / C) * float(e % C);\n"
               "out[e] = simd_sum(v);\n")
    launch = dict(inputs=[mx.array(x)], output_shapes=[(64,)], output_dtypes=[mx.float32],
                  grid=(64, 1, 1), threadgroup=(64, 1, 1), init_value=float("nan"))
    got = translations_and_results(monkeypatch, capfd, k, **launch)
    assert "region_for_rows<uint>(alloy_g, C," in got["auto"][0], got["auto"][0]
    expected = np.repeat(x.astype(np.float64).reshape(2, 32).sum(axis=1), 32)
    np.testing.assert_allclose(got["auto"][1], expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got["auto"][1], got["fibers"][1])
