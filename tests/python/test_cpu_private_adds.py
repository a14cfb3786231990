"""Atomic outputs a kernel only adds to, on the CPU (msl/private_adds.h,
jit/cpu_private_outputs.h): each worker adds into a copy of its own with
plain adds and the copies are summed after the launch. The sums must be
those of the atomic adds: exact for integers (which wrap), float sums equal
up to the order of the adds; every other use of an output keeps it atomic.
Many threads add to few elements here, so the workers' adds collide."""
import numpy as np
import pytest

import alloy.core as mx


@pytest.fixture(autouse=True)
def unchecked_kernels(monkeypatch):
    # The suite bounds-checks every kernel (conftest), and a bounds-checked
    # kernel keeps its atomics: the kernels here are defined unchecked so
    # that their adds take the copies these tests are about.
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")

SCATTER = """
    uint i = thread_position_in_grid.x;
    uint k = idx[i];
    atomic_fetch_add_explicit(&acc[k], val[i], memory_order_relaxed);
    if (i % 3 == 0) atomic_fetch_sub_explicit(&cnt[k % 7], 2, memory_order_relaxed);
    else atomic_fetch_add_explicit(&cnt[k % 7], 5, memory_order_relaxed);
"""


def scatter_kernel(cnt_dtype):
    return mx.fast.metal_kernel(name=f"private_scatter_{cnt_dtype}", input_names=["idx", "val"],
                                output_names=["acc", "cnt"], source=SCATTER, atomic_outputs=True)


def run_scatter(kernel, idx, val, bins, cnt_dtype, init=0):
    n = idx.size
    return kernel(inputs=[mx.array(idx), mx.array(val)], grid=(n, 1, 1), threadgroup=(256, 1, 1),
                  output_shapes=[(bins,), (7,)], output_dtypes=[mx.float32, cnt_dtype], init_value=init,
                  stream=mx.cpu)


def expected_scatter(idx, val, bins, cnt_np, init=0):
    acc = np.full(bins, init, np.float64)
    np.add.at(acc, idx, val.astype(np.float64))
    i = np.arange(idx.size)
    step = np.where(i % 3 == 0, -2, 5).astype(np.int64)
    cnt = np.full(7, init, np.int64)
    np.add.at(cnt, idx % 7, step)
    return acc, cnt.astype(cnt_np)  # wraps as the kernel's adds do


@pytest.mark.parametrize("cnt_dtype,cnt_np", [(mx.int32, np.int32), (mx.uint32, np.uint32)])
@pytest.mark.parametrize("bins", [5, 4096, 1 << 21])  # collisions; scattered; more elements than copies pay for
def test_scatter_adds_match_numpy(rng, cnt_dtype, cnt_np, bins):
    n = 1 << 18
    idx = rng.integers(0, bins, n).astype(np.uint32)
    val = rng.standard_normal(n).astype(np.float32)
    kernel = scatter_kernel(cnt_dtype)
    want_acc, want_cnt = expected_scatter(idx, val, bins, cnt_np)
    # Twice: the second launch reuses the copies the first zeroed again.
    for _ in range(2):
        acc, cnt = run_scatter(kernel, idx, val, bins, cnt_dtype)
        assert acc.dtype == mx.float32 and cnt.dtype == cnt_dtype
        np.testing.assert_array_equal(np.array(cnt), want_cnt)
        tol = 1e-5 * (np.abs(val).sum() / max(1, min(bins, n)) + 1) * 8
        np.testing.assert_allclose(np.array(acc), want_acc, rtol=1e-5, atol=tol)


def test_init_value_is_added_to_once(rng):
    n, bins = 1 << 16, 3
    idx = rng.integers(0, bins, n).astype(np.uint32)
    val = rng.integers(-4, 5, n).astype(np.float32)  # small integers: float sums are exact
    acc, cnt = run_scatter(scatter_kernel(mx.int32), idx, val, bins, mx.int32, init=7)
    want_acc, want_cnt = expected_scatter(idx, val, bins, np.int32, init=7)
    np.testing.assert_array_equal(np.array(acc), want_acc.astype(np.float32))
    np.testing.assert_array_equal(np.array(cnt), want_cnt)


def test_an_output_the_kernel_reads_stays_atomic(rng):
    # acc is read back (the fetch's result is used): its adds must see each
    # other, so the kernel keeps atomics; the count of distinct returns
    # proves every add saw the one before it.
    source = """
        uint i = thread_position_in_grid.x;
        uint old = atomic_fetch_add_explicit(&ticket[0], 1u, memory_order_relaxed);
        atomic_store_explicit(&seen[old], i + 1, memory_order_relaxed);
    """
    n = 1 << 16
    k = mx.fast.metal_kernel(name="private_ticket", input_names=["a"], output_names=["ticket", "seen"],
                             source=source, atomic_outputs=True)
    ticket, seen = k(inputs=[mx.zeros(1)], grid=(n, 1, 1), threadgroup=(128, 1, 1),
                     output_shapes=[(1,), (n,)], output_dtypes=[mx.uint32, mx.uint32], init_value=0,
                     stream=mx.cpu)
    assert int(np.array(ticket)[0]) == n
    s = np.array(seen)
    assert (s > 0).all() and len(np.unique(s)) == n


def test_a_fault_midway_leaves_later_launches_right(rng):
    source = """
        uint i = thread_position_in_grid.x;
        ulong k = i % 11;
        if (i == 40000) k = 0x100000000000ull;  // far past the buffer: a fault
        atomic_fetch_add_explicit(&acc[k], 1.0f, memory_order_relaxed);
    """
    n = 1 << 16
    bad = mx.fast.metal_kernel(name="private_fault", input_names=["a"], output_names=["acc"], source=source,
                               atomic_outputs=True)
    with pytest.raises(RuntimeError, match="private_fault.*(SIGSEGV|out-of-bounds)"):
        mx.eval(bad(inputs=[mx.zeros(1)], grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(11,)],
                    output_dtypes=[mx.float32], init_value=0, stream=mx.cpu)[0])
    idx = rng.integers(0, 11, n).astype(np.uint32)
    val = rng.integers(-4, 5, n).astype(np.float32)
    acc, _ = run_scatter(scatter_kernel(mx.int32), idx, val, 11, mx.int32)
    want, _ = expected_scatter(idx, val, 11, np.int32)
    np.testing.assert_array_equal(np.array(acc), want.astype(np.float32))


@pytest.mark.parametrize("mode", ["auto", "coroutines", "fibers"])
def test_adds_after_simd_reductions_under_each_thread_model(rng, monkeypatch, mode):
    # The seed VJP's shape: a SIMD-group reduction, then lane 0 adds the sum;
    # split into regions, run as coroutines or on fibers (ALLOY_CPU_SYNC).
    monkeypatch.setenv("ALLOY_CPU_SYNC", mode)
    source = """
        uint i = thread_position_in_grid.x;
        float s = simd_sum(val[i]);
        if (thread_index_in_simdgroup == 0) atomic_fetch_add_explicit(&acc[(i / 32) % 13], s, memory_order_relaxed);
        atomic_fetch_add_explicit(&hits[i % 5], 1, memory_order_relaxed);
    """
    n = 1 << 16
    val = rng.integers(-8, 9, n).astype(np.float32)  # small integers: every float sum is exact
    k = mx.fast.metal_kernel(name="private_simd_sum", input_names=["val"], output_names=["acc", "hits"],
                             source=source, atomic_outputs=True)
    acc, hits = k(inputs=[mx.array(val)], grid=(n, 1, 1), threadgroup=(128, 1, 1),
                  output_shapes=[(13,), (5,)], output_dtypes=[mx.float32, mx.int32], init_value=0, stream=mx.cpu)
    want = np.zeros(13)
    np.add.at(want, (np.arange(n) // 32) % 13, val.astype(np.float64))
    np.testing.assert_array_equal(np.array(acc), want.astype(np.float32))
    np.testing.assert_array_equal(np.array(hits), np.bincount(np.arange(n) % 5, minlength=5).astype(np.int32))


@pytest.mark.parametrize("bins,way", [(4096, "plain adds"), (1 << 21, "atomic adds")])
def test_which_way_the_adds_went_is_reported(rng, bins, way):
    # The numbers above are those of atomic adds too, so a kernel that fell
    # back to atomics would pass them; ALLOY_EVAL_PROFILE=1's table says
    # which way each launch went. 2^18 threads: 4096 bins take copies over
    # two workers, 2^21 bins (8 elements a thread) keep atomics.
    import os
    import subprocess
    import sys
    seed = int(rng.integers(1 << 31))
    code = f"""
import numpy as np, alloy.core as mx
rng = np.random.default_rng({seed})
n = 1 << 18
k = mx.fast.metal_kernel(name="private_scatter_report", input_names=["idx", "val"], output_names=["acc", "cnt"],
                         source={SCATTER!r}, atomic_outputs=True)
idx = rng.integers(0, {bins}, n).astype(np.uint32)
val = rng.standard_normal(n).astype(np.float32)
acc, cnt = k(inputs=[mx.array(idx), mx.array(val)], grid=(n, 1, 1), threadgroup=(256, 1, 1),
             output_shapes=[({bins},), (7,)], output_dtypes=[mx.float32, mx.int32], init_value=0, stream=mx.cpu)
want = np.zeros({bins}); np.add.at(want, idx, val.astype(np.float64))
assert np.allclose(np.array(acc), want, rtol=1e-4, atol=1e-3)
"""
    env = dict(os.environ, ALLOY_EVAL_PROFILE="1", ALLOY_NUM_THREADS="2", ALLOY_BOUNDS_CHECK="0")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stderr.splitlines() if line.startswith("(cpu kernel, ")]
    assert [row.split(")")[0] + ")" for row in rows] == [f"(cpu kernel, {way})"], r.stderr
