"""GPU memory handed out again while work queued before is still to run.

The GPU allocator reuses a freed block at once: the kernels queued before
its array was freed on the host run later on the same stream, so anything
written into the block must be queued after them. Found with the suite run
by several processes on one GPU (their kernels then wait longer): a new
scalar (`x * 0.316`) was copied synchronously into a reused block, a queued
kernel then overwrote it, and every later product by that value was wrong.
Here one process keeps the GPU busy with a large matmul instead.
"""
import os

import numpy as np
import pytest

import alloy.core as mx

pytestmark = pytest.mark.skipif(os.environ.get("ALLOY_TEST_DEVICE") != "gpu",
                                reason="stream ordering of GPU memory (the CPU has no queue)")


def busy_gpu():
    """A few milliseconds of queued work (float32 matmul, exact by default)."""
    big = mx.random.normal((4096, 4096))
    mx.eval(big)
    return big


def test_a_new_scalar_is_not_overwritten_by_queued_kernels(rng):
    big = busy_gpu()
    for trial in range(12):
        x = rng.standard_normal(64).astype(np.float32)
        slow = big @ big
        y = mx.exp(mx.array(x)) * 1.5 - 0.25  # small intermediates, freed once launched
        mx.async_eval(slow, y)
        s = float(rng.standard_normal())  # a value no array held before
        z = y * s
        want = (np.exp(x.astype(np.float64)) * 1.5 - 0.25) * np.float32(s)
        np.testing.assert_allclose(np.array(z), want, rtol=2e-6, atol=2e-6, err_msg=f"trial {trial}, s={s}")


def test_linalg_inputs_from_the_host_wait_for_queued_kernels(rng):
    """inv's identity right-hand sides and lu_factor's pivots are copied from
    the host into reused blocks too."""
    big = busy_gpu()
    for trial in range(6):
        m = rng.standard_normal((4, 4)).astype(np.float32) + 4 * np.eye(4, dtype=np.float32)
        slow = big @ big
        y = mx.exp(mx.array(rng.standard_normal(32).astype(np.float32))) * 2
        mx.async_eval(slow, y)
        inv = mx.linalg.inv(mx.array(m))
        np.testing.assert_allclose(np.array(inv), np.linalg.inv(m.astype(np.float64)), rtol=1e-4, atol=1e-5,
                                   err_msg=f"trial {trial}")
        a = rng.standard_normal((5, 5)).astype(np.float32)
        slow = big @ big
        y = mx.exp(mx.array(rng.standard_normal(32).astype(np.float32))) * 2
        mx.async_eval(slow, y)
        lu, pivots = mx.linalg.lu_factor(mx.array(a))
        lu_cpu, pivots_cpu = mx.linalg.lu_factor(mx.array(a), stream=mx.cpu)
        np.testing.assert_array_equal(np.array(pivots), np.array(pivots_cpu), err_msg=f"trial {trial} (pivots)")
        np.testing.assert_allclose(np.array(lu), np.array(lu_cpu), rtol=1e-4, atol=1e-5, err_msg=f"trial {trial}")
