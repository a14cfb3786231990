"""GPU memory handed out again while work queued before is still to run.

The GPU allocator reuses a freed block at once: kernels queued before its
array was freed on the host run later on the same stream, so anything
written into the block must be queued after them. Inside one eval an op
frees its temporaries as soon as their kernels are queued (here sort's
contiguous copy of a transposed input, 64 to 256 bytes, the size class of
a scalar), and a later node of the same eval gets that block. Found with
the suite run by several processes on one GPU (their kernels then wait
longer): a new scalar (`x * 0.316`) was copied synchronously into such a
block, the queued copy then overwrote it, and the product was wrong. Here
one large matmul at the front of the eval keeps the queue long instead.
(`mx.async_eval` waits like `mx.eval` in Alloy, so each case is one eval.)
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


def sorted_transpose(m):
    """sort along rows of m.T: the op copies m.T into a temporary block,
    queued, and frees it before its kernels have run."""
    return mx.sort(mx.array(m).T, axis=-1)


def test_a_new_scalar_is_not_overwritten_by_queued_kernels(rng):
    big = busy_gpu()
    for trial in range(12):
        m = rng.standard_normal((8, 8)).astype(np.float32)
        s = float(rng.standard_normal())  # a value no array held before
        z = sorted_transpose(m) * s
        slow = big @ big
        mx.eval(slow, z)
        want = np.sort(m.T.astype(np.float64), axis=-1) * np.float32(s)
        np.testing.assert_allclose(np.array(z), want, rtol=2e-6, atol=2e-6, err_msg=f"trial {trial}, s={s}")


def test_linalg_inputs_from_the_host_wait_for_queued_kernels(rng):
    """inv's identity right-hand sides and lu_factor's pivots are copied from
    the host into reused blocks too."""
    big = busy_gpu()
    for trial in range(6):
        m = rng.standard_normal((4, 4)).astype(np.float32)
        a = sorted_transpose(m) + 4 * mx.eye(4)
        inv = mx.linalg.inv(a)
        slow = big @ big
        mx.eval(slow, inv)
        want = np.linalg.inv(np.sort(m.T.astype(np.float64), axis=-1) + 4 * np.eye(4))
        np.testing.assert_allclose(np.array(inv), want, rtol=1e-4, atol=1e-5, err_msg=f"trial {trial}")
        b = rng.standard_normal((5, 5)).astype(np.float32)
        lu, pivots = mx.linalg.lu_factor(sorted_transpose(b))
        slow = big @ big
        mx.eval(slow, lu, pivots)
        lu_cpu, pivots_cpu = mx.linalg.lu_factor(mx.sort(mx.array(b).T, axis=-1, stream=mx.cpu), stream=mx.cpu)
        np.testing.assert_array_equal(np.array(pivots), np.array(pivots_cpu), err_msg=f"trial {trial} (pivots)")


def test_a_second_stream_waits_for_what_the_first_computes(rng):
    """Each Alloy stream is its own CUDA stream: an op on one that reads what
    an op on another computed in the same eval must wait for it."""
    big = busy_gpu()
    other = mx.new_stream(mx.gpu)
    for trial in range(6):
        shift = float(rng.standard_normal())
        # New values each trial (a block holding the last product would
        # otherwise pass for this one), queued first on the default stream.
        left = mx.random.normal((4096, 4096))
        product = left @ big
        with mx.stream(other):
            corner = product[:8, :8] + shift
        mx.eval(corner)
        want = np.array(product)[:8, :8].astype(np.float64) + np.float32(shift)
        np.testing.assert_allclose(np.array(corner), want, rtol=1e-6, atol=1e-4, err_msg=f"trial {trial}")


def test_blocks_freed_by_one_stream_are_not_overwritten_by_another(rng):
    """In one eval: sort's temporary, freed while its copy waits behind a large
    matmul on the default stream, then arrays made on a second stream, which
    runs at once. The first gets that block: an arange written there must
    not be overwritten when the queued copy runs."""
    big = busy_gpu()
    other = mx.new_stream(mx.gpu)
    for trial in range(8):
        m = rng.standard_normal((8, 8)).astype(np.float32)
        slow = big @ big
        t = sorted_transpose(m)
        starts = [int(k) for k in rng.integers(-1000, 1000, size=2)]
        vs = [rng.standard_normal(64).astype(np.float32) for _ in range(2)]
        with mx.stream(other):
            ws = [mx.arange(k, k + 64, dtype=mx.float32) for k in starts] + [mx.array(v) * 2 + 1 for v in vs]
        mx.eval(slow, t, *ws)
        wants = [np.arange(k, k + 64, dtype=np.float64) for k in starts] + [v.astype(np.float64) * 2 + 1 for v in vs]
        for i, (w, want) in enumerate(zip(ws, wants)):
            np.testing.assert_allclose(np.array(w), want, rtol=1e-6, atol=1e-6,
                                       err_msg=f"trial {trial}, array {i} (second stream)")
        np.testing.assert_array_equal(np.array(t), np.sort(m.T, axis=-1), err_msg=f"trial {trial} (sort)")
