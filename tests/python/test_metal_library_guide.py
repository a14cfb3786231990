"""mx.fast.metal_library on the kernels of a Metal guide page
(examples/guide/*.metal, copied verbatim; quirks in examples/guide/README.md),
on the device ALLOY_TEST_DEVICE names, against float64 numpy references of
what each kernel AS WRITTEN computes (examples/guide/guide_common.py).

Outputs that a kernel should write everywhere start as NaN (in-out arrays),
so unwritten elements show. Launch shapes avoid the kernels' data races
(softmax_kernel, simd_reduce_sum) and the shapes their missing bounds checks
cannot handle; the README says which.
"""
import functools
import math
import pathlib
import re
import sys
import warnings

import numpy as np
import pytest

import alloy.core as mx

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "guide"
sys.path.insert(0, str(GUIDE))
import guide_common as g  # noqa: E402

NAN = float("nan")
F16 = (2e-3, 2e-3)


def source(name):
    return (GUIDE / f"{name}.metal").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def lib(name):
    return mx.fast.metal_library(source(name), header=g.PRELUDE)


def nan_array(shape, dtype):
    return mx.array(np.full(shape, np.nan, dtype=np.float16 if dtype == mx.float16 else np.float32))


def f64(a):
    return np.array(a).astype(np.float64)


def line_of(name, needle):
    """1-based line of the first occurrence of `needle` in examples/guide/<name>.metal."""
    for i, line in enumerate(source(name).splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {name}.metal")


def names_line(message, line):
    return re.search(rf"(?<!\d){line}(?!\d)", message) is not None


def assert_within(got, ref, bound):
    """|got - ref| <= bound elementwise (bound: an error budget, e.g. from sum |terms|)."""
    got = f64(got)
    assert got.shape == ref.shape
    assert not np.isnan(got).any(), f"unwritten (NaN) elements at {np.argwhere(np.isnan(got))[:8].ravel()}"
    err = np.abs(got - ref)
    bad = err > bound
    assert not bad.any(), (f"{bad.sum()} of {bad.size} outside the bound; worst at {np.argmax(err - bound)}: "
                           f"got {got.ravel()[np.argmax(err - bound)]}, ref {ref.ravel()[np.argmax(err - bound)]}")


# ---- the library: entry points and outputs ------------------------------------

LIBRARIES = {
    "memory_spaces_demo": {"memory_spaces_demo": ["global_output"]},
    "simd_reduce_sum": {"simd_reduce_sum": ["output"]},
    "vector_add": {"vector_add": ["out"], "vector_add_half": ["out"]},
    "softmax_kernel": {"softmax_kernel": ["output"]},
    "binary_op": {"binary_add_f32": ["out"], "binary_add_f16": ["out"], "binary_mul_f32": ["out"]},
    "add_f32_vec4": {"add_f32_vec4": ["out"]},
    "add_f16_vec8_fixed": {"add_f16_vec8": ["out"]},
    "matmul_tiled": {"matmul_tiled": ["C"]},
    "matmul_simdgroup_fixed": {"matmul_simdgroup": ["C"]},
    "flash_attention": {"flash_attention": ["Out"]},
    "scaled_elu": {"scaled_elu_f32": ["out"], "scaled_elu_f16": ["out"]},
    "access_patterns": {"column_access_bad": [], "row_access_good": [], "column_via_transpose": ["out"]},
    "optimised_dot_fixed": {"optimised_dot": ["c"]},
    "silu_gate_fused_fixed": {"silu_gate_fused": ["out"]},
}


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_entry_points_and_outputs(name):
    library = lib(name)
    expected = LIBRARIES[name]
    assert sorted(library.kernel_names) == sorted(expected)
    for kernel, outputs in expected.items():
        assert list(library.kernel(kernel).output_names) == outputs


def test_binary_op_uninstantiated_ops_are_no_entry_points():
    # Sub, Divide, Maximum are defined but never instantiated; the template itself is no entry point.
    for missing in ("binary_op", "binary_sub_f32", "Sub"):
        with pytest.raises(ValueError):
            lib("binary_op").kernel(missing)


# ---- memory_spaces_demo ---------------------------------------------------------

@pytest.mark.parametrize("n,tg", [(1, 256), (255, 256), (256, 256), (1000, 256), (4097, 64), (777, 100)])
def test_memory_spaces_demo(rng, n, tg):
    x = rng.standard_normal(n).astype(np.float32)
    scale = float(rng.uniform(0.5, 2.0))
    init = nan_array((n,), mx.float32)
    k = lib("memory_spaces_demo").kernel("memory_spaces_demo")
    (out,) = k(args={"global_input": mx.array(x), "global_output": init, "scale": scale, "shared_tile": tg * 4},
               grid=(n, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")
    np.testing.assert_allclose(f64(out), g.ref_memory_spaces_demo(x, scale), rtol=1e-6, atol=0)
    assert np.isnan(np.array(init)).all()  # the in-out initial array is not modified


# ---- simd_reduce_sum --------------------------------------------------------------

@pytest.mark.parametrize("n", [32, 100, 256, 1000, 1024])
def test_simd_reduce_sum_one_threadgroup(rng, n):
    # One threadgroup: output[sg] is indexed within the threadgroup, so a single
    # threadgroup is the only launch whose result does not depend on scheduling.
    x = rng.standard_normal(n).astype(np.float32)
    n_out = -(-n // 32)
    k = lib("simd_reduce_sum").kernel("simd_reduce_sum")
    (out,) = k(args={"input": mx.array(x), "output": nan_array((n_out,), mx.float32)},
               grid=(n, 1, 1), threadgroup=(n, 1, 1), dispatch="threads")
    ref = g.ref_simd_reduce_sum_one_group(x)
    bound = 1e-5 * np.array([np.abs(x[s:s + 32]).sum() for s in range(0, n, 32)]) + 1e-6
    assert_within(out, ref, bound)


@pytest.mark.parametrize("tg,reps", [(64, 5), (128, 3), (256, 4)])
def test_simd_reduce_sum_threadgroups_overwrite_the_same_slots(rng, tg, reps):
    # Several threadgroups all write output[0 .. tg/32 - 1] (a race). With the
    # same input block in every threadgroup, every writer stores the same sums.
    block = rng.standard_normal(tg).astype(np.float32)
    x = np.tile(block, reps)
    k = lib("simd_reduce_sum").kernel("simd_reduce_sum")
    (out,) = k(args={"input": mx.array(x), "output": nan_array((tg // 32,), mx.float32)},
               grid=(tg * reps, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")
    bound = 1e-5 * np.array([np.abs(block[s:s + 32]).sum() for s in range(0, tg, 32)]) + 1e-6
    assert_within(out, g.ref_simd_reduce_sum_one_group(block), bound)


# ---- vector_add / vector_add_half -------------------------------------------------

@pytest.mark.parametrize("name,dtype", [("vector_add", mx.float32), ("vector_add_half", mx.float16)])
@pytest.mark.parametrize("n,tg", [(1, 256), (31, 256), (256, 256), (1000, 256), (65537, 1024), (333, 32)])
def test_vector_add(rng, name, dtype, n, tg):
    npdt = np.float16 if dtype == mx.float16 else np.float32
    a = rng.standard_normal(n).astype(npdt)
    b = rng.standard_normal(n).astype(npdt)
    k = lib("vector_add").kernel(name)
    (out,) = k(args={"a": mx.array(a), "b": mx.array(b), "out": nan_array((n,), dtype)},
               grid=(n, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")
    assert out.dtype == dtype
    rtol, atol = F16 if dtype == mx.float16 else (1e-6, 1e-7)
    np.testing.assert_allclose(f64(out), a.astype(np.float64) + b, rtol=rtol, atol=atol)


def test_vector_add_buffer_index_keys_and_fresh_output(rng):
    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    k = lib("vector_add").kernel("vector_add")
    (out,) = k(args={0: mx.array(a), 1: mx.array(b), 2: ((n,), mx.float32)},
               grid=(n, 1, 1), threadgroup=(256, 1, 1))
    assert out.shape == (n,) and out.dtype == mx.float32
    np.testing.assert_allclose(f64(out), a.astype(np.float64) + b, rtol=1e-6, atol=1e-7)


# ---- softmax_kernel (MSL) ----------------------------------------------------------

# One SIMD group per threadgroup (8 <= tg <= 32): the only race-free shape (see
# README: with several SIMD groups, lane 0 of SIMD group 0 overwrites shmem[0]
# with its partial sum while other SIMD groups may still be reading the max
# there). dispatch="threads": every threadgroup must keep >= 8 threads, as
# shmem[1..7] are read by the hard-coded 8-group loops.
@pytest.mark.parametrize("n,tg,dispatch", [
    (32, 32, "threads"), (75, 32, "threads"), (1000, 32, "threads"), (1024, 32, "threads"),
    (16, 16, "threads"), (40, 16, "threads"), (333, 16, "threads"), (8, 8, "threads"), (72, 8, "threads"),
    (96, 32, "threadgroups"), (116, 32, "threadgroups"),
    (99, 32, "threadgroups"),  # last block: 3 inputs, -INFINITY in shmem[3..7]: its outputs are -0.0
])
def test_softmax_kernel_one_simdgroup(rng, n, tg, dispatch):
    x = rng.uniform(-0.1, 3.0, n).astype(np.float32)
    k = lib("softmax_kernel").kernel("softmax_kernel")
    grid = (n, 1, 1) if dispatch == "threads" else (-(-n // tg), 1, 1)
    (out,) = k(args={"input": mx.array(x), "output": nan_array((n,), mx.float32), "n": n, "shmem": max(tg, 8) * 4},
               grid=grid, threadgroup=(tg, 1, 1), dispatch=dispatch)
    ref = g.ref_softmax_kernel(x, tg, dispatch)
    np.testing.assert_allclose(f64(out), ref, rtol=1e-5, atol=1e-7)


def test_softmax_kernel_is_not_a_softmax():
    # A deterministic check of the stale-shmem quirk: tg = 32, inputs 0..31.
    x = np.arange(32, dtype=np.float32) / 8
    k = lib("softmax_kernel").kernel("softmax_kernel")
    (out,) = k(args={"input": mx.array(x), "output": ((32,), mx.float32), "n": 32, "shmem": 32 * 4},
               grid=(32, 1, 1), threadgroup=(32, 1, 1))
    e = np.exp(x.astype(np.float64) - x.max())
    np.testing.assert_allclose(f64(out), e / (e.sum() + x[1:8].sum()), rtol=1e-5)
    assert abs(f64(out).sum() - 1) > 0.1  # the outputs do not sum to 1


# ---- binary_op instantiations --------------------------------------------------------

@pytest.mark.parametrize("name,dtype,op", [("binary_add_f32", mx.float32, np.add),
                                           ("binary_add_f16", mx.float16, np.add),
                                           ("binary_mul_f32", mx.float32, np.multiply)])
@pytest.mark.parametrize("n,tg", [(1, 256), (100, 256), (4096, 256), (5003, 128)])
def test_binary_op(rng, name, dtype, op, n, tg):
    npdt = np.float16 if dtype == mx.float16 else np.float32
    a = rng.standard_normal(n).astype(npdt)
    b = rng.standard_normal(n).astype(npdt)
    k = lib("binary_op").kernel(name)
    (out,) = k(args={"a": mx.array(a), "b": mx.array(b), "out": nan_array((n,), dtype)},
               grid=(n, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")
    assert out.dtype == dtype
    rtol, atol = F16 if dtype == mx.float16 else (1e-6, 1e-7)
    np.testing.assert_allclose(f64(out), op(a.astype(np.float64), b.astype(np.float64)), rtol=rtol, atol=atol)


# ---- add_f32_vec4 ---------------------------------------------------------------------

@pytest.mark.parametrize("n,tg", [(4, 256), (128, 256), (1000, 256), (4 * 1001, 256), (4 * 333, 64)])
def test_add_f32_vec4(rng, n, tg):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    k = lib("add_f32_vec4").kernel("add_f32_vec4")
    (out,) = k(args={"a": mx.array(a), "b": mx.array(b), "out": nan_array((n,), mx.float32)},
               grid=(n // 4, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")
    np.testing.assert_allclose(f64(out), a.astype(np.float64) + b, rtol=1e-6, atol=1e-7)


# ---- add_f16_vec8: half8 is not MSL; the fix ----------------------------------------------

def test_add_f16_vec8_half8_is_refused():
    with pytest.raises(RuntimeError) as e:
        mx.fast.metal_library(source("add_f16_vec8"))
    msg = str(e.value)
    assert "half8" in msg
    assert names_line(msg, line_of("add_f16_vec8", "half8")), msg


@pytest.mark.parametrize("n,tg", [(8, 256), (800, 256), (8 * 1001, 256), (8 * 77, 32)])
def test_add_f16_vec8_fixed(rng, n, tg):
    a = rng.standard_normal(n).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float16)
    k = lib("add_f16_vec8_fixed").kernel("add_f16_vec8")
    (out,) = k(args={"a": mx.array(a), "b": mx.array(b), "out": nan_array((n,), mx.float16)},
               grid=(n // 8, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")
    assert out.dtype == mx.float16
    np.testing.assert_allclose(f64(out), a.astype(np.float64) + b, rtol=F16[0], atol=F16[1])


# ---- matmul_tiled -------------------------------------------------------------------------

@pytest.mark.parametrize("M,N,K", [(16, 16, 16), (1, 1, 1), (17, 33, 5), (64, 48, 80), (100, 37, 129), (5, 70, 16)])
def test_matmul_tiled(rng, M, N, K):
    # Whole 16x16 threadgroups (dispatch="threadgroups"): the kernel's tiles
    # need every thread of the group; its bounds checks handle the edges.
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    k = lib("matmul_tiled").kernel("matmul_tiled")
    (out,) = k(args={"A": mx.array(a.ravel()), "B": mx.array(b.ravel()), "C": nan_array((M * N,), mx.float32),
                     "M": M, "N": N, "K": K, "tileA": 16 * 16 * 4, "tileB": 16 * 16 * 4},
               grid=(-(-N // 16), -(-M // 16), 1), threadgroup=(16, 16, 1), dispatch="threadgroups")
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_within(out, (a64 @ b64).ravel(), (1e-5 * (np.abs(a64) @ np.abs(b64)) + 1e-6).ravel())


# ---- matmul_simdgroup: simdgroup_matrix_initialize is not MSL; the fix ----------------------

def test_matmul_simdgroup_verbatim_does_not_compile():
    line = line_of("matmul_simdgroup", "simdgroup_matrix_initialize")
    with pytest.raises(RuntimeError) as e:
        library = mx.fast.metal_library(source("matmul_simdgroup"), header=g.PRELUDE)
        k = library.kernel("matmul_simdgroup")
        ones = mx.array(np.ones(64, np.float16))
        mx.eval(*k(args={"A": ones, "B": ones, "C": ((64,), mx.float32), "M": 8, "N": 8, "K": 8},
                   grid=(1, 1, 1), threadgroup=(32, 1, 1), dispatch="threadgroups"))
    msg = str(e.value)
    assert "simdgroup_matrix_initialize" in msg
    assert names_line(msg, line), msg


@pytest.mark.parametrize("M,N,K", [
    (8, 8, 8), (32, 32, 32), (64, 64, 64),   # square: A @ B
    (24, 16, 16), (8, 32, 32),               # N == K, M differs: A @ B
    (16, 8, 32), (32, 16, 64),               # N < K: A read with row stride N
    (8, 16, 8), (16, 24, 8),                 # N > K: A read with row stride N, past M*K (bigger buffer given)
])
def test_matmul_simdgroup_fixed(rng, M, N, K):
    a_size = max(M * K, (M - 1) * N + K)
    a = rng.standard_normal(a_size).astype(np.float16)
    b = rng.standard_normal(K * N).astype(np.float16)
    k = lib("matmul_simdgroup_fixed").kernel("matmul_simdgroup")
    (out,) = k(args={"A": mx.array(a), "B": mx.array(b), "C": nan_array((M * N,), mx.float32),
                     "M": M, "N": N, "K": K},
               grid=(N // 8, M // 8, 1), threadgroup=(32, 1, 1), dispatch="threadgroups")
    ref = g.ref_matmul_simdgroup(a, b, M, N, K)
    if N == K:
        np.testing.assert_allclose(ref, a[:M * K].astype(np.float64).reshape(M, K) @ b.astype(np.float64).reshape(K, N))
    bound = 1e-5 * g.ref_matmul_simdgroup(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)), M, N, K) + 1e-6
    assert_within(out, ref.ravel(), bound.ravel())


# ---- flash_attention --------------------------------------------------------------------------

# dispatch="threads", grid = N (the early `return` precedes barriers), tg a
# multiple of 32 and N % tg either 0 or >= 32 (the tile load strides by SIMD
# lane, so each threadgroup needs one full SIMD group). D <= 64.
@pytest.mark.parametrize("N,D,tg", [(64, 16, 64), (100, 32, 64), (160, 64, 64), (250, 8, 64), (96, 64, 32),
                                    (300, 24, 128), (64, 5, 32)])
def test_flash_attention(rng, N, D, tg):
    q, kk, v = (rng.standard_normal((N, D)).astype(np.float16) for _ in range(3))
    scale = float(rng.uniform(0.5, 1.5) / math.sqrt(D))
    kern = lib("flash_attention").kernel("flash_attention")
    (out,) = kern(args={"Q": mx.array(q.ravel()), "K": mx.array(kk.ravel()), "V": mx.array(v.ravel()),
                        "Out": nan_array((N * D,), mx.float16), "N": N, "D": D, "scale": scale,
                        "kv_tile": 64 * D * 2},
                  grid=(N, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")
    assert out.dtype == mx.float16
    ref = g.ref_flash_attention(q, kk, scale)
    np.testing.assert_allclose(f64(out).reshape(N, D), ref, rtol=F16[0], atol=F16[1])
    # V is never read: the intended attention (P @ V) is not what it returns
    s = scale * (q.astype(np.float64) @ kk.astype(np.float64).T)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    intended = (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64)
    assert not np.allclose(f64(out).reshape(N, D), intended, rtol=F16[0], atol=F16[1])


# ---- scaled_elu ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name,dtype", [("scaled_elu_f32", mx.float32), ("scaled_elu_f16", mx.float16)])
@pytest.mark.parametrize("n,tg", [(5, None), (100, None), (1025, None), (5000, None), (777, 64)])
def test_scaled_elu(rng, name, dtype, n, tg):
    npdt = np.float16 if dtype == mx.float16 else np.float32
    x = (2 * rng.standard_normal(n)).astype(npdt)
    x[:min(n, 5)] = np.array([0.0, -1e-3, 1e-3, -12.0, 3.0], npdt)[:min(n, 5)]
    alpha = float(rng.uniform(0.5, 2.0))
    tg = tg or min(n, 1024)  # the page's launch: threadgroup = min(n, 1024)
    k = lib("scaled_elu").kernel(name)
    (out,) = k(args={"x": mx.array(x), "out": nan_array((n,), dtype), "alpha": alpha},
               grid=(n, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")
    assert out.dtype == dtype
    rtol, atol = F16 if dtype == mx.float16 else (1e-5, 1e-6)  # exp(x) - 1: ~1e-7 absolute near 0
    np.testing.assert_allclose(f64(out), g.ref_scaled_elu(x.astype(np.float64), alpha), rtol=rtol, atol=atol)


# ---- access patterns -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["column_access_bad", "row_access_good"])
def test_access_kernels_that_write_nothing(rng, name):
    n = 64
    mat = mx.array(rng.standard_normal(n * n).astype(np.float32))
    args = {"mat": mat, "N": n} if name == "column_access_bad" else {"mat": mat}
    outs = lib("access_patterns").kernel(name)(args=args, grid=(n, 1, 1), threadgroup=(32, 1, 1))
    assert list(outs) == []


@pytest.mark.parametrize("R,N", [(32, 32), (64, 64), (96, 96), (32, 64), (64, 128), (32, 96)])
def test_column_via_transpose(rng, R, N):
    mat = rng.standard_normal(R * N).astype(np.float32)
    k = lib("access_patterns").kernel("column_via_transpose")
    (out,) = k(args={"mat": mx.array(mat), "out": nan_array((N * N,), mx.float32), "N": N, "tile": 32 * 33 * 4},
               grid=(N // 32, R // 32, 1), threadgroup=(32, 32, 1), dispatch="threadgroups")
    ref = g.ref_column_via_transpose(mat, R, N)
    # written: out[:, :R] = mat^T exactly; the rest keeps its NaN
    np.testing.assert_array_equal(f64(out).reshape(N, N), ref)


# ---- optimised_dot: [[unroll]] is ignored with a warning; the fix -------------------------------------

def _dot_launch(library, a, b, tg):
    n = a.size
    k = library.kernel("optimised_dot")
    (out,) = k(args={"a": mx.array(a), "b": mx.array(b), "c": nan_array((n // 8,), mx.float32), "len": n},
               grid=(n // 8, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")
    mx.eval(out)
    return out


def _dot_check(out, a, b, tg):
    ref = g.ref_optimised_dot(a, b, tg)
    bound = 1e-5 * g.ref_optimised_dot(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)), tg) + 1e-6
    assert_within(out, ref, bound)


def test_optimised_dot_unroll_attribute_warns_and_builds(rng):
    line = line_of("optimised_dot", "[[unroll]]")
    n = 8 * 100
    a = rng.standard_normal(n).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        library = mx.fast.metal_library(source("optimised_dot"), header=g.PRELUDE)
        out = _dot_launch(library, a, b, 64)
    msgs = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert any("unroll" in m and names_line(m, line) for m in msgs), msgs
    _dot_check(out, a, b, 64)


@pytest.mark.parametrize("n,tg", [(8, 256), (8 * 32, 256), (8 * 100, 256), (8 * 1000, 256), (8 * 1000, 64),
                                  (8 * 500, 48)])
def test_optimised_dot_fixed(rng, n, tg):
    a = rng.standard_normal(n).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = _dot_launch(lib("optimised_dot_fixed"), a, b, tg)
    assert not [w for w in caught if "unroll" in str(w.message)]
    _dot_check(out, a, b, tg)


# ---- silu_gate_fused: uint4 thread position is not MSL; the fix ----------------------------------------

def test_silu_gate_fused_uint4_is_refused():
    with pytest.raises(RuntimeError) as e:
        mx.fast.metal_library(source("silu_gate_fused"))
    msg = str(e.value)
    assert names_line(msg, line_of("silu_gate_fused", "uint4 id")), msg
    assert "uint2" in msg and "uint3" in msg, msg


@pytest.mark.parametrize("n,tg", [(4, 256), (400, 256), (4 * 1001, 256), (4 * 100, 32)])
def test_silu_gate_fused_fixed(rng, n, tg):
    gate = (2 * rng.standard_normal(n)).astype(np.float16)
    up = (2 * rng.standard_normal(n)).astype(np.float16)
    k = lib("silu_gate_fused_fixed").kernel("silu_gate_fused")
    (out,) = k(args={"gate": mx.array(gate), "up": mx.array(up), "out": nan_array((n,), mx.float16)},
               grid=(n // 4, 1, 1), threadgroup=(tg, 1, 1), dispatch="threads")
    assert out.dtype == mx.float16
    np.testing.assert_allclose(f64(out), g.ref_silu_gate_fused(gate, up), rtol=F16[0], atol=F16[1])


# ---- the API's error paths ---------------------------------------------------------------------------

def _demo_args(n=64):
    return {"global_input": mx.array(np.arange(n, dtype=np.float32)), "global_output": ((n,), mx.float32),
            "scale": 2.0, "shared_tile": 64 * 4}


def test_wrong_dtype_names_the_parameter():
    args = _demo_args()
    args["global_input"] = mx.array(np.arange(64, dtype=np.float16))
    with pytest.raises(TypeError, match="global_input"):
        lib("memory_spaces_demo").kernel("memory_spaces_demo")(args=args, grid=(64, 1, 1), threadgroup=(64, 1, 1))


def test_missing_argument_names_it():
    args = _demo_args()
    del args["scale"]
    with pytest.raises(ValueError, match="scale"):
        lib("memory_spaces_demo").kernel("memory_spaces_demo")(args=args, grid=(64, 1, 1), threadgroup=(64, 1, 1))


def test_unknown_argument_is_refused():
    args = _demo_args()
    args["bogus_arg"] = 1.0
    with pytest.raises(ValueError, match="bogus_arg"):
        lib("memory_spaces_demo").kernel("memory_spaces_demo")(args=args, grid=(64, 1, 1), threadgroup=(64, 1, 1))


def test_unknown_kernel_lists_the_entry_points():
    with pytest.raises(ValueError) as e:
        lib("vector_add").kernel("nope")
    assert "vector_add" in str(e.value) and "vector_add_half" in str(e.value)
