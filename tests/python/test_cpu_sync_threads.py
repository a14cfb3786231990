"""How the CPU runs kernels whose threads synchronise (msl/cpu_regions.h,
msl/cpu_threads.h).

Where the control flow allows, a kernel is split at its barriers and
SIMD-group calls into regions, each a loop over the group's threads; where
every such call is still in the kernel's own body, its threads are
coroutines; elsewhere fibers. All three must give the same numbers, bit for
bit (they share the SIMD-group arithmetic and run threads in the same
order), and the same errors. ALLOY_CPU_SYNC=coroutines|fibers stops at that
model; CI also runs the synchronising kernels' suites those ways (Makefile).
"""
import numpy as np
import pytest

import alloy.core as mx

pytestmark = pytest.mark.usefixtures("on_cpu")


@pytest.fixture
def on_cpu():
    mx.set_default_device(mx.cpu)


MODES = ("auto", "coroutines", "fibers")


def run_modes(monkeypatch, fn):
    """fn() under each ALLOY_CPU_SYNC mode: {mode: result}."""
    out = {}
    for mode in MODES:
        monkeypatch.setenv("ALLOY_CPU_SYNC", mode)
        out[mode] = fn()
    return out


# A loop with barriers, an early return of part of the group, threadgroup
# memory, SIMD and quad reductions and scans, shuffles and a ballot, in
# partial threadgroups (grid 1000, groups of 96: the last has 40 threads).
BODY = """
    uint gid = thread_position_in_grid.x;
    uint lid = thread_position_in_threadgroup.x;
    uint tg = threads_per_threadgroup.x;
    threadgroup float buf[128];
    float v = x[gid];
    float acc = 0.0f;
    for (uint r = 0; r < rounds; ++r) {
        buf[lid] = v * float(r + 1);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        acc += buf[(lid + r + 1) % tg];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    float s = simd_sum(acc);
    float q = quad_max(v);
    float p = simd_prefix_exclusive_sum(v);
    float up = simd_shuffle_up(v, 3);
    float ix = simd_shuffle_xor(acc, 5);
    uint votes = uint(uint64_t(simd_ballot(v > 0.0f)) & 0xffffffffu);
    if (v < -1.0f) {
        out[gid * 8] = -1.0f;
        return;
    }
    float w = simd_max(v);  // over the lanes still here
    out[gid * 8 + 0] = s;
    out[gid * 8 + 1] = q;
    out[gid * 8 + 2] = p;
    out[gid * 8 + 3] = up;
    out[gid * 8 + 4] = ix;
    out[gid * 8 + 5] = float(popcount(votes));
    out[gid * 8 + 6] = w;
    out[gid * 8 + 7] = acc;
"""


def reference(x, rounds, n, tg):
    """float64 model of BODY."""
    out = np.full((n, 8), np.nan)
    for g0 in range(0, n, tg):
        size = min(tg, n - g0)
        v = x[g0:g0 + size].astype(np.float64)
        lid = np.arange(size)
        acc = np.zeros(size)
        for r in range(rounds):
            buf = v * (r + 1)
            acc += buf[(lid + r + 1) % size]
        for w0 in range(0, size, 32):
            lanes = np.arange(w0, min(w0 + 32, size))
            k = len(lanes)
            vv, aa = v[lanes], acc[lanes]
            o = out[g0 + lanes]
            o[:, 0] = aa.sum()
            for q0 in range(0, k, 4):
                o[q0:q0 + 4, 1] = vv[q0:q0 + 4].max()
            o[:, 2] = np.concatenate([[0], np.cumsum(vv)[:-1]])
            o[:, 3] = [vv[i - 3] if i >= 3 else vv[i] for i in range(k)]
            o[:, 4] = [aa[i ^ 5] if (i ^ 5) < k else aa[i] for i in range(k)]
            o[:, 5] = (vv > 0).sum()
            stay = vv >= -1.0
            o[:, 6] = vv[stay].max() if stay.any() else np.nan
            o[:, 7] = aa
            o[~stay] = np.nan
            o[~stay, 0] = -1.0
            out[g0 + lanes] = o
    return out


def test_coroutines_and_fibers_agree_bit_for_bit(monkeypatch, rng):
    n, tg, rounds = 1000, 96, 3
    x = (rng.standard_normal(n) * 1.5).astype(np.float32)
    k = mx.fast.metal_kernel(name="sync_mix", input_names=["x", "rounds"], output_names=["out"], source=BODY)

    def run():
        (o,) = k(inputs=[mx.array(x), mx.array(np.uint32(rounds))], grid=(n, 1, 1), threadgroup=(tg, 1, 1),
                 output_shapes=[(n * 8,)], output_dtypes=[mx.float32], init_value=np.nan)
        return np.array(o).reshape(n, 8)

    got = run_modes(monkeypatch, run)
    for mode in MODES:
        np.testing.assert_array_equal(got[mode].view(np.uint32), got["fibers"].view(np.uint32), err_msg=mode)
    ref = reference(x, rounds, n, tg)
    left = x < -1.0
    out = got["auto"]
    assert np.all(out[left, 0] == -1.0) and np.all(np.isnan(out[left, 1:]))
    np.testing.assert_allclose(out[~left], ref[~left], rtol=1e-5, atol=1e-4)


def translation(capfd, kernel_call):
    """The CPU translation a launch prints with verbose=True."""
    capfd.readouterr()
    kernel_call()
    text = capfd.readouterr().out
    return text.split("translated for the CPU")[-1]


RUNNERS = {"regions": "run_regions(", "coroutines": "run_coroutines(", "fibers": "run</*uses_sync=*/true>("}


def translations_and_results(monkeypatch, capfd, kernel, **launch):
    """kernel(**launch)'s first output under each mode: {mode: (the CPU
    translation it printed, the output)}."""
    def run():
        call = lambda verbose: kernel(**launch, verbose=verbose)[0]  # noqa: E731
        text = translation(capfd, lambda: mx.eval(call(True)))
        return text, np.array(call(False))
    return run_modes(monkeypatch, run)


def runner(text):
    found = [name for name, call in RUNNERS.items() if call in text]
    assert len(found) == 1, text
    return found[0]


def test_each_kernel_runs_on_the_fastest_model_it_allows(monkeypatch, capfd, rng):
    x = rng.standard_normal(64).astype(np.float32)
    body = "uint i = thread_position_in_grid.x; out[i] = simd_sum(x[i]);"
    in_body = mx.fast.metal_kernel(name="sum_in_body", input_names=["x"], output_names=["out"], source=body)
    # The same call inside a header helper: written out in the body, it runs
    # as regions (test_cpu_inline_helpers.py); the models asked for run the
    # helper as it is, which would have to suspend: on fibers.
    in_helper = mx.fast.metal_kernel(
        name="sum_in_helper", input_names=["x"], output_names=["out"],
        header="float lane_total(float v) { return simd_sum(v); }",
        source="uint i = thread_position_in_grid.x; out[i] = lane_total(x[i]);")
    # A helper that takes its value by reference is not written out: fibers
    # (and still the same numbers).
    by_reference = mx.fast.metal_kernel(
        name="sum_by_reference", input_names=["x"], output_names=["out"],
        header="void lane_total(thread float& v) { v = simd_sum(v); }",
        source="uint i = thread_position_in_grid.x; float v = x[i]; lane_total(v); out[i] = v;")
    # Under an `if` whose condition may differ between threads: its regions
    # run for the threads that take it.
    under_if = mx.fast.metal_kernel(
        name="sum_under_if", input_names=["x"], output_names=["out"],
        source="uint i = thread_position_in_grid.x; float s = 0.0f;\n"
               "if (x[i] > -10.0f) { s = simd_sum(x[i]); }\nout[i] = s;")
    # Under an `if` every thread of the group takes the same way (the group's
    # own attribute; a template constant in mlx-lm's norms): regions.
    under_uniform_if = mx.fast.metal_kernel(
        name="sum_under_uniform_if", input_names=["x"], output_names=["out"],
        source="uint i = thread_position_in_grid.x; float s = 0.0f;\n"
               "if (threads_per_threadgroup.x > 1) { s = simd_sum(x[i]); } else s = -1.0f;\nout[i] = s;")
    expected = {
        "body": {"auto": "regions", "coroutines": "coroutines", "fibers": "fibers"},
        "under_if": {"auto": "regions", "coroutines": "coroutines", "fibers": "fibers"},
        "under_uniform_if": {"auto": "regions", "coroutines": "coroutines", "fibers": "fibers"},
        "helper": {"auto": "regions", "coroutines": "fibers", "fibers": "fibers"},
        "by_reference": {"auto": "fibers", "coroutines": "fibers", "fibers": "fibers"},
    }
    results = {}
    for name, k in (("body", in_body), ("under_if", under_if), ("under_uniform_if", under_uniform_if),
                    ("helper", in_helper), ("by_reference", by_reference)):
        for mode in MODES:
            monkeypatch.setenv("ALLOY_CPU_SYNC", mode)

            def call():
                (o,) = k(inputs=[mx.array(x)], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(64,)],
                         output_dtypes=[mx.float32], verbose=True)
                results[name, mode] = np.array(o)
            text = translation(capfd, call)
            assert runner(text) == expected[name][mode], (name, mode, text)
            assert ("co_await" in text) == (runner(text) == "coroutines"), text
    # A barrier under such an `if` is a divergent barrier, which coroutines
    # and fibers report (test_divergent_barriers_raise_the_same_error).
    barrier_under_if = mx.fast.metal_kernel(
        name="barrier_under_if", input_names=["x"], output_names=["out"],
        source="uint i = thread_position_in_grid.x;\n"
               "if (x[i] > -10.0f) { threadgroup_barrier(mem_flags::mem_none); }\nout[i] = x[i];")
    monkeypatch.setenv("ALLOY_CPU_SYNC", "auto")
    text = translation(capfd, lambda: barrier_under_if(
        inputs=[mx.array(x)], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(64,)],
        output_dtypes=[mx.float32], verbose=True))
    assert runner(text) == "coroutines" and "a barrier or SIMD-group call under `if` (source line 2)" in text
    want = np.repeat([x[:32].astype(np.float64).sum(), x[32:].astype(np.float64).sum()], 32)
    for got in results.values():
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(got, results["body", "fibers"])


def test_a_program_with_barriers_is_split_too(monkeypatch, capfd, rng):
    src = """
    constant uint TILE = 8;
    kernel void tiled_sum(device const float* a [[buffer(0)]], device float* out [[buffer(1)]],
                          constant uint& n [[buffer(2)]], threadgroup float* tile [[threadgroup(0)]],
                          uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                          uint tg [[threadgroup_position_in_grid]]) {
        tile[lid] = gid < n ? a[gid] : 0.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint s = TILE / 2; s > 0; s /= 2) {
            if (lid < s) tile[lid] += tile[lid + s];
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (lid != 0) return;
        out[tg] = tile[0];
    }
    """
    lib = mx.fast.metal_library(src)
    k = lib.kernel("tiled_sum")
    n = 100
    a = rng.standard_normal(n).astype(np.float32)

    def run():
        text = translation(capfd, lambda: mx.eval(k(args={"a": mx.array(a), "out": ((13,), mx.float32), "n": n,
                                                          "tile": 8 * 4},
                                                    grid=(13, 1, 1), threadgroup=(8, 1, 1),
                                                    dispatch="threadgroups", verbose=True)[0]))
        (o,) = k(args={"a": mx.array(a), "out": ((13,), mx.float32), "n": n, "tile": 32}, grid=(13, 1, 1),
                 threadgroup=(8, 1, 1), dispatch="threadgroups")
        return text, np.array(o)

    got = run_modes(monkeypatch, run)
    # The entry is split into regions; the group's state replaces its
    # attribute parameters.
    assert runner(got["auto"][0]) == "regions" and "GroupThreads& alloy_g" in got["auto"][0]
    assert runner(got["coroutines"][0]) == "coroutines"
    assert "co_return" in got["coroutines"][0] and "thread_task tiled_sum" in got["coroutines"][0]
    assert runner(got["fibers"][0]) == "fibers" and "co_await" not in got["fibers"][0]
    for mode in MODES:
        np.testing.assert_array_equal(got[mode][1], got["fibers"][1])
    padded = np.zeros(13 * 8)
    padded[:n] = a
    np.testing.assert_allclose(got["auto"][1], padded.reshape(13, 8).sum(1), rtol=1e-5, atol=1e-5)


LOOP_BODY = """
    uint lid = thread_position_in_threadgroup.x;
    uint tg = threads_per_threadgroup.x;
    threadgroup float buf[256];
    buf[lid] = x[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = tg / 2; s > 0; s /= 2) {
        if (lid < s) buf[lid] += buf[lid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0) out[threadgroup_position_in_grid.x] = buf[0];
"""


def test_a_loop_with_barriers_is_split_into_regions(monkeypatch, capfd, rng):
    x = rng.standard_normal(1024).astype(np.float32)
    k = mx.fast.metal_kernel(name="tree_sum", input_names=["x"], output_names=["out"], source=LOOP_BODY)

    def run():
        text = translation(capfd, lambda: mx.eval(
            k(inputs=[mx.array(x)], grid=(1024, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(4,)],
              output_dtypes=[mx.float32], verbose=True)[0]))
        (o,) = k(inputs=[mx.array(x)], grid=(1024, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(4,)],
                 output_dtypes=[mx.float32])
        return runner(text), np.array(o)

    got = run_modes(monkeypatch, run)
    assert [got[m][0] for m in MODES] == ["regions", "coroutines", "fibers"]
    for mode in MODES:
        np.testing.assert_array_equal(got[mode][1], got["fibers"][1])
    np.testing.assert_allclose(got["auto"][1], x.astype(np.float64).reshape(4, 256).sum(1), rtol=1e-5, atol=1e-4)


def test_threads_that_leave_a_loop_with_barriers_early_wait_for_the_others(monkeypatch, rng):
    """Threads run a loop with a barrier 0, 1 or 2 times: the barrier counts
    the threads still in the loop (fibers: the others have moved on and
    returned; regions: they wait after the loop), and each thread's work is
    done once per trip."""
    body = """
        uint lid = thread_position_in_threadgroup.x;
        threadgroup float trips[64];
        trips[lid] = 0.0f;
        for (uint r = 0; r < lid % 3; ++r) {
            trips[lid] += x[lid];
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        out[thread_position_in_grid.x] = trips[lid];
    """
    x = rng.standard_normal(64).astype(np.float32)
    k = mx.fast.metal_kernel(name="uneven_loop", input_names=["x"], output_names=["out"], source=body)

    def run():
        (o,) = k(inputs=[mx.array(x)], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(64,)],
                 output_dtypes=[mx.float32])
        return np.array(o)

    got = run_modes(monkeypatch, run)
    want = x * (np.arange(64) % 3)
    for mode in MODES:
        np.testing.assert_allclose(got[mode], want, rtol=1e-6, atol=1e-6, err_msg=mode)


@pytest.mark.parametrize("mode", MODES)
def test_divergent_barriers_raise_the_same_error(monkeypatch, mode):
    monkeypatch.setenv("ALLOY_CPU_SYNC", mode)
    body = """
        uint i = thread_position_in_grid.x;
        if (i % 2 == 0) { threadgroup_barrier(mem_flags::mem_threadgroup); }
        else { threadgroup_barrier(mem_flags::mem_device); }
        out[i] = 1.0f;
    """
    k = mx.fast.metal_kernel(name=f"diverge_{mode}", input_names=["x"], output_names=["out"], source=body)
    with pytest.raises(RuntimeError, match="barrier divergence"):
        mx.eval(k(inputs=[mx.zeros((8,))], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)],
                  output_dtypes=[mx.float32])[0])
    # The process and the next launch are fine.
    assert float(mx.sum(mx.ones((4,))).item()) == 4.0


def test_an_unknown_mode_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("ALLOY_CPU_SYNC", "threads")
    k = mx.fast.metal_kernel(name="mode_err", input_names=["x"], output_names=["out"],
                             source="uint i = thread_position_in_grid.x; out[i] = simd_sum(x[i]);")
    with pytest.raises(ValueError, match="ALLOY_CPU_SYNC must be 'auto', 'coroutines' or 'fibers', not 'threads'"):
        k(inputs=[mx.zeros((4,))], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
          output_dtypes=[mx.float32])


def test_three_dimensional_partial_groups_see_every_thread_once(monkeypatch, capfd, rng):
    """Regions loop over a group's x, y and z while every thread runs, and
    over its threads one by one once some have returned: groups of 4 x 3 x 2
    over a 10 x 7 x 5 grid (partial along each axis), a barrier exchange in
    reverse thread order, threads that return half way, then a loop with a
    barrier whose trip count differs between the threads left."""
    body = """
        uint3 lid = thread_position_in_threadgroup;
        uint3 pos = thread_position_in_grid;
        uint3 tpg = threads_per_threadgroup;
        uint idx = thread_index_in_threadgroup;
        uint count = tpg.x * tpg.y * tpg.z;
        uint flat = (pos.z * 7 + pos.y) * 10 + pos.x;
        threadgroup float buf[24];
        buf[idx] = x[flat];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float mirrored = buf[count - 1 - idx];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[flat * 4 + 0] = mirrored;
        out[flat * 4 + 2] = float(idx);
        if (x[flat] < 0.0f) return;
        buf[idx] = float(lid.x + 10 * lid.y + 100 * lid.z);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[flat * 4 + 3] = buf[idx];
        float trips = 0.0f;
        for (uint r = 0; r < (lid.x + lid.y + lid.z) % 3; ++r) {
            trips += 1.0f;
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        out[flat * 4 + 1] = trips;
    """
    x = rng.standard_normal(10 * 7 * 5).astype(np.float32)
    k = mx.fast.metal_kernel(name="partial_3d", input_names=["x"], output_names=["out"], source=body)

    def run():
        call = lambda verbose: k(inputs=[mx.array(x)], grid=(10, 7, 5), threadgroup=(4, 3, 2),  # noqa: E731
                                 output_shapes=[(350, 4)], output_dtypes=[mx.float32], init_value=-7.0,
                                 verbose=verbose)[0]
        text = translation(capfd, lambda: mx.eval(call(True)))
        return runner(text), np.array(call(False))

    got = run_modes(monkeypatch, run)
    assert [got[m][0] for m in MODES] == ["regions", "coroutines", "fibers"]
    want = np.full((5, 7, 10, 4), -7.0)
    xg = x.reshape(5, 7, 10)
    for z0 in range(0, 5, 2):
        for y0 in range(0, 7, 3):
            for x0 in range(0, 10, 4):
                zs, ys, xs = range(z0, min(z0 + 2, 5)), range(y0, min(y0 + 3, 7)), range(x0, min(x0 + 4, 10))
                members = [(z, y, xx) for z in zs for y in ys for xx in xs]  # thread index order: x fastest
                for i, (z, y, xx) in enumerate(members):
                    lx, ly, lz = xx - x0, y - y0, z - z0
                    want[z, y, xx, 0] = xg[members[len(members) - 1 - i]]
                    want[z, y, xx, 2] = i
                    if xg[z, y, xx] >= 0:
                        want[z, y, xx, 1] = (lx + ly + lz) % 3
                        want[z, y, xx, 3] = lx + 10 * ly + 100 * lz
    for mode in MODES:
        np.testing.assert_array_equal(got[mode][1], got["fibers"][1], err_msg=mode)
    np.testing.assert_array_equal(got["auto"][1], want.reshape(350, 4))


@pytest.mark.parametrize("how", ["reference", "pointer", "macro", "member"])
def test_a_value_changed_by_a_call_a_pointer_or_a_macro_lives_on(monkeypatch, capfd, rng, how):
    """A value that lives across barriers is stored back after a region only
    where the region may change it; a change through a helper's reference, a
    pointer, a macro that names it (the region's text does not) or a member
    must count."""
    change = {
        "reference": "bump(c, 3u);",
        "pointer": "thread uint* p = &c; *p += 3u;",
        "macro": "BUMP_C;",
        "member": "v.y += 3u;",
    }[how]
    header = {"reference": "inline void bump(thread uint& v, uint by) { v += by; }\n",
              "macro": "#define BUMP_C c += 3u\n"}.get(how, "")
    body = f"""
        uint i = thread_position_in_grid.x;
        uint c = uint(x[i] * 8.0f) + 1u;
        uint2 v = uint2(c, c);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        {change if how != "member" else "v.y += 3u;"}
        {"c = v.y;" if how == "member" else ""}
        threadgroup_barrier(mem_flags::mem_threadgroup);
        uint seen = c;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[i] = seen * 2u + (c & 1u);
    """
    x = rng.uniform(0, 4, 64).astype(np.float32)
    k = mx.fast.metal_kernel(name=f"kept_{how}", input_names=["x"], output_names=["out"], source=body,
                             header=header)

    def run():
        call = lambda verbose: k(inputs=[mx.array(x)], grid=(64, 1, 1), threadgroup=(32, 1, 1),  # noqa: E731
                                 output_shapes=[(64,)], output_dtypes=[mx.uint32], verbose=verbose)[0]
        text = translation(capfd, lambda: mx.eval(call(True)))
        return runner(text), np.array(call(False))

    got = run_modes(monkeypatch, run)
    # A macro that names a value living across barriers keeps the kernel off
    # regions (the macro's use is not in the region's text).
    assert got["auto"][0] == ("coroutines" if how == "macro" else "regions")
    c = (x * 8.0).astype(np.uint32) + 1 + 3
    np.testing.assert_array_equal(got["auto"][1], c * 2 + (c & 1))
    for mode in MODES:
        np.testing.assert_array_equal(got[mode][1], got["fibers"][1], err_msg=mode)


# SIMD-group calls inside loops: in a loop every thread runs the same trips
# (BitLinear's `for (j = 0; j < 4; j++) sum[j] = simd_sum(sum[j]);`) and in
# one whose trips differ (each trip's call covers the lanes still looping, as
# Metal's active threads), with a name declared again inside a statement of
# one region (`j`, a C++ local there).
SIMD_LOOP_BODY = """
    uint gid = thread_position_in_grid.x;
    uint lane = thread_index_in_simdgroup;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int j = 0; j < int(lane % 5); ++j) acc[j & 3] += x[gid] * float(j + 1);
    for (int j = 0; j < 4; j++) acc[j] = simd_sum(acc[j]);
    float tail = 0.0f;
    for (uint t = 0; t < lane % 3; ++t) tail += simd_max(x[gid] + float(t));
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int j = 0; j < 4; j++) out[gid * 5 + j] = acc[j];
    out[gid * 5 + 4] = tail;
"""


def simd_loop_reference(x, n, tg):
    out = np.full((n, 5), np.nan)
    lanes = (np.arange(n) % tg) % 32
    for start in range(0, n, tg):
        for w in range(start, min(start + tg, n), 32):
            idx = np.arange(w, min(w + 32, start + tg, n))
            acc = np.zeros((len(idx), 4))
            for r, g in enumerate(idx):
                for j in range(lanes[g] % 5):
                    acc[r, j & 3] += x[g] * (j + 1)
            out[idx, :4] = acc.sum(axis=0)
            for r, g in enumerate(idx):
                out[g, 4] = sum(max(x[h] + t for h in idx if lanes[h] % 3 > t) for t in range(lanes[g] % 3))
    return out


def test_simd_group_calls_in_loops_are_split_into_regions(monkeypatch, capfd, rng):
    n, tg = 200, 78  # SIMD groups of 32, 32 and 14 lanes
    x = rng.standard_normal(n).astype(np.float32)
    k = mx.fast.metal_kernel(name="simd_in_loops", input_names=["x"], output_names=["out"], source=SIMD_LOOP_BODY)

    def run():
        call = lambda verbose: k(inputs=[mx.array(x)], grid=(n, 1, 1), threadgroup=(tg, 1, 1),  # noqa: E731
                                 output_shapes=[(n * 5,)], output_dtypes=[mx.float32], init_value=np.nan,
                                 verbose=verbose)[0]
        text = translation(capfd, lambda: mx.eval(call(True)))
        return runner(text), np.array(call(False)).reshape(n, 5)

    got = run_modes(monkeypatch, run)
    assert [got[m][0] for m in MODES] == ["regions", "coroutines", "fibers"]
    for mode in MODES:
        np.testing.assert_array_equal(got[mode][1], got["fibers"][1], err_msg=mode)
    np.testing.assert_allclose(got["auto"][1], simd_loop_reference(x.astype(np.float64), n, tg), rtol=1e-5,
                               atol=1e-5)


def test_a_body_that_moves_its_parameters_gives_each_thread_its_copy(monkeypatch, capfd, rng):
    """mlx-lm's KL/JS losses and gated delta: `logits += row * V;` at the top
    of a body with barriers. Split into regions the group runs the body once,
    so each thread moves a copy of its own, kept in the group's frame (here
    the rows differ within a group: threads of one group read two rows)."""
    rows, V = 3, 64
    x = rng.standard_normal((rows, V)).astype(np.float32)
    body = """
        uint row = threadgroup_position_in_grid.y;
        uint lid = thread_position_in_threadgroup.x;
        threadgroup float part[64];
        logits += row * V;
        out += row;
        if (lid >= V / 2) logits += V / 2;  // the second half of the row: a pointer of its own
        part[lid] = logits[lid % (V / 2)];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[0] = 0.0f;  // every thread writes its row's out[0] (the same value)...
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (lid == 0) {
            float s = 0.0f;
            for (int i = 0; i < V; ++i) s += part[i];
            out[0] = s;  // ...and one thread its sum
        }
    """
    k = mx.fast.metal_kernel(name="moves_params", input_names=["logits"], output_names=["out"], source=body)

    def run():
        call = lambda verbose: k(inputs=[mx.array(x)], template=[("V", V)], grid=(V, rows, 1),  # noqa: E731
                                 threadgroup=(V, 1, 1), output_shapes=[(rows,)], output_dtypes=[mx.float32],
                                 init_value=np.nan, verbose=verbose)[0]
        text = translation(capfd, lambda: mx.eval(call(True)))
        return text, np.array(call(False))

    got = run_modes(monkeypatch, run)
    assert runner(got["auto"][0]) == "regions"
    assert "alloy_fv.logits[alloy_t] = logits;" in got["auto"][0]
    for mode in MODES:
        np.testing.assert_allclose(got[mode][1], x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-4,
                                   err_msg=mode)


def test_loop_pragmas_between_a_blocks_statements_are_split_too(monkeypatch, capfd, rng):
    """mlx-vlm's verifiers put `#pragma clang loop unroll_count(2)` before
    loops inside loop bodies: a statement of its own there, before a plain
    loop and before one with SIMD-group calls."""
    body = """
        uint gid = thread_position_in_grid.x;
        float acc = x[gid];
        for (int r = 0; r < 3; ++r) {
        #pragma clang loop unroll_count(2)
          for (int j = 0; j < 4; ++j) acc += float(j);
        #pragma clang loop unroll(full)
          for (int j = 0; j < 2; ++j) acc = simd_sum(acc) * 0.01f;
        }
        out[gid] = acc;
    """
    n = 96
    x = rng.standard_normal(n).astype(np.float32)
    k = mx.fast.metal_kernel(name="pragma_in_loops", input_names=["x"], output_names=["out"], source=body)

    def run():
        call = lambda verbose: k(inputs=[mx.array(x)], grid=(n, 1, 1), threadgroup=(n, 1, 1),  # noqa: E731
                                 output_shapes=[(n,)], output_dtypes=[mx.float32], init_value=np.nan,
                                 verbose=verbose)[0]
        text = translation(capfd, lambda: mx.eval(call(True)))
        return runner(text), np.array(call(False))

    got = run_modes(monkeypatch, run)
    assert [got[m][0] for m in MODES] == ["regions", "coroutines", "fibers"]
    acc = x.astype(np.float64).reshape(3, 32)
    for _ in range(3):
        acc = acc + 6
        for _ in range(2):
            acc = np.repeat(acc.sum(axis=1, keepdims=True), 32, axis=1) * 0.01
    for mode in MODES:
        np.testing.assert_allclose(got[mode][1], acc.reshape(-1), rtol=1e-5, atol=1e-6, err_msg=mode)


@pytest.mark.parametrize("wide", [True, False])
def test_a_branch_every_thread_takes_the_same_way_is_split(monkeypatch, capfd, rng, wide):
    """mlx-lm's post_expert_norm_combine: `if (TG > 32) { ... barrier ...
    simd_sum ... }` on a template constant: a plain `if` of the group around
    each branch's regions, either branch, with an `else` of one statement."""
    body = """
        uint lid = thread_position_in_threadgroup.x;
        uint lane = thread_index_in_simdgroup;
        uint sg = simdgroup_index_in_threadgroup;
        threadgroup float part[8];
        float v = simd_sum(x[thread_position_in_grid.x]);
        if (WIDE) {
            if (lane == 0) part[sg] = v;
            threadgroup_barrier(mem_flags::mem_threadgroup);
            float p = lane < threads_per_threadgroup.x / 32 ? part[lane] : 0.0f;
            v = simd_sum(p);
        } else v = -v;
        out[thread_position_in_grid.x] = v + float(lid) * 0.0f;
    """
    n, tg = 256, 128
    x = rng.standard_normal(n).astype(np.float32)
    k = mx.fast.metal_kernel(name="uniform_branch", input_names=["x"], output_names=["out"], source=body)

    def run():
        call = lambda verbose: k(inputs=[mx.array(x)], template=[("WIDE", wide)], grid=(n, 1, 1),  # noqa: E731
                                 threadgroup=(tg, 1, 1), output_shapes=[(n,)], output_dtypes=[mx.float32],
                                 init_value=np.nan, verbose=verbose)[0]
        text = translation(capfd, lambda: mx.eval(call(True)))
        return runner(text), np.array(call(False))

    got = run_modes(monkeypatch, run)
    assert [got[m][0] for m in MODES] == ["regions", "coroutines", "fibers"]
    x64 = x.astype(np.float64)
    if wide:
        want = np.repeat(x64.reshape(n // tg, tg).sum(axis=1), tg)
    else:
        want = -np.repeat(x64.reshape(n // 32, 32).sum(axis=1), 32)
    for mode in MODES:
        np.testing.assert_allclose(got[mode][1], want, rtol=1e-5, atol=1e-5, err_msg=mode)


@pytest.mark.parametrize("blocks", [1, 2])
def test_a_simd_call_under_a_choice_every_thread_makes_alike_is_split(monkeypatch, capfd, rng, blocks):
    """mflux's Qwen-Image prologue: `(blocks == 1 ? sq : simd_sum(sq))` with a
    constant `blocks`: every thread takes the same arm, so regions take it
    (each thread deposits, all read the same choice). A choice each thread
    makes on its own (`lane < 16 ? ... : simd_sum(...)`) keeps coroutines."""
    body = """
        constexpr uint blocks = (D + 127) / 128;
        uint i = thread_position_in_grid.x;
        uint lane = thread_index_in_simdgroup;
        float sq = x[i] * x[i];
        float total = (blocks == 1 ? sq : simd_sum(sq));
        out[i] = total + CHOICE;
    """
    n = 128
    x = rng.standard_normal(n).astype(np.float32)

    def kernel(choice):
        return mx.fast.metal_kernel(name="uniform_choice", input_names=["x"], output_names=["out"],
                                    source=body.replace("CHOICE", choice))

    def run(k):
        def go():
            call = lambda verbose: k(inputs=[mx.array(x)], template=[("D", 128 * blocks)], grid=(n, 1, 1),  # noqa: E731
                                     threadgroup=(64, 1, 1), output_shapes=[(n,)], output_dtypes=[mx.float32],
                                     init_value=np.nan, verbose=verbose)[0]
            text = translation(capfd, lambda: mx.eval(call(True)))
            return runner(text), np.array(call(False)), text
        return run_modes(monkeypatch, go)

    sq = x.astype(np.float64) ** 2
    want = sq if blocks == 1 else np.repeat(sq.reshape(-1, 32).sum(axis=1), 32)
    got = run(kernel("0.0f"))
    assert [got[m][0] for m in MODES] == ["regions", "coroutines", "fibers"]
    for mode in MODES:
        np.testing.assert_allclose(got[mode][1], want, rtol=1e-5, atol=1e-5, err_msg=mode)

    per_thread = run(kernel("(lane < 16 ? 0.0f : simd_sum(sq) * 0.0f)"))
    assert per_thread["auto"][0] == "coroutines"
    assert "a SIMD-group call in a statement that evaluates parts conditionally (source line 7)" in per_thread["auto"][2]
    for mode in MODES:
        np.testing.assert_allclose(per_thread[mode][1], want, rtol=1e-5, atol=1e-5, err_msg=mode)


def test_values_declared_auto_live_across_barriers_in_regions(monkeypatch, capfd, rng):
    """mlx-lm's gated delta, RWKV-7 and SSM kernels and mlx-vlm's TurboQuant
    declare their indices and row pointers `auto` and use them after
    barriers and SIMD-group calls; gated delta moves such a pointer every
    step. The frame keeps each thread's value in an array whose type a
    never-called lambda deduces from the same declarations (with the
    non-`auto` ones they read, here `D`). A `const device` pointer keeps its
    pointee's `const` there."""
    rows, T = 5, 6
    width = 32 + T
    x = rng.standard_normal((rows, width)).astype(np.float32)
    w = rng.standard_normal(width).astype(np.float32)
    body = """
        auto n = threadgroup_position_in_grid.x;
        const auto lane = thread_position_in_threadgroup.x;
        uint D = x_shape[1];
        auto x_ = x + n * D;
        const device float* w_ = w;
        auto y_ = out + n * T;
        for (int t = 0; t < T; ++t) {
            float v = x_[lane] * w_[lane];
            float s = simd_sum(v);
            threadgroup_barrier(mem_flags::mem_none);
            if (lane == 0) y_[t] = s + float(n);
            x_ += 1;
            w_ += 1;
        }
    """
    k = mx.fast.metal_kernel(name="auto_across_regions", input_names=["x", "w"], output_names=["out"], source=body)
    got = translations_and_results(monkeypatch, capfd, k, inputs=[mx.array(x), mx.array(w)], template=[("T", T)],
                                   grid=(32 * rows, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(rows, T)],
                                   output_dtypes=[mx.float32], init_value=np.nan)
    assert [runner(got[m][0]) for m in MODES] == ["regions", "coroutines", "fibers"]
    assert "decltype(alloy_types_t::m_x_)" in got["auto"][0]
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    want = np.array([[x64[n, t:t + 32] @ w64[t:t + 32] + n for t in range(T)] for n in range(rows)])
    for mode in MODES:
        np.testing.assert_allclose(got[mode][1], want, rtol=1e-5, atol=1e-5, err_msg=mode)
    np.testing.assert_array_equal(got["auto"][1], got["fibers"][1])


def test_an_auto_value_whose_type_cannot_be_repeated_stays_on_coroutines(monkeypatch, capfd, rng):
    """`auto s = simd_sum(v);` living across a barrier: the lambda that
    deduces the frame's types cannot repeat a SIMD-group call, so the kernel
    runs on coroutines, says why, and gives the same numbers."""
    x = rng.standard_normal(64).astype(np.float32)
    body = """
        uint i = thread_position_in_grid.x;
        auto s = simd_sum(x[i]);
        threadgroup_barrier(mem_flags::mem_none);
        out[i] = s;
    """
    k = mx.fast.metal_kernel(name="auto_simd_init", input_names=["x"], output_names=["out"], source=body)

    got = translations_and_results(monkeypatch, capfd, k, inputs=[mx.array(x)], grid=(64, 1, 1),
                                   threadgroup=(64, 1, 1), output_shapes=[(64,)], output_dtypes=[mx.float32])
    assert runner(got["auto"][0]) == "coroutines"
    assert "'s' is declared `auto`, lives across a barrier and is initialised by a SIMD-group call" in got["auto"][0]
    want = np.repeat(x.astype(np.float64).reshape(2, 32).sum(axis=1), 32)
    for mode in MODES:
        np.testing.assert_allclose(got[mode][1], want, rtol=1e-5, atol=1e-5, err_msg=mode)


def test_simd_calls_under_a_branch_threads_take_differently_are_split(monkeypatch, capfd, rng):
    """mlx-vlm's verifier argmax, QSA and indexed sparse attention, and
    gated delta with a mask call SIMD-group functions under an `if` whose
    condition differs between threads. Each branch's regions run for the
    threads that take it (the others wait), so a call there covers those
    lanes, as Metal's active threads; then the `else` branch's; then all go
    on. Here both branches, a nested braceless `if`, a `return` in one
    branch and a call after the `if` over the lanes still running, in
    groups of 40 (SIMD groups of 32 and 8). A condition inside a call's
    arguments is each thread's own (mlx-lm's norm_add_norm)."""
    n, tg = 80, 40
    x = (rng.standard_normal(n) * 2).astype(np.float32)
    body = """
        uint i = thread_position_in_grid.x;
        float v = x[i];
        float a = 0.0f;
        float b = 0.0f;
        if (v > 0.0f) {
            a = simd_sum(v);
            if (v > 1.0f) b = simd_max(v);
        } else {
            a = simd_min(v);
            if (i % 3 == 0) return;
        }
        float c = simd_sum(a + b);
        float d = simd_max(i % 2 == 0 && v > 0.0f ? v : -9.0f);
        out[i * 4 + 0] = a;
        out[i * 4 + 1] = b;
        out[i * 4 + 2] = c;
        out[i * 4 + 3] = d;
    """
    k = mx.fast.metal_kernel(name="simd_under_branch", input_names=["x"], output_names=["out"], source=body)

    got = translations_and_results(monkeypatch, capfd, k, inputs=[mx.array(x)], grid=(n, 1, 1),
                                   threadgroup=(tg, 1, 1), output_shapes=[(n, 4)], output_dtypes=[mx.float32],
                                   init_value=np.nan)
    assert [runner(got[m][0]) for m in MODES] == ["regions", "coroutines", "fibers"]
    assert "region_branch(" in got["auto"][0] and "region_else(" in got["auto"][0]
    # A float64 model of the active lanes of each SIMD group.
    x64 = x.astype(np.float64)
    want = np.full((n, 4), np.nan)
    for g in range(n // tg):
        for first in (0, 32):
            lanes = np.arange(g * tg + first, g * tg + min(first + 32, tg))
            v = x64[lanes]
            pos, big = v > 0, v > 1
            a = np.where(pos, v[pos].sum() if pos.any() else 0, v[~pos].min() if (~pos).any() else 0)
            b = np.where(big, v[big].max() if big.any() else 0, 0.0)
            stays = pos | (lanes % 3 != 0)
            c = (a + b)[stays].sum()
            d = np.where((lanes % 2 == 0) & pos, v, -9.0)[stays].max()
            want[lanes[stays]] = np.stack([a, b, np.full(len(lanes), c), np.full(len(lanes), d)], axis=1)[stays]
    for mode in MODES:
        np.testing.assert_allclose(got[mode][1], want, rtol=1e-5, atol=1e-5, err_msg=mode)
    np.testing.assert_array_equal(got["auto"][1], got["fibers"][1])
    np.testing.assert_array_equal(got["coroutines"][1], got["fibers"][1])


def test_several_declarators_in_one_statement_live_across_regions(monkeypatch, capfd, rng):
    """mlx-lm's rms_norm_sigmoid_gate (`int xd = x_strides[3], gd = ...;`)
    and mlx-vlm's Klein blocks (`float qv[E], kv[E], vv[E];`) declare
    several values in one statement that live across SIMD-group calls.
    Each goes to the frame; the statement becomes its initialisers'
    assignments. (Such a statement once left its later names undeclared in
    the next region: a compile error.) Their type here is an alias the body
    declares after its first statement (mlx-vlm's sparse attention:
    `typedef float U;`), which goes before the frame."""
    n = 64
    x = rng.standard_normal(n).astype(np.float32)
    body = """
        uint i = thread_position_in_grid.x;
        typedef float U;
        U lo, hi = x[i] * 2.0f, mid[2], last;
        using I = int;
        I n0 = x_shape[0], three = 3;
        mid[0] = x[i];
        mid[1] = -x[i];
        lo = simd_min(x[i]);
        last = simd_max(x[i]);
        threadgroup_barrier(mem_flags::mem_none);
        out[i * 6 + 0] = lo;
        out[i * 6 + 1] = hi;
        out[i * 6 + 2] = mid[0];
        out[i * 6 + 3] = mid[1];
        out[i * 6 + 4] = last;
        out[i * 6 + 5] = float(n0 * three);
    """
    k = mx.fast.metal_kernel(name="several_declarators", input_names=["x"], output_names=["out"], source=body)

    got = translations_and_results(monkeypatch, capfd, k, inputs=[mx.array(x)], grid=(n, 1, 1),
                                   threadgroup=(n, 1, 1), output_shapes=[(n, 6)], output_dtypes=[mx.float32],
                                   init_value=np.nan)
    assert [runner(got[m][0]) for m in MODES] == ["regions", "coroutines", "fibers"]
    groups = x.reshape(2, 32)
    want = np.stack([np.repeat(groups.min(axis=1), 32), 2.0 * x, x, -x, np.repeat(groups.max(axis=1), 32),
                     np.full(n, 3.0 * n)], axis=1)
    for mode in MODES:
        np.testing.assert_array_equal(got[mode][1], want.astype(np.float32), err_msg=mode)


def test_a_name_declared_again_in_another_block_has_its_own_array(monkeypatch, capfd, rng):
    """mlx-lm's KL and JS losses declare `offset` in each of two blocks and
    mlx-vlm's TurboQuant decode a `factor` in a loop and again after it,
    each living across SIMD-group calls. Each declaration keeps its own
    per-thread array; a use refers to the declaration in scope there."""
    n = 64
    x = rng.standard_normal(n).astype(np.float32)
    body = """
        uint i = thread_position_in_grid.x;
        float total = 0.0f;
        {
            float part = x[i];
            part = simd_sum(part);
            total += part;
        }
        {
            float part = x[i] * 2.0f;
            float m = simd_max(part);
            part = part + m;
            total += part;
        }
        out[i] = total;
    """
    k = mx.fast.metal_kernel(name="declared_again", input_names=["x"], output_names=["out"], source=body)

    got = translations_and_results(monkeypatch, capfd, k, inputs=[mx.array(x)], grid=(n, 1, 1),
                                   threadgroup=(n, 1, 1), output_shapes=[(n,)], output_dtypes=[mx.float32],
                                   init_value=np.nan)
    assert [runner(got[m][0]) for m in MODES] == ["regions", "coroutines", "fibers"]
    assert "alloy_1_part[" in got["auto"][0]
    x64 = x.astype(np.float64)
    groups = x64.reshape(2, 32)
    want = np.repeat(groups.sum(axis=1), 32) + 2 * x64 + np.repeat(2 * groups.max(axis=1), 32)
    for mode in MODES:
        np.testing.assert_allclose(got[mode][1], want, rtol=1e-5, atol=1e-5, err_msg=mode)
    np.testing.assert_array_equal(got["auto"][1], got["fibers"][1])


@pytest.mark.parametrize("defined", [True, False])
def test_preprocessor_conditions_stay_inside_one_region(monkeypatch, capfd, rng, defined):
    """mlx-vlm's DeepSeek-V4 hyper connection ends its body with `#if (D %
    4) != 0` ... `#endif` after SIMD-group calls. A condition's lines stay in
    the region opened before its `#if`, whichever way it goes, and the last
    region closes after the body's last line; a barrier under a condition
    keeps the kernel on coroutines."""
    n = 64
    x = rng.standard_normal(n).astype(np.float32)
    header = "#define TWICE 1\n" if defined else ""
    body = """
        uint i = thread_position_in_grid.x;
        float v = simd_sum(x[i]);
        threadgroup_barrier(mem_flags::mem_none);
    #ifdef TWICE
        v = v * 2.0f;
    #else
        v = v + 1.0f;
    #endif
        out[i] = v;
    #if TWICE
        out[i] = v * 3.0f;
    #endif
    """
    k = mx.fast.metal_kernel(name=f"pp_conditions_{defined}", input_names=["x"], output_names=["out"], source=body,
                             header=header)
    got = translations_and_results(monkeypatch, capfd, k, inputs=[mx.array(x)], grid=(n, 1, 1),
                                   threadgroup=(n, 1, 1), output_shapes=[(n,)], output_dtypes=[mx.float32],
                                   init_value=np.nan)
    assert [runner(got[m][0]) for m in MODES] == ["regions", "coroutines", "fibers"]
    sums = np.repeat(x.astype(np.float64).reshape(2, 32).sum(axis=1), 32)
    want = sums * 6 if defined else sums + 1
    for mode in MODES:
        np.testing.assert_allclose(got[mode][1], want, rtol=1e-5, atol=1e-5, err_msg=mode)
    barrier_under_condition = mx.fast.metal_kernel(
        name=f"pp_barrier_{defined}", input_names=["x"], output_names=["out"], header=header,
        source="uint i = thread_position_in_grid.x;\nfloat v = x[i];\n#ifdef TWICE\n"
               "threadgroup_barrier(mem_flags::mem_none);\n#endif\nout[i] = v;")
    monkeypatch.setenv("ALLOY_CPU_SYNC", "auto")
    text = translation(capfd, lambda: mx.eval(barrier_under_condition(
        inputs=[mx.array(x)], grid=(n, 1, 1), threadgroup=(n, 1, 1), output_shapes=[(n,)],
        output_dtypes=[mx.float32], verbose=True)[0]))
    assert runner(text) == "coroutines" and "under a preprocessor condition (source line 4)" in text
    # A declaration under a condition at the top of the body, before the
    # frame: the frame goes before the `#if`, and such a declaration keeps
    # the kernel on coroutines (where a false condition leaves the name
    # undeclared, as in Metal), while a plain statement there splits.
    for first, mode in (("uint i = thread_position_in_grid.x;", "coroutines"),
                        ("out[thread_position_in_grid.x] = -1.0f;", "regions")):
        top = mx.fast.metal_kernel(
            name=f"pp_top_{defined}_{mode}", input_names=["x"], output_names=["out"], header=header,
            source="#ifdef TWICE\n" + first + "\n#else\n" + first + "\n#endif\n"
                   + ("uint i = thread_position_in_grid.x;\n" if mode == "regions" else "") +
                   "float v = simd_sum(x[i]);\nthreadgroup_barrier(mem_flags::mem_none);\nout[i] = v;")
        got = translations_and_results(monkeypatch, capfd, top, inputs=[mx.array(x)], grid=(n, 1, 1),
                                       threadgroup=(n, 1, 1), output_shapes=[(n,)], output_dtypes=[mx.float32],
                                       init_value=np.nan)
        assert runner(got["auto"][0]) == mode
        for m in MODES:
            np.testing.assert_allclose(got[m][1], sums, rtol=1e-5, atol=1e-5, err_msg=m)
