"""A helper of the kernel's header that synchronises (a barrier or a
SIMD-group call) is written out at its calls in the body for the CPU
(msl/cpu_inline_helpers.h), so that regions take the kernel rather than
fibers. The numbers are the float64 reference's on every thread model; the
translation says which helpers were written out, or why none was."""
import numpy as np
import pytest

import alloy.core as mx
from test_cpu_sync_threads import runner, translations_and_results

pytestmark = pytest.mark.usefixtures("on_cpu")


@pytest.fixture
def on_cpu():
    mx.set_default_device(mx.cpu)


# A group-wide sum through threadgroup memory: each SIMD group's sum, then
# the first lanes sum those (GROUP threads, at most 32 SIMD groups).
GROUP_SUM = """
template <int GROUP>
inline float group_sum(float value, threadgroup float* partial, uint lane, uint simd) {
    float mine = simd_sum(value);
    if (lane == 0) {
        partial[simd] = mine;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float total = simd_sum(lane < (GROUP + 31) / 32 ? partial[lane] : 0.0f);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return total;
}

template <typename U>
void store_with_simd_max(U v, device U* dst, uint at) {
    dst[2 * at] = v;
    dst[2 * at + 1] = simd_max(v);
}
"""

# Each group's values centred (`rounds` times: a loop) and scaled to a norm
# of 2, beside each SIMD group's largest: the helpers called in a loop's
# body, a declaration, and a statement of their own.
BODY = """
threadgroup float partial[32];
uint i = thread_position_in_grid.x;
uint lane = thread_index_in_simdgroup;
uint simd = simdgroup_index_in_threadgroup;
float v = x[i];
for (uint r = 0; r < rounds; ++r) {
    float mean = group_sum<GROUP>(v, partial, lane, simd) / GROUP;
    v = v - mean;
}
float norm_sq = group_sum<GROUP>(v * v, partial, lane, simd);
v = v * metal::precise::rsqrt(norm_sq);
store_with_simd_max<float>(2.0f * v, out, i);
"""


def reference(x, group):
    """Each value and its SIMD group's largest, interleaved."""
    v = x.astype(np.float64).reshape(-1, group)
    v = v - v.mean(axis=1, keepdims=True)
    v = (2 * v / np.sqrt((v * v).sum(axis=1, keepdims=True))).reshape(-1)
    return np.stack([v, np.repeat(v.reshape(-1, 32).max(axis=1), 32)], axis=1).reshape(-1)


@pytest.mark.parametrize("group", [96, 32, 1024])
@pytest.mark.parametrize("bounds_check", ["0", "1"])
def test_helpers_are_written_out_and_the_kernel_runs_as_regions(monkeypatch, capfd, rng, group, bounds_check):
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", bounds_check)
    n = group * 5
    x = (rng.standard_normal(n) * 3 + 1).astype(np.float32)
    k = mx.fast.metal_kernel(name="group_unit_norm", input_names=["x", "rounds"], output_names=["out"],
                             source=BODY, header=GROUP_SUM)
    got = translations_and_results(monkeypatch, capfd, k, inputs=[mx.array(x), mx.array(np.uint32(2))],
                                   template=[("GROUP", group)], grid=(n, 1, 1), threadgroup=(group, 1, 1),
                                   output_shapes=[(2 * n,)], output_dtypes=[mx.float32], init_value=np.nan)
    assert runner(got["auto"][0]) == "regions"
    assert ("// group_sum is written out at its 2 calls in the body; store_with_simd_max is written out at its "
            "call in the body (a region cannot end inside a call).") in got["auto"][0]
    # No call is left: the names stand only in that line.
    assert got["auto"][0].count("group_sum") == 1 and got["auto"][0].count("store_with_simd_max") == 1
    # The thread models asked for run the kernel as it was written.
    for mode in ("coroutines", "fibers"):
        assert runner(got[mode][0]) == "fibers", mode
        assert "written out" not in got[mode][0]
    want = reference(x, group)
    for mode, (_, out) in got.items():
        np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5, err_msg=mode)
    # (Regions and fibers may round the sums' products differently, each
    # compiled on its own: close, not always bit for bit.)
    np.testing.assert_allclose(got["auto"][1], got["fibers"][1], rtol=1e-5, atol=1e-6)


def test_a_helper_not_written_out_says_why_and_runs_on_fibers(monkeypatch, capfd, rng):
    """A helper called in a braceless branch keeps the kernel as it was; the
    translation names the call."""
    n, group = 64, 32
    x = rng.standard_normal(n).astype(np.float32)
    body = """
        threadgroup float partial[32];
        uint i = thread_position_in_grid.x;
        float v = x[i];
        if (GROUP > 1) v = group_sum<GROUP>(v, partial, thread_index_in_simdgroup, simdgroup_index_in_threadgroup);
        out[i] = v;
    """
    k = mx.fast.metal_kernel(name="helper_in_braceless_branch", input_names=["x"], output_names=["out"],
                             source=body, header=GROUP_SUM)
    got = translations_and_results(monkeypatch, capfd, k, inputs=[mx.array(x)], template=[("GROUP", group)],
                                   grid=(n, 1, 1), threadgroup=(group, 1, 1), output_shapes=[(n,)],
                                   output_dtypes=[mx.float32])
    assert runner(got["auto"][0]) == "fibers"
    assert ("// The header's synchronising helpers are not written out in the body: the call of `group_sum` on "
            "line 5 is in a loop's or a branch's header, or in a braceless branch.") in got["auto"][0]
    np.testing.assert_array_equal(got["auto"][1], got["fibers"][1])
    np.testing.assert_allclose(got["auto"][1], np.repeat(x.astype(np.float64).reshape(2, 32).sum(axis=1), 32),
                               rtol=1e-5, atol=1e-5)


# --- macros of the header that synchronise (msl/cpu_inline_macros.h) ----------

# A group sum into buf[0] as a statement-like macro (`do { } while (0)`): each
# SIMD group's sum, then a halving tree over the partial sums with a barrier a
# step (the idiom of ZMLX's kernels).
GROUP_SUM_MACRO = r"""
#define GROUP_TOTAL(buf, val, tid, N) \
    do { \
        float part_ = simd_sum(val); \
        if ((tid) % 32u == 0u) (buf)[(tid) / 32u] = part_; \
        threadgroup_barrier(mem_flags::mem_threadgroup); \
        for (uint s_ = ((N) / 32u) / 2u; s_ > 0u; s_ >>= 1u) { \
            if ((tid) < s_) (buf)[(tid)] += (buf)[(tid) + s_]; \
            threadgroup_barrier(mem_flags::mem_threadgroup); \
        } \
    } while (0)
#define SCALE_BY(v, k) ((v) * (k))
"""

# Each group's values over the group's root mean square: the macro called
# twice (its arguments over two lines once), then a fault line to show lines
# keep their numbers.
MACRO_BODY = """
threadgroup float buf[GROUP];
uint tid = thread_position_in_threadgroup.x;
uint i = thread_position_in_grid.x;
float v = x[i];
GROUP_TOTAL(buf, v * v, tid,
            GROUP);
float rms = metal::precise::sqrt(buf[0] / GROUP);
threadgroup_barrier(mem_flags::mem_threadgroup);
GROUP_TOTAL(buf, 1.0f, tid, GROUP);
out[i] = SCALE_BY(v / rms, buf[0] / GROUP);
"""


@pytest.mark.parametrize("group", [64, 256, 1024])
@pytest.mark.parametrize("bounds_check", ["0", "1"])
def test_macros_are_expanded_and_the_kernel_runs_as_regions(monkeypatch, capfd, rng, group, bounds_check):
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", bounds_check)
    n = group * 3
    x = (rng.standard_normal(n) * 2 + 0.5).astype(np.float32)
    k = mx.fast.metal_kernel(name="group_rms_macro", input_names=["x"], output_names=["out"],
                             source=MACRO_BODY, header=GROUP_SUM_MACRO)
    got = translations_and_results(monkeypatch, capfd, k, inputs=[mx.array(x)], template=[("GROUP", group)],
                                   grid=(n, 1, 1), threadgroup=(group, 1, 1), output_shapes=[(n,)],
                                   output_dtypes=[mx.float32], init_value=np.nan)
    assert runner(got["auto"][0]) == "regions"
    assert ("// GROUP_TOTAL, a macro, is expanded at its 2 calls in the body (a region cannot end inside a "
            "macro's call).") in got["auto"][0]
    for mode in ("coroutines", "fibers"):
        assert runner(got[mode][0]) == "fibers", mode
    v = x.astype(np.float64).reshape(-1, group)
    want = (v / np.sqrt((v * v).mean(axis=1, keepdims=True))).reshape(-1)
    for mode, (_, out) in got.items():
        np.testing.assert_allclose(out, want, rtol=2e-5, atol=2e-5, err_msg=mode)


def test_a_fault_after_an_expanded_macro_names_its_own_line(monkeypatch, rng):
    """The expansion stays on the call's line (its arguments' lines kept as
    blank ones): a bounds fault two lines later names the user's line."""
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "1")
    body = MACRO_BODY.replace("out[i] = SCALE_BY(v / rms, buf[0] / GROUP);",
                              "out[i + GROUP] = SCALE_BY(v / rms, buf[0] / GROUP);")
    k = mx.fast.metal_kernel(name="group_rms_macro_fault", input_names=["x"], output_names=["out"],
                             source=body, header=GROUP_SUM_MACRO)
    x = mx.array(rng.standard_normal(64).astype(np.float32))
    with pytest.raises(RuntimeError, match=r"line 11\b"):
        mx.eval(k(inputs=[x], template=[("GROUP", 64)], grid=(64, 1, 1), threadgroup=(64, 1, 1),
                  output_shapes=[(64,)], output_dtypes=[mx.float32])[0])


def test_a_macro_not_expanded_says_why_and_runs_on_fibers(monkeypatch, capfd, rng):
    """A call in an expression is not a statement the expansion can take."""
    header = "#define LANE_TOTAL(v) simd_sum(v)\n"
    body = "uint i = thread_position_in_grid.x;\nout[i] = 2.0f * LANE_TOTAL(x[i]);\n"
    k = mx.fast.metal_kernel(name="macro_in_expression", input_names=["x"], output_names=["out"],
                             source=body, header=header)
    x = rng.standard_normal(64).astype(np.float32)
    got = translations_and_results(monkeypatch, capfd, k, inputs=[mx.array(x)], grid=(64, 1, 1),
                                   threadgroup=(64, 1, 1), output_shapes=[(64,)], output_dtypes=[mx.float32])
    assert runner(got["auto"][0]) == "fibers"
    assert ("// The header's synchronising macros are not written out in the body: the call of `LANE_TOTAL` on "
            "line 2 does not begin a statement (a braceless branch, or in an expression).") in got["auto"][0]
    np.testing.assert_allclose(got["auto"][1], 2 * np.repeat(x.astype(np.float64).reshape(2, 32).sum(1), 32),
                               rtol=1e-5, atol=1e-5)
