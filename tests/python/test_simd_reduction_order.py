"""SIMD-group and quad-group reductions round in one order on every device.

Metal does not say in which order simd_sum adds its lanes. Alloy fixes one:
the CUDA target's (src/msl/runtime/cuda_simd.h). When every lane of a SIMD
group that exists takes part, a full group of 32 folds its upper half onto
its lower half, then halves again (16, 8, 4, 2, 1: the butterfly, whose
result every lane shares); a shorter group (a partial last group of a
threadgroup) folds lane l + o onto lane l where lane l + o exists. Quads
fold the same way inside each group of 4. The CPU runs the same folds
(metal_cpu.h, seg_tree_reduce), as regions (ALLOY_CPU_SYNC=auto, checked
in the translation it prints), coroutines or fibers, so a
kernel's sums are bit for bit the same on the CPU and the GPU.

The reference below emulates those folds in float32 with numpy and is
compared bit for bit; inputs span six orders of magnitude, and the test
checks that adding the lanes in order would give other bits for some
groups (so it would notice a different order). Seeds are fresh each run.
"""
import os

import numpy as np
import pytest

import alloy.core as mx

DEVICE = os.environ.get("ALLOY_TEST_DEVICE", "cpu")
MODES = ["auto", "coroutines", "fibers"] if DEVICE == "cpu" else ["gpu"]

SOURCE = """
    uint gid = thread_position_in_grid.x;
    float v = x[gid];
    float p = y[gid];
    sums[gid] = simd_sum(v);
    quad_sums[gid] = quad_sum(v);
    products[gid] = simd_product(p);
"""


def folded(values, group_lanes, width, op):
    """Each lane's result: the folds of its `width`-lane segment of a SIMD
    group of `group_lanes` lanes (the runtime's order)."""
    out = np.empty_like(values)
    for base in range(0, group_lanes, width):
        present = min(width, group_lanes - base)
        a = values[base:base + present].copy()
        o = width // 2
        while o:
            for lane in range(o):
                if group_lanes == 32 or lane + o < present:
                    a[lane] = op(a[lane], a[lane + o])
            o //= 2
        out[base:base + present] = a[0]
    return out


def in_lane_order(values, group_lanes, op):
    r = values[0]
    for v in values[1:group_lanes]:
        r = op(r, v)
    return r


def simd_groups(n, tg):
    """(first thread, lanes) of each SIMD group of a 1-D grid of n threads."""
    for start in range(0, n, tg):
        size = min(tg, n - start)
        for w in range(0, size, 32):
            yield start + w, min(32, size - w)


def inputs_that_tell_orders_apart(rng, n, tg):
    """Values over six orders of magnitude, drawn again until some SIMD
    group's fold gives other bits than adding its lanes in order (seed
    3437925621 drew five groups of 20 whose sums came out the same)."""
    add = lambda a, b: np.float32(a + b)  # noqa: E731
    for _ in range(100):
        x = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)).astype(np.float32)
        if any(in_lane_order(x[first:first + lanes], lanes, add) != folded(x[first:first + lanes], lanes, 32, add)[0]
               for first, lanes in simd_groups(n, tg)):
            return x
    raise AssertionError("no draw of 100 told the orders apart")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tg, n", [(64, 256), (20, 100), (78, 200)])
def test_reductions_fold_in_the_cuda_targets_order(monkeypatch, capfd, rng, mode, tg, n):
    if DEVICE == "cpu":
        monkeypatch.setenv("ALLOY_CPU_SYNC", mode)
    x = inputs_that_tell_orders_apart(rng, n, tg)
    y = (1 + 0.05 * rng.standard_normal(n)).astype(np.float32)
    k = mx.fast.metal_kernel(name="reduction_order", input_names=["x", "y"],
                             output_names=["sums", "quad_sums", "products"], source=SOURCE)
    outs = k(inputs=[mx.array(x), mx.array(y)], grid=(n, 1, 1), threadgroup=(tg, 1, 1),
             output_shapes=[(n,)] * 3, output_dtypes=[mx.float32] * 3, init_value=float("nan"),
             verbose=mode == "auto")
    sums, quads, products = (np.array(o) for o in outs)
    if mode == "auto":
        assert "Threads run as regions." in capfd.readouterr().out
    add = lambda a, b: np.float32(a + b)  # noqa: E731
    mul = lambda a, b: np.float32(a * b)  # noqa: E731
    order_matters = False
    for first, lanes in simd_groups(n, tg):
        s = slice(first, first + lanes)
        for got, values, width, op in ((sums, x, 32, add), (quads, x, 4, add), (products, y, 32, mul)):
            want = folded(values[s], lanes, width, op)
            assert np.array_equal(got[s].view(np.uint32), want.view(np.uint32)), (
                f"threads {first}..{first + lanes - 1} (width {width}): got {got[s]}, want {want}")
        order_matters |= in_lane_order(x[s], lanes, add) != sums[first]
    assert order_matters, "no SIMD group's sum depends on the order: the inputs cannot tell orders apart"
