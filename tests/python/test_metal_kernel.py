"""mx.fast.metal_kernel: the seeds' kernels and each feature of the API, on
the device ALLOY_TEST_DEVICE names, against float64 numpy references."""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import alloy.core as mx

SEEDS = pathlib.Path(__file__).resolve().parents[2] / "examples" / "seeds"
sys.path.insert(0, str(SEEDS))

NAN = float("nan")


def run(name, source, inputs, shapes, dtypes, grid, tg, names=None, outputs=("out",), header="", template=None,
        init_value=NAN, **kernel_kw):
    """Builds and launches a kernel; outputs start as NaN so unwritten elements show."""
    names = names if names is not None else [f"in{i}" for i in range(len(inputs))]
    k = mx.fast.metal_kernel(name=name, input_names=list(names), output_names=list(outputs), source=source,
                             header=header, **kernel_kw)
    return k(inputs=inputs, output_shapes=shapes, output_dtypes=dtypes, grid=grid, threadgroup=tg,
             template=template, init_value=init_value)


# ---- the seeds -------------------------------------------------------------

def test_seed_exp_float16(rng):
    import exp_elementwise as seed  # runs the seed's own assert at import
    a = mx.array(rng.standard_normal((4, 16)).astype(np.float16))
    b = seed.exp_elementwise(a)
    ref = np.exp(np.array(a).astype(np.float64))
    assert b.dtype == mx.float16
    np.testing.assert_allclose(np.array(b).astype(np.float64), ref, rtol=2e-3, atol=2e-3)


def test_seed_exp_strided(rng):
    import exp_strided as seed
    base = mx.array(rng.standard_normal((6, 16)).astype(np.float16))
    a = base[::2]
    b = seed.exp_elementwise(a)
    np.testing.assert_allclose(np.array(b).astype(np.float64), np.exp(np.array(a).astype(np.float64)),
                               rtol=2e-3, atol=2e-3)


def grid_sample_np(x, grid):
    x = x.astype(np.float64)
    grid = grid.astype(np.float64)
    N, H, W, C = x.shape
    ix = ((grid[..., 0] + 1) * W - 1) / 2
    iy = ((grid[..., 1] + 1) * H - 1) / 2
    x0, y0 = np.floor(ix).astype(int), np.floor(iy).astype(int)
    out = np.zeros(grid.shape[:3] + (C,))
    b = np.arange(N)[:, None, None]
    for dy in (0, 1):
        for dx in (0, 1):
            xi, yi = x0 + dx, y0 + dy
            w = (1 - np.abs(ix - xi)) * (1 - np.abs(iy - yi))
            ok = (xi >= 0) & (xi < W) & (yi >= 0) & (yi < H)
            v = x[b, np.clip(yi, 0, H - 1), np.clip(xi, 0, W - 1)] * ok[..., None]
            out += w[..., None] * v
    return out


def test_seed_grid_sample_forward(rng, monkeypatch):
    import grid_sample as seed
    # The seed loads all four corners before masking those outside the image,
    # so it reads outside `x` (test_seed_grid_sample_reads_outside_x_when_checked):
    # run it as written, unchecked.
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")
    x_np = rng.standard_normal((2, 9, 11, 5)).astype(np.float32)
    g_np = (rng.random((2, 4, 6, 2)) * 2.4 - 1.2).astype(np.float32)  # some samples fall outside
    x, g = mx.array(x_np), mx.array(g_np)
    out = seed.grid_sample(x, g)
    ref = grid_sample_np(x_np, g_np)
    np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array(seed.grid_sample_ref(x, g)), ref, rtol=1e-5, atol=1e-5)


def test_seed_grid_sample_reads_outside_x_when_checked(rng, monkeypatch):
    # With bounds checks (the suite's default) the seed's corner loads for
    # samples outside the image are reported, naming `x` and the seed's line.
    import grid_sample as seed
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "1")
    x = mx.array(rng.standard_normal((2, 9, 11, 5)).astype(np.float32))
    g = mx.array(np.full((2, 4, 6, 2), -1.5, np.float32))  # every sample left of and above the image
    with pytest.raises(RuntimeError, match=r"kernel 'grid_sample': out-of-bounds read of input 'x' \(input 0\) "
                                           r"at index -\d+; it has 990 elements\. Thread \(\d+, 0, 0\), source line "
                                           r"\d+:\n\s+T I_nw = x\[base_idx"):
        mx.eval(seed.grid_sample(x, g))


def test_seed_grid_sample_vjp_kernel(rng):
    import grid_sample as seed
    x_np = rng.standard_normal((2, 7, 8, 5)).astype(np.float32)
    g_np = (rng.random((2, 3, 4, 2)) * 2.4 - 1.2).astype(np.float32)
    cot_np = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    x, g, cot = mx.array(x_np), mx.array(g_np), mx.array(cot_np)
    # `@grid_sample.vjp` re-binds the name to the custom function, as in MLX:
    # the seed's VJP kernel runs through mx.vjp.
    _, (xg, gg) = mx.vjp(seed.grid_sample, [x, g], [cot])
    # Reference gradient by central differences of the float64 forward.
    def loss(xv, gv):
        return float((grid_sample_np(xv, gv) * cot_np).sum())
    # x gradient is linear in x: exact via the adjoint of sampling.
    eps = 1e-6
    xv = x_np.astype(np.float64)
    ref_x = np.zeros_like(xv)
    it = np.nditer(xv, flags=["multi_index"])
    base = loss(xv, g_np)
    for _ in it:
        i = it.multi_index
        xp = xv.copy()
        xp[i] += 1.0
        ref_x[i] = loss(xp, g_np) - base
    np.testing.assert_allclose(np.array(xg), ref_x, rtol=1e-4, atol=1e-4)
    gv = g_np.astype(np.float64)
    ref_g = np.zeros_like(gv)
    it = np.nditer(gv, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        gp, gm = gv.copy(), gv.copy()
        gp[i] += eps
        gm[i] -= eps
        ref_g[i] = (loss(xv, gp) - loss(xv, gm)) / (2 * eps)
    # The seed multiplies by integer W/2 and H/2 (as Metal evaluates `W / 2`).
    N, H, W, C = x_np.shape
    scale = np.array([(W // 2) / (W / 2), (H // 2) / (H / 2)])
    np.testing.assert_allclose(np.array(gg), ref_g * scale, rtol=1e-3, atol=1e-3)


# ---- signature generation and verbose output -------------------------------

def test_verbose_prints_metal_signature_and_translation(capfd):
    k = mx.fast.metal_kernel(name="myexp_verbose", input_names=["inp"], output_names=["out"],
                             source="uint elem = thread_position_in_grid.x;\nout[elem] = metal::exp(inp[elem]);")
    a = mx.array(np.linspace(-1, 1, 8, dtype=np.float32))
    out = k(inputs=[a], template=[("T", mx.float32)], grid=(8, 1, 1), threadgroup=(8, 1, 1),
            output_shapes=[(8,)], output_dtypes=[mx.float32], verbose=True)[0]
    mx.eval(out)
    text = capfd.readouterr().out
    assert "template <typename T>" in text
    assert "[[kernel]] void custom_kernel_myexp_verbose" in text
    assert "const device float* inp [[buffer(0)]]" in text
    assert "device float* out [[buffer(1)]]" in text
    assert "uint3 thread_position_in_grid [[thread_position_in_grid]]" in text
    assert "[[host_name(" in text
    assert "translated for" in text


def test_attributes_detected_on_tokens_not_substrings(capfd):
    src = """
    uint my_grid_size = 3;  // grid_size in a comment must not count
    out[thread_position_in_grid.x] = my_grid_size;
    """
    k = mx.fast.metal_kernel(name="tokens", input_names=[], output_names=["out"], source=src)
    out = k(inputs=[], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)], output_dtypes=[mx.uint32],
            verbose=True)[0]
    assert np.array(out).tolist() == [3, 3, 3, 3]
    text = capfd.readouterr().out
    assert "[[grid_size]]" not in text
    assert "[[thread_position_in_grid]]" in text


def test_shape_strides_ndim_only_when_used(capfd):
    src = "uint i = thread_position_in_grid.x; out[i] = a[i] * a_ndim + a_shape[0];"
    k = mx.fast.metal_kernel(name="shape_info", input_names=["a", "b"], output_names=["out"], source=src)
    a = mx.array(np.arange(10, dtype=np.float32))
    b = mx.array(np.arange(10, dtype=np.float32))
    out = k(inputs=[a, b], grid=(10, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(10,)],
            output_dtypes=[mx.float32], verbose=True)[0]
    np.testing.assert_array_equal(np.array(out), np.arange(10) * 1 + 10)
    text = capfd.readouterr().out
    assert "a_shape" in text and "a_ndim" in text
    assert "b_shape" not in text and "a_strides" not in text


# Every entry of a shape or strides past the input's ndim, up to the 16 the
# GPU's launch holds: Metal leaves them undefined; both of Alloy's targets
# read 0 there (the CPU's launch once read past the array's own vectors).
PAST_NDIM_SUM = """
    uint i = thread_position_in_grid.x;
    long past = 0;
    for (int d = inp_ndim; d < 16; ++d) past += long(inp_shape[d]) + inp_strides[d];
    out[i] = inp[i] + float(past) + float(inp_ndim);
"""


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (2, 1, 3, 2, 2)])
def test_shape_and_strides_past_ndim_read_zero(shape, rng, monkeypatch):
    # Out of the shape vector on purpose, which the bounds check would name.
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")
    k = mx.fast.metal_kernel(name="past_ndim_sum", input_names=["inp"], output_names=["out"], source=PAST_NDIM_SUM)
    x = rng.standard_normal(shape).astype(np.float32)
    out = k(inputs=[mx.array(x)], grid=(x.size, 1, 1), threadgroup=(32, 1, 1), output_shapes=[shape],
            output_dtypes=[mx.float32], init_value=float("nan"))[0]
    np.testing.assert_array_equal(np.array(out), x + len(shape))


# ---- dispatch semantics ------------------------------------------------------

@pytest.mark.parametrize("grid,tg", [
    ((10, 5, 1), (4, 4, 1)),     # partial groups in x and y
    ((16, 8, 1), (4, 4, 1)),     # whole groups, power-of-two width (split by shift)
    ((12, 6, 4), (3, 3, 2)),     # whole 3-D groups (split by division)
    ((7, 3, 5), (3, 2, 2)),      # partial 3-D groups
    ((256, 1, 1), (32, 1, 1)),   # whole 1-D groups, four to a block on the GPU
    ((96, 1, 1), (32, 1, 1)),    # 1-D, a block with groups past the grid
], ids=str)
def test_partial_threadgroups_and_attributes(grid, tg):
    # Every thread writes its ids where it is: a partial group's real size,
    # its linear index over that size, its group and SIMD group; a thread that
    # does not exist or a group run twice or never shows as a wrong or
    # unwritten (0xFFFFFFFF) entry.
    src = """
    uint3 g = thread_position_in_grid;
    uint idx = (g.z * threads_per_grid.y + g.y) * threads_per_grid.x + g.x;
    out[idx * 9 + 0] = threads_per_threadgroup.x;
    out[idx * 9 + 1] = threads_per_threadgroup.y;
    out[idx * 9 + 2] = threads_per_threadgroup.z;
    out[idx * 9 + 3] = thread_index_in_threadgroup;
    out[idx * 9 + 4] = threadgroup_position_in_grid.x;
    out[idx * 9 + 5] = threadgroup_position_in_grid.y * 1000u + threadgroup_position_in_grid.z;
    out[idx * 9 + 6] = dispatch_threads_per_threadgroup.x;
    out[idx * 9 + 7] = thread_index_in_simdgroup + 100 * simdgroup_index_in_threadgroup;
    out[idx * 9 + 8] = thread_position_in_threadgroup.x + 100 * thread_position_in_threadgroup.y +
                       10000 * thread_position_in_threadgroup.z;
    """
    n = grid[0] * grid[1] * grid[2]
    k = mx.fast.metal_kernel(name="attrs", input_names=[], output_names=["out"], source=src)
    out = np.array(k(inputs=[], grid=grid, threadgroup=tg, output_shapes=[(n * 9,)], output_dtypes=[mx.uint32],
                     init_value=0xFFFFFFFF)[0]).reshape(grid[2], grid[1], grid[0], 9)
    for z in range(grid[2]):
        for y in range(grid[1]):
            for x in range(grid[0]):
                ax = min(tg[0], grid[0] - x // tg[0] * tg[0])
                ay = min(tg[1], grid[1] - y // tg[1] * tg[1])
                az = min(tg[2], grid[2] - z // tg[2] * tg[2])
                px, py, pz = x % tg[0], y % tg[1], z % tg[2]
                lin = px + py * ax + pz * ax * ay
                want = [ax, ay, az, lin, x // tg[0], (y // tg[1]) * 1000 + z // tg[2], tg[0],
                        lin % 32 + 100 * (lin // 32), px + 100 * py + 10000 * pz]
                assert out[z, y, x].tolist() == want, (x, y, z)


@pytest.mark.parametrize("grid,tg", [((3, 70001, 1), (1, 1, 1)), ((1, 2, 66000), (1, 2, 1)),
                                     ((2, 300, 301), (2, 1, 1)), ((1, 140000, 1), (1, 2, 1))])
@pytest.mark.parametrize("sync", [False, True])
def test_more_than_65535_threadgroups_in_y_or_z(grid, tg, sync):
    # CUDA launches at most 65535 blocks in y and z; Metal has no such limit.
    # Each thread writes where it is, so a missed or repeated threadgroup shows.
    src = """
    uint3 g = thread_position_in_grid;
    uint idx = (g.z * threads_per_grid.y + g.y) * threads_per_grid.x + g.x;
    %s
    out[idx] = threadgroup_position_in_grid.y * 1000003u + threadgroup_position_in_grid.z * 7u + g.x;
    """ % ("threadgroup_barrier(mem_flags::mem_threadgroup);" if sync else "")
    n = grid[0] * grid[1] * grid[2]
    k = mx.fast.metal_kernel(name="bigyz", input_names=[], output_names=["out"], source=src)
    out = np.array(k(inputs=[], grid=grid, threadgroup=tg, output_shapes=[(n,)], output_dtypes=[mx.uint32],
                     init_value=0xFFFFFFFF)[0]).reshape(grid[2], grid[1], grid[0])
    z, y, x = np.meshgrid(np.arange(grid[2]), np.arange(grid[1]), np.arange(grid[0]), indexing="ij")
    ref = (y // tg[1]).astype(np.uint64) * 1000003 + (z // tg[2]) * 7 + x
    np.testing.assert_array_equal(out, (ref % 2**32).astype(np.uint32))


def test_threadgroup_reduction_with_barriers(rng):
    src = """
    threadgroup float buf[256];
    uint lid = thread_position_in_threadgroup.x;
    uint n = threads_per_threadgroup.x;
    buf[lid] = inp[thread_position_in_grid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = 128; s > 0; s >>= 1) {
        if (lid < s && lid + s < n) buf[lid] += buf[lid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0) out[threadgroup_position_in_grid.x] = buf[0];
    """
    n = 1000  # the last threadgroup is partial
    x = rng.standard_normal(n).astype(np.float32)
    out = run("tg_reduce", src, [mx.array(x)], [(4,)], [mx.float32], (n, 1, 1), (256, 1, 1), names=["inp"])[0]
    ref = [x[i * 256:(i + 1) * 256].astype(np.float64).sum() for i in range(4)]
    np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("tile", [4096, 20000])
def test_threadgroup_arrays_over_48kb(rng, tile):
    # 80 KB of threadgroup memory (20000 floats) is over CUDA's 48 KB static
    # limit: the GPU takes it from dynamic shared memory. Rows are staged
    # reversed, so a wrong offset or size shows in the sums.
    src = """
    threadgroup float stage[TILE];
    threadgroup float partial[32];
    threadgroup uint rows_done;
    const uint t = thread_index_in_threadgroup, n = threads_per_threadgroup.x;
    const uint row = threadgroup_position_in_grid.x;
    if (t == 0) rows_done = row;
    for (uint i = t; i < TILE; i += n) stage[TILE - 1 - i] = x[row * TILE + i] * float(i % 7);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float acc = 0.0f;
    for (uint i = t; i < TILE; i += n) acc += stage[i];
    acc = simd_sum(acc);
    if (thread_index_in_simdgroup == 0) partial[simdgroup_index_in_threadgroup] = acc;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (t == 0) {
      float total = 0.0f;
      for (uint s = 0; s < (n + 31) / 32; ++s) total += partial[s];
      out[row] = total + float(rows_done - row);
    }
    """
    rows = 5
    x = rng.standard_normal((rows, tile)).astype(np.float32)
    out = run("big_tg", src, [mx.array(x)], [(rows,)], [mx.float32], (rows * 256, 1, 1), (256, 1, 1),
              names=["x"], template=[("TILE", tile)])[0]
    ref = (x.astype(np.float64) * (np.arange(tile) % 7)).sum(axis=1)
    np.testing.assert_allclose(np.array(out), ref, rtol=1e-4, atol=1e-3)


def test_threadgroup_arrays_over_48kb_in_a_nested_scope_are_a_clear_error():
    # Only kernel-scope arrays can move to dynamic shared memory on CUDA.
    from alloy.core import _msl
    src = """
    if (thread_index_in_threadgroup < 4) {
      threadgroup float big[16384];
      big[thread_index_in_threadgroup] = x[0];
      threadgroup_barrier(mem_flags::mem_threadgroup);
      out[thread_index_in_threadgroup] = big[3 - thread_index_in_threadgroup];
    }
    """
    ok, message = _msl.compile("nested_big", src, "", [("x", "float", False)], [("out", "float", False)], [],
                               False, "safe", "cuda", "sm_90")
    assert not ok
    assert "nested scopes" in message and "kernel's own scope" in message


def test_threadgroup_memory_over_the_device_limit(rng):
    # 240 KB of threadgroup memory: fine on the CPU, over the H100's 227 KB
    # per block, where the error must say so before CUDA refuses the launch.
    src = """
    threadgroup float stage[61440];
    stage[thread_index_in_threadgroup] = x[thread_index_in_threadgroup];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[thread_index_in_threadgroup] = stage[31 - thread_index_in_threadgroup] * 2.0f;
    """
    x = rng.standard_normal(32).astype(np.float32)
    out = run("over_limit", src, [mx.array(x)], [(32,)], [mx.float32], (32, 1, 1), (32, 1, 1), names=["x"])[0]
    if os.environ.get("ALLOY_TEST_DEVICE", "cpu") == "gpu":
        with pytest.raises(ValueError, match="exceeds the device"):
            mx.eval(out)
    else:
        np.testing.assert_allclose(np.array(out), x[::-1].astype(np.float64) * 2, rtol=1e-6)


def test_same_definition_returns_the_same_launcher(rng):
    # The seeds define their kernel inside the function they call: the same
    # definition must not build a new launcher (and its caches) each time.
    def make(src, name="same_def"):
        return mx.fast.metal_kernel(name=name, input_names=["x"], output_names=["out"], source=src)

    src = "uint i = thread_position_in_grid.x; out[i] = x[i] * 3.0f;"
    k1, k2 = make(src), make("".join(list(src)))  # an equal string, not the same object
    assert k1 is k2
    k3 = make(src.replace("3.0f", "5.0f"))
    assert k3 is not k1
    assert make(src, name="other_name") is not k1
    x = rng.standard_normal(64).astype(np.float32)
    for k, factor in ((k2, 3.0), (k3, 5.0)):
        out = k(inputs=[mx.array(x)], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(64,)],
                output_dtypes=[mx.float32], init_value=float("nan"))[0]
        np.testing.assert_allclose(np.array(out), x.astype(np.float64) * factor, rtol=1e-6)


def test_simd_sum_over_partial_simdgroup(rng):
    src = """
    float v = inp[thread_position_in_grid.x];
    float s = simd_sum(v);
    float p = simd_prefix_exclusive_sum(v);
    out[thread_position_in_grid.x] = s;
    pre[thread_position_in_grid.x] = p;
    """
    n = 45  # SIMD groups of 32 and 13 lanes
    x = rng.standard_normal(n).astype(np.float32)
    s, p = run("simd_partial", src, [mx.array(x)], [(n,), (n,)], [mx.float32, mx.float32], (n, 1, 1), (64, 1, 1),
               names=["inp"], outputs=["out", "pre"])
    groups = [x[:32], x[32:]]
    ref_s = np.concatenate([np.full(len(g), g.astype(np.float64).sum()) for g in groups])
    ref_p = np.concatenate([np.concatenate([[0], np.cumsum(g.astype(np.float64))[:-1]]) for g in groups])
    np.testing.assert_allclose(np.array(s), ref_s, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array(p), ref_p, rtol=1e-5, atol=1e-5)


def test_atomics_under_contention(rng):
    src = """
    uint i = thread_position_in_grid.x;
    atomic_fetch_add_explicit(&hist[bins[i]], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&total[0], vals[i], memory_order_relaxed);
    """
    n = 5000
    bins = rng.integers(0, 7, n).astype(np.int32)
    vals = rng.integers(-50, 50, n).astype(np.float32)  # exact in float32 in any order
    k = mx.fast.metal_kernel(name="hist", input_names=["bins", "vals"], output_names=["hist", "total"],
                             source=src, atomic_outputs=True)
    h, t = k(inputs=[mx.array(bins), mx.array(vals)], grid=(n, 1, 1), threadgroup=(256, 1, 1),
             output_shapes=[(7,), (1,)], output_dtypes=[mx.int32, mx.float32], init_value=0)
    np.testing.assert_array_equal(np.array(h), np.bincount(bins, minlength=7))
    assert float(np.array(t)[0]) == float(vals.astype(np.float64).sum())


def test_atomic_adds_and_subs_over_many_threadgroups(rng):
    """Atomic adds and subs from 2048 threadgroups into a few thousand bins,
    on top of init_value: uint counts exact, float sums exact (integer
    values), whether or not the body reads what an add returned."""
    n, nbins = 1 << 18, 4099
    bins = rng.integers(0, nbins, n).astype(np.int32)
    vals = rng.integers(-64, 64, n).astype(np.float32)  # sums exact in float32 in any order
    added = """
    uint i = thread_position_in_grid.x;
    atomic_fetch_add_explicit(&hist[bins[i]], 3u, memory_order_relaxed);
    if (i % 3 == 0) atomic_fetch_sub_explicit(&hist[bins[i]], 1u, memory_order_relaxed);
    atomic_fetch_add_explicit(&sums[bins[i]], vals[i], memory_order_relaxed);
    """
    used = added.replace("atomic_fetch_add_explicit(&sums[bins[i]], vals[i], memory_order_relaxed);",
                         "float before = atomic_fetch_add_explicit(&sums[bins[i]], vals[i], memory_order_relaxed);"
                         " (void)before;")
    want_hist = (7 + 3 * np.bincount(bins, minlength=nbins)
                 - np.bincount(bins[np.arange(n) % 3 == 0], minlength=nbins)).astype(np.uint32)
    want_sums = 7 + np.bincount(bins, weights=vals.astype(np.float64), minlength=nbins)
    for name, src in (("only_added", added), ("result_read", used)):
        k = mx.fast.metal_kernel(name=name, input_names=["bins", "vals"], output_names=["hist", "sums"], source=src,
                                 atomic_outputs=True)
        h, t = k(inputs=[mx.array(bins), mx.array(vals)], grid=(n, 1, 1), threadgroup=(128, 1, 1),
                 output_shapes=[(nbins,), (nbins,)], output_dtypes=[mx.uint32, mx.float32], init_value=7)
        np.testing.assert_array_equal(np.array(h), want_hist, err_msg=name)
        np.testing.assert_array_equal(np.array(t).astype(np.float64), want_sums, err_msg=name)


def test_swizzle_reads_and_writes():
    src = """
    uint i = thread_position_in_grid.x;
    float4 v = float4(inp[4 * i], inp[4 * i + 1], inp[4 * i + 2], inp[4 * i + 3]);
    float4 w = v.wzyx;
    w.xy = v.zw;
    float3 c = w.rgb;
    out[4 * i] = w.x; out[4 * i + 1] = w.y; out[4 * i + 2] = c.z; out[4 * i + 3] = float(sizeof(float3));
    """
    x = np.arange(8, dtype=np.float32)
    out = np.array(run("swz", src, [mx.array(x)], [(8,)], [mx.float32], (2, 1, 1), (2, 1, 1), names=["inp"])[0])
    v = x.reshape(2, 4)
    ref = np.stack([v[:, 2], v[:, 3], v[:, 1], np.full(2, 16.0)], axis=1).ravel()
    np.testing.assert_array_equal(out, ref)


def test_init_value_and_partial_writes():
    src = "uint i = thread_position_in_grid.x; if (i % 2 == 0) out[i] = 1.0f;"
    out = np.array(run("partial_write", src, [], [(10,)], [mx.float32], (10, 1, 1), (4, 1, 1), init_value=-3.0)[0])
    assert out.tolist() == [1.0, -3.0] * 5


def test_template_int_bool_dtype_and_scalar_inputs(rng):
    src = """
    uint i = thread_position_in_grid.x;
    T v = inp[i] * scale + N;
    out[i] = FLIP ? -v : v;
    """
    x = rng.standard_normal(16).astype(np.float32)
    k = mx.fast.metal_kernel(name="tmpl", input_names=["inp", "scale"], output_names=["out"], source=src)
    for flip in (True, False):
        out = k(inputs=[mx.array(x), 2.5], template=[("T", mx.float32), ("N", 3), ("FLIP", flip)], grid=(16, 1, 1),
                threadgroup=(16, 1, 1), output_shapes=[(16,)], output_dtypes=[mx.float32])[0]
        ref = x.astype(np.float64) * 2.5 + 3
        np.testing.assert_allclose(np.array(out), -ref if flip else ref, rtol=1e-6)


def test_header_helpers_templates():
    header = """
    template <typename T> T twice(T v) { return v + v; }
    #define SQ(a) ((a) * (a))
    """
    src = "uint i = thread_position_in_grid.x; out[i] = twice(SQ(float(i)));"
    out = run("hdr", src, [], [(6,)], [mx.float32], (6, 1, 1), (6, 1, 1), header=header)[0]
    assert np.array(out).tolist() == [2.0 * i * i for i in range(6)]


# ---- caching -----------------------------------------------------------------

def test_same_name_different_source_in_one_eval():
    k1 = mx.fast.metal_kernel(name="same", input_names=[], output_names=["out"],
                              source="out[thread_position_in_grid.x] = 1;")
    k2 = mx.fast.metal_kernel(name="same", input_names=[], output_names=["out"],
                              source="out[thread_position_in_grid.x] = 2;")
    args = dict(inputs=[], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)], output_dtypes=[mx.int32])
    a, b = k1(**args)[0], k2(**args)[0]
    mx.eval(a, b)
    assert np.array(a).tolist() == [1] * 4 and np.array(b).tolist() == [2] * 4


def test_same_kernel_two_dtypes_in_one_graph(rng):
    src = "uint i = thread_position_in_grid.x; out[i] = inp[i] * 2;"
    k = mx.fast.metal_kernel(name="twodt", input_names=["inp"], output_names=["out"], source=src)
    xf = mx.array(rng.standard_normal(8).astype(np.float32))
    xi = mx.array(rng.integers(-100, 100, 8).astype(np.int32))
    of = k(inputs=[xf], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)], output_dtypes=[mx.float32])[0]
    oi = k(inputs=[xi], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)], output_dtypes=[mx.int32])[0]
    mx.eval(of, oi)
    np.testing.assert_allclose(np.array(of), np.array(xf) * 2)
    np.testing.assert_array_equal(np.array(oi), np.array(xi) * 2)


def test_corrupt_disk_cache_entry_is_rebuilt(tmp_path):
    script = f"""
import numpy as np, alloy.core as mx
mx.set_default_device(mx.{os.environ.get('ALLOY_TEST_DEVICE', 'cpu')})
k = mx.fast.metal_kernel(name="cached", input_names=[], output_names=["out"],
                         source="out[thread_position_in_grid.x] = 7;")
o = k(inputs=[], grid=(3, 1, 1), threadgroup=(3, 1, 1), output_shapes=[(3,)], output_dtypes=[mx.int32])[0]
print(np.array(o).tolist())
"""
    env = dict(os.environ, ALLOY_CACHE_DIR=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    entries = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix not in (".cpp", ".cu", ".h")
               and "runtime-" not in str(p)]
    assert entries, "the compile left no cache entry"
    for p in entries:
        data = p.read_bytes()
        p.write_bytes(data[: len(data) // 2])  # truncated, as after a crash mid-write
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "[7, 7, 7]"


@pytest.mark.skipif(os.environ.get("ALLOY_TEST_DEVICE", "cpu") != "gpu",
                    reason="launch plans are the CUDA target's (the CPU path always translates)")
def test_a_later_process_launches_from_the_plan_without_translating(tmp_path, rng):
    # The second process finds the variant's launch plan on disk: no
    # translation, the same numbers, and verbose still shows the source.
    x = rng.standard_normal(300).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    body = "uint i = thread_position_in_grid.x;\nif (i < x_shape[0]) out[i] = T(2) * x[i] + T(x_ndim);"
    script = f"""
import numpy as np, alloy.core as mx
mx.set_default_device(mx.gpu)
x = mx.array(np.load({str(tmp_path / 'x.npy')!r}))
# Unchecked: a bounds-checked variant translates in every process, since its
# fault messages quote what the translation found (the suite checks by default).
k = mx.fast.metal_kernel(name="planned", input_names=["x"], output_names=["out"], source={body!r},
                         compile_options={{"bounds_check": False}})
o = k(inputs=[x], template=[("T", mx.float32)], grid=(300, 1, 1), threadgroup=(64, 1, 1),
      output_shapes=[(300,)], output_dtypes=[mx.float32], init_value=-1.0)[0]
np.save({str(tmp_path / 'out.npy')!r}, np.array(o))
"""
    env = dict(os.environ, ALLOY_CACHE_DIR=str(tmp_path / "cache"), ALLOY_EVAL_PROFILE="1")
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        runs.append((r.stderr, np.load(tmp_path / "out.npy")))
    assert "(translate MSL)" in runs[0][0]
    assert "(translate MSL)" not in runs[1][0], runs[1][0]
    for _, out in runs:
        np.testing.assert_allclose(out, 2 * x.astype(np.float64) + 1, rtol=1e-6)
    verbose = script.replace("init_value=-1.0)", "init_value=-1.0, verbose=True)")
    r = subprocess.run([sys.executable, "-c", verbose], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "translated for CUDA" in r.stdout and "x_shape[0]" in r.stdout


# ---- errors ------------------------------------------------------------------

def test_compile_error_quotes_the_users_line():
    src = "uint i = thread_position_in_grid.x;\nfloat y = 1.0f;\nout[i] = y + undefined_thing;\n"
    k = mx.fast.metal_kernel(name="broken", input_names=[], output_names=["out"], source=src)
    good = mx.array([1.0, 2.0])
    mx.eval(good)
    with pytest.raises(RuntimeError) as e:
        mx.eval(k(inputs=[], grid=(2, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(2,)],
                  output_dtypes=[mx.float32])[0])
    msg = str(e.value)
    assert "source:3:" in msg and "undefined_thing" in msg
    assert "out[i] = y + undefined_thing;" in msg
    assert np.array(good).tolist() == [1.0, 2.0]


def test_invalid_msl_vector_width_is_a_clear_error():
    src = "uint i = thread_position_in_grid.x;\nhalf8 v;\nout[i] = 0;"
    k = mx.fast.metal_kernel(name="half8", input_names=[], output_names=["out"], source=src)
    with pytest.raises(Exception) as e:
        mx.eval(k(inputs=[], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
                  output_dtypes=[mx.float32])[0])
    assert "half8" in str(e.value) and "2" in str(e.value)


@pytest.mark.parametrize("bad", [
    dict(threadgroup=(1025, 1, 1)),
    dict(threadgroup=(64, 32, 1)),
    dict(grid=(0, 1, 1)),
    dict(grid=(4, 1)),
    dict(threadgroup=[4, 1, 1, 1]),
    dict(threadgroup=(-1, 1, 1)),
    dict(output_dtypes=[mx.float32, mx.float32]),
    dict(inputs=[mx.array([1.0]), mx.array([2.0])]),
])
def test_bad_launch_arguments_raise_value_error(bad):
    k = mx.fast.metal_kernel(name="args", input_names=["a"], output_names=["out"],
                             source="out[thread_position_in_grid.x] = a[0];")
    args = dict(inputs=[mx.array([1.0])], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
                output_dtypes=[mx.float32])
    args.update(bad)
    with pytest.raises(ValueError):
        k(**args)


@pytest.mark.parametrize("change,message", [
    (dict(output_shapes=[(2**40,)]), "a dimension in output_shapes is 1099511627776, which does not fit in 32 bits"),
    (dict(output_shapes=[(3, -2**31 - 1)]), "a dimension in output_shapes is -2147483649"),
    (dict(template=[("N", 2**40)]), "template value for 'N' is 1099511627776, which does not fit in 32 bits"),
    (dict(template=[("N", -2**31 - 1)]), "template value for 'N' is -2147483649"),
])
def test_integers_past_32_bits_are_a_value_error_naming_the_argument(change, message):
    # Before: an output dimension wrapped (2**40 became 0 elements, and the
    # launch then reported a write past the end) and a template value was a
    # bare RuntimeError std::bad_cast. MLX raises ValueError for the
    # template value (checked below) and aborts the process for the shape.
    k = _double_kernel()
    with pytest.raises(ValueError) as e:
        k(**_launch_args(**change))
    assert message in str(e.value) and str(e.value).startswith("[metal_kernel]"), str(e.value)
    if "template" in change:
        import mlx.core as mlx_core
        mk = mlx_core.fast.metal_kernel(name="twice", input_names=["a"], output_names=["out"],
                                        source="uint i = thread_position_in_grid.x; out[i] = a[i] * 2;")
        with pytest.raises(ValueError):
            mk(inputs=[mlx_core.array([1.0, 2.0, 3.0])], grid=(3, 1, 1), threadgroup=(3, 1, 1),
               output_shapes=[(3,)], output_dtypes=[mlx_core.float32], **change)
    # The largest 32-bit values still pass this check (the launch itself is fine).
    edge = dict(template=[("N", 2**31 - 1)]) if "template" in change else {}
    assert np.array(k(**_launch_args(**edge))[0]).tolist() == [2.0, 4.0, 6.0]


@pytest.mark.parametrize("names,message", [
    (dict(input_names="a"), "input_names must be a list, not str"),
    (dict(output_names=("out", 3)), "output_names must hold str, not int"),
    (dict(input_names=["int"]), "input name 'int' of kernel 'named' is a reserved word"),
    (dict(output_names=["device"]), "output name 'device' of kernel 'named' is a reserved word"),
])
def test_parameter_names_are_checked_before_any_code_is_generated(names, message):
    # A bare str was taken letter by letter (or was a std::bad_cast), and a
    # reserved word broke the generated signature with a compiler error about
    # a line the user never wrote.
    args = dict(name="named", input_names=["a"], output_names=["out"], source="out[0] = 1;")
    args.update(names)
    error = TypeError if "must" in message else ValueError
    with pytest.raises(error) as e:
        k = mx.fast.metal_kernel(**args)
        k(inputs=[mx.array([1.0])], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
          output_dtypes=[mx.float32])
    assert message in str(e.value), str(e.value)


def test_an_allocation_past_memory_is_a_memory_error_saying_how_much():
    # MLX's CPU backend dies with SIGSEGV here; Alloy names the size and device.
    kept = mx.arange(8, dtype=mx.float32) * 2
    mx.eval(kept)
    with pytest.raises(MemoryError, match=r"\[malloc\] Unable to allocate 18446744056529682436 bytes \(16.0 EB\) "
                                          r"on the CPU"):
        mx.eval(mx.zeros((2**31 - 1, 2**31 - 1), stream=mx.cpu))
    assert np.array(kept).tolist() == [float(2 * i) for i in range(8)]


def _double_kernel():
    return mx.fast.metal_kernel(name="twice", input_names=["a"], output_names=["out"],
                                source="uint i = thread_position_in_grid.x; out[i] = a[i] * 2;")


def _launch_args(**change):
    args = dict(inputs=[mx.array([1.0, 2.0, 3.0])], grid=(3, 1, 1), threadgroup=(3, 1, 1), output_shapes=[(3,)],
                output_dtypes=[mx.float32])
    args.update(change)
    return args


@pytest.mark.parametrize("change,message", [
    (dict(inputs=mx.array([1.0])), "inputs must be a list"),
    (dict(output_shapes=(3,)), "each output shape must be a list"),
    (dict(output_dtypes=["float32"]), "output_dtypes must hold Dtypes"),
    (dict(grid=3), "grid must be a tuple of 3 integers"),
    (dict(template=[("T",)]), "template entries must be (name, value) tuples"),
    (dict(template=[("T", 1.5)]), "template value for 'T'"),
    (dict(stream="gpu"), "stream must be a Stream, a Device or None"),
    (dict(init_value="zero"), "must be real number"),
    (dict(colour="red"), "unexpected keyword argument 'colour'"),
])
def test_launch_argument_of_the_wrong_type_is_a_type_error_naming_it(change, message):
    k = _double_kernel()
    with pytest.raises(TypeError) as e:
        k(**_launch_args(**change))
    assert message in str(e.value)


def test_launch_takes_keywords_only_and_names_a_missing_one():
    k = _double_kernel()
    assert k.__name__ == "twice"
    args = _launch_args()
    with pytest.raises(TypeError, match="keyword arguments only"):
        k(args["inputs"])
    del args["grid"]
    with pytest.raises(TypeError, match="missing required keyword argument 'grid'"):
        k(**args)
    # Keywords spelled by a string built at run time (not interned) still match.
    args = {"".join(["thread", "group"]) if key == "threadgroup" else key: v for key, v in _launch_args().items()}
    assert np.array(k(**args)[0]).tolist() == [2.0, 4.0, 6.0]


def test_launch_accepts_tuples_numpy_inputs_and_a_size_that_launches_itself():
    k = _double_kernel()
    inner = []

    class Three:
        # Reading this size runs a launch of the same kernel on the same
        # thread, in the middle of the outer launch's argument conversion.
        def __index__(self):
            inner.append(k(**_launch_args(inputs=[mx.array([5.0, 6.0, 7.0])]))[0])
            return 3

    out = k(inputs=(mx.array([1.0, 2.0, 3.0]),), grid=[Three(), 1, 1], threadgroup=(3, 1, 1),
            output_shapes=[[Three()]], output_dtypes=(mx.float32,))[0]
    assert np.array(out).tolist() == [2.0, 4.0, 6.0]
    assert [np.array(o).tolist() for o in inner] == [[10.0, 12.0, 14.0]] * 2
    out = k(**_launch_args(inputs=[np.array([1.5, 2.5, 3.5], np.float32)], ensure_row_contiguous=True,
                           verbose=False, stream=None, template=None, init_value=None))[0]
    assert np.array(out).tolist() == [3.0, 5.0, 7.0]


def test_launch_reads_an_argument_list_that_grows_while_it_is_read():
    k = _double_kernel()
    shapes = []

    class GrowsTheList:
        def __index__(self):
            shapes.append((3,))  # one more output shape than names
            return 3

    shapes.append([GrowsTheList()])
    with pytest.raises(ValueError, match="output shapes and dtypes"):
        k(**_launch_args(output_shapes=shapes))
    # The launcher's reused storage is intact for the next call.
    assert np.array(k(**_launch_args())[0]).tolist() == [2.0, 4.0, 6.0]


def test_bad_math_mode_is_value_error():
    with pytest.raises(ValueError):
        mx.fast.metal_kernel(name="m", input_names=[], output_names=["out"], source="",
                             compile_options={"math_mode": "turbo"})


def test_fast_math_mode_defines_fast_math():
    src = """
    #ifdef __FAST_MATH__
    out[0] = 1;
    #else
    out[0] = 0;
    #endif
    """
    for mode, want in (("fast", 1), ("safe", 0)):
        k = mx.fast.metal_kernel(name="fm", input_names=[], output_names=["out"], source=src,
                                 compile_options={"math_mode": mode})
        o = k(inputs=[], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)], output_dtypes=[mx.int32])[0]
        assert np.array(o).tolist() == [want], mode



def test_fast_math_kernel_leaves_subnormals_to_later_code(rng):
    # g++ links a -ffast-math shared object with crtfastmath, whose
    # constructor sets flush-to-zero in the loading thread for good: later
    # safe kernels (and numpy) then gave 0 for sigmoid(-88) = 6.05e-39. A
    # new source each run, so this process really loads the fast kernel.
    tag = int(rng.integers(1 << 30))
    src = f"uint i = thread_position_in_grid.x; out[i] = 1.0f / (1.0f + metal::precise::exp(-a[i])) + {tag} * 0.0f;"
    x = mx.array(np.array([-88.0, -87.5], np.float32))
    want = (1 / (1 + np.exp(-np.array([-88.0, -87.5])))).astype(np.float32)
    assert 0 < want[0] < np.finfo(np.float32).tiny  # subnormal in float32

    def sigmoid(mode):
        k = mx.fast.metal_kernel(name=f"sigmoid_{mode}", input_names=["a"], output_names=["out"], source=src,
                                 compile_options={"math_mode": mode})
        return np.array(k(inputs=[x], grid=(2, 1, 1), threadgroup=(2, 1, 1), output_shapes=[(2,)],
                          output_dtypes=[mx.float32], init_value=float("nan"))[0])

    sigmoid("fast")
    np.testing.assert_allclose(sigmoid("safe"), want, rtol=4e-7, atol=0)
    assert np.float32(want[0]) * np.float32(0.5) > 0  # numpy on this thread too

def test_metal_kernel_without_vjp_names_the_kernel_when_differentiated():
    k = mx.fast.metal_kernel(name="nograd", input_names=["a"], output_names=["out"],
                             source="uint i = thread_position_in_grid.x; out[i] = a[i] * 2;")

    def f(a):
        return k(inputs=[a], grid=(3, 1, 1), threadgroup=(3, 1, 1), output_shapes=[(3,)],
                 output_dtypes=[mx.float32])[0].sum()

    with pytest.raises(ValueError) as e:
        mx.grad(f)(mx.array([1.0, 2.0, 3.0]))
    assert "nograd" in str(e.value)


def test_seed_grid_sample_large_buffers_with_samples_outside(rng, monkeypatch):
    # The seed's kernel loads all four corners before masking them, so it reads
    # up to a row outside `x`; large buffers carry guard zones for that.
    import grid_sample as seed
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")  # as written: the reads outside are the point
    x_np = rng.standard_normal((2, 64, 64, 32)).astype(np.float32)
    g_np = (rng.random((2, 16, 16, 2)) * 2.6 - 1.3).astype(np.float32)
    out = seed.grid_sample(mx.array(x_np), mx.array(g_np))
    # The kernel rounds each sample coordinate to float32 at a scale of W = 64
    # pixels (about 4e-6 of a pixel), which moves a bilinear weight by as much;
    # times |x| of up to ~5 and four corners, errors reach 1e-4 before any bug
    # would (an unwritten or misplaced element is off by O(1)).
    np.testing.assert_allclose(np.array(out), grid_sample_np(x_np, g_np), rtol=1e-5, atol=1e-4)
