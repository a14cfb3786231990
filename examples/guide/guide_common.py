"""What the guide's drivers share: loading a page kernel, picking the device,
timing a launch, and the float64 numpy references of what each kernel AS
WRITTEN computes (quirks included; see README.md). The test
tests/python/test_metal_library_guide.py checks the kernels against the same
references.

The page's snippets omit `#include <metal_stdlib>` and `using namespace
metal;` (every Metal file starts with them); the .metal files here stay
verbatim, and PRELUDE passes those two lines as the library's `header`.
"""
import pathlib
import statistics
import sys
import time

import numpy as np

import alloy.core as mx

HERE = pathlib.Path(__file__).resolve().parent
PRELUDE = "#include <metal_stdlib>\nusing namespace metal;\n"
SIMD = 32


def source(name):
    """The text of examples/guide/<name>.metal."""
    return (HERE / f"{name}.metal").read_text(encoding="utf-8")


def library(name, **kw):
    return mx.fast.metal_library(source(name), header=PRELUDE, **kw)


def device_from_argv(argv=None):
    """`python driver.py [cpu|gpu]`: sets the default device, returns its name."""
    argv = sys.argv if argv is None else argv
    which = argv[1] if len(argv) > 1 else "cpu"
    if which not in ("cpu", "gpu"):
        raise SystemExit(f"usage: {pathlib.Path(argv[0]).name} [cpu|gpu]")
    mx.set_default_device(mx.gpu if which == "gpu" else mx.cpu)
    return which


def median_time(launch, reps=7):
    """Median wall time (seconds) of `mx.eval(*launch())`, after one warm-up
    run (which compiles the kernel)."""
    mx.eval(*launch())
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        mx.eval(*launch())
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def f64(a):
    return np.array(a).astype(np.float64)


def report(what, got, ref, seconds, rtol, atol):
    """Prints the max error and the timing; exits non-zero on a mismatch."""
    got = f64(got)
    err = float(np.max(np.abs(got - ref))) if ref.size else 0.0
    ok = np.allclose(got, ref, rtol=rtol, atol=atol, equal_nan=False)
    print(f"{what:<44} max|err| {err:.3e}  {'ok' if ok else 'MISMATCH'}  launch {seconds * 1e3:8.3f} ms (median)")
    if not ok:
        raise SystemExit(1)


def nan_like(shape, dtype):
    """An output's initial value (in-out), NaN everywhere, so unwritten elements show."""
    np_dtype = np.float16 if dtype == mx.float16 else np.float32
    return mx.array(np.full(shape, np.nan, dtype=np_dtype))


# ---- references: what the code as written computes, in float64 -------------

def ref_memory_spaces_demo(x, scale):
    return np.asarray(x, np.float64) * np.float64(np.float32(scale))


def simd_groups(n, tg):
    """(threadgroup, simdgroup_index_in_threadgroup, lane) of each thread of a
    1-D grid of n threads (dispatchThreads: partial last threadgroup)."""
    i = np.arange(n)
    lid = i % tg
    return i // tg, lid // SIMD, lid % SIMD


def ref_simd_reduce_sum_one_group(x):
    """simd_reduce_sum launched as ONE threadgroup of len(x) threads: output[s]
    is the sum of the input of SIMD group s (the lanes that exist)."""
    x = np.asarray(x, np.float64)
    return np.array([x[s:s + SIMD].sum() for s in range(0, len(x), SIMD)])


def ref_softmax_kernel(x, tg, dispatch="threads"):
    """The MSL softmax_kernel with ONE SIMD group per threadgroup (8 <= tg <= 32;
    the only race-free shape). Each threadgroup normalises its own block (not a
    row): out = e / (sum(e) + v[1] + ... + v[7]) with e = exp(v - max(v)),
    where v[1..7] are the block's own inputs left in shmem[1..7] by the first
    store, which the hard-coded 8-SIMD-group loops then add to the sum.
    dispatch="threadgroups": the last group's threads past n hold -INFINITY."""
    assert 8 <= tg <= SIMD
    x = np.asarray(x, np.float64)
    n = len(x)
    out = np.empty(n)
    for start in range(0, n, tg):
        stop = min(start + tg, n)
        v = x[start:stop]
        if dispatch == "threadgroups":
            v = np.concatenate([v, np.full(tg - len(v), -np.inf)])
        else:
            assert len(v) >= 8, "a threadgroup of fewer than 8 threads adds uninitialised shmem"
        e = np.exp(v - v.max())
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start:stop] = (e / (e.sum() + v[1:8].sum()))[:stop - start]
    return out


def ref_matmul_simdgroup(a_flat, b, M, N, K):
    """matmul_simdgroup (after its compile fix): A is read with row stride N
    (the code passes N, not K, to simdgroup_load), so
    C[i, j] = sum_k a_flat[i*N + k] * B[k, j]  for k < K (K, M, N multiples of 8).
    Equals A @ B when N == K."""
    a_flat = np.asarray(a_flat, np.float64).ravel()
    assert M % 8 == 0 and N % 8 == 0 and K % 8 == 0
    assert (M - 1) * N + K <= a_flat.size, "A is read past its end"
    a_eff = np.stack([a_flat[i * N:i * N + K] for i in range(M)])
    return a_eff @ np.asarray(b, np.float64).reshape(K, N)


def ref_flash_attention(q, k, scale):
    """flash_attention as written: softmax(scale * Q K^T) @ K (the tile that
    feeds the output accumulator holds K; V is never read), one head."""
    q = np.asarray(q, np.float64)
    k = np.asarray(k, np.float64)
    s = scale * (q @ k.T)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return p @ k


def ref_scaled_elu(x, alpha):
    x = np.asarray(x, np.float64)
    return np.where(x > 0, x, np.float64(np.float32(alpha)) * (np.exp(x) - 1))


def ref_column_via_transpose(mat, R, N):
    """column_via_transpose on an R x N matrix (R <= N, both multiples of 32),
    grid (N/32, R/32) threadgroups of 32x32: out (an N x N buffer, row stride N)
    gets out[c, r] = mat[r, c] for r < R; columns r >= R are not written (NaN here)."""
    mat = np.asarray(mat, np.float64).reshape(R, N)
    out = np.full((N, N), np.nan)
    out[:, :R] = mat.T
    return out


def ref_optimised_dot(a, b, tg):
    """optimised_dot (grid = n/8 threads, threadgroup tg): thread id forms the
    dot product of its 8 elements; c[id] = simd_sum of those over id's SIMD
    group, so every lane of a SIMD group holds the same partial sum."""
    a = np.asarray(a, np.float64).reshape(-1, 8)
    b = np.asarray(b, np.float64).reshape(-1, 8)
    part = (a * b).sum(axis=1)
    g, s, _ = simd_groups(len(part), tg)
    key = g * 64 + s
    out = np.empty_like(part)
    for k in np.unique(key):
        out[key == k] = part[key == k].sum()
    return out


def ref_silu_gate_fused(gate, up):
    """out = gate * silu(up): SiLU on `up`, not on the gate (Llama's MLP is silu(gate) * up)."""
    g = np.asarray(gate, np.float64)
    u = np.asarray(up, np.float64)
    return g * (u / (1 + np.exp(-u)))
