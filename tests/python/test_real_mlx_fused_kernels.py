"""mlx-lm's fused Metal kernels (mlx_lm/kernels/: q/k norms with and without
RoPE, the norm and sigmoid gate, expert routing, norm-add-norm, the expert
combine) and BitNet's packed ternary matmuls (mlx-lm's
models/bitlinear_layers.py, mlx-vlm's models/bitnet/bitlinear.py), loaded
unchanged from the installed packages with their imports pointed at Alloy (real_mlx_code.py), on fresh random inputs against float64
references (tests/pyshared/mlx_lm_fused_kernels.py). They have no ops
fallback: muse_spark and BitNet models call them on every device."""
import numpy as np
import pytest

from mlx_lm_fused_kernels import CASES, MODULES, check
from real_mlx_code import load


@pytest.fixture(scope="module")
def kernels():
    """The six files as Alloy loads them, and the `mx` they see."""
    mods = {name: load(module, "alloy", kernels=True) for name, module in MODULES.items()}
    return mods, mods["qk_norm"].mx


@pytest.mark.parametrize("case_id,case,kwargs", CASES, ids=[c[0] for c in CASES])
def test_fused_kernel_matches_float64_reference(kernels, rng, case_id, case, kwargs):
    mods, mx = kernels
    before = sum(m.__port_loader__.launches() for m in mods.values())
    check(case, kwargs, mods, mx, rng)
    # The file's own metal_kernel ran (no fallback exists to take instead).
    assert sum(m.__port_loader__.launches() for m in mods.values()) > before


def test_norm_add_norm_runs_its_threads_as_regions_on_the_cpu(kernels, rng, monkeypatch, capfd):
    """norm_add_norm's kernels sum over the group in `block_sum_once`, a
    helper of their header (simd_sum, a barrier, simd_sum again). On the CPU
    the helper is written out at its calls (msl/cpu_inline_helpers.h), so the
    kernel runs as regions rather than fibers; it gives the fibers' numbers
    (to float rounding) and the float64 reference's."""
    mods, mx = kernels
    m = mods["norm_add_norm"]
    mx.set_default_device(mx.cpu)
    rows, D = 6, 1000
    tg = m.row_threads(D)
    assert tg > 32  # the helper's barrier runs
    f32 = np.float32
    branch, stream = (rng.standard_normal((rows, D)).astype(f32) for _ in range(2))
    alpha, beta, post_w, pre_w = (rng.standard_normal(D).astype(f32) for _ in range(4))
    inputs = [mx.array(a) for a in (branch, stream, alpha, beta, post_w)] + [mx.array(f32(1e-5)), mx.array(pre_w),
                                                                              mx.array(f32(1e-6))]

    def run(mode):
        monkeypatch.setenv("ALLOY_CPU_SYNC", mode)
        capfd.readouterr()
        outs = m._norm_add_norm_kernel(inputs=inputs, template=[("T", mx.float32), ("D", D), ("TG", tg),
                                                                 ("POST_SCALE", True)],
                                       grid=(rows * tg, 1, 1), threadgroup=(tg, 1, 1),
                                       output_shapes=[(rows, D)] * 2, output_dtypes=[mx.float32] * 2, verbose=True)
        mx.eval(outs)
        return capfd.readouterr().out.split("translated for the CPU")[-1], [np.array(o) for o in outs]

    (text, got), (fiber_text, fibers) = run("auto"), run("fibers")
    assert "run_regions(" in text and "run_regions(" not in fiber_text
    assert "// block_sum_once is written out at its 2 calls in the body" in text
    v = branch.astype(np.float64) * post_w
    new_stream = alpha * stream.astype(np.float64) + beta * v / np.sqrt((v * v).mean(axis=1, keepdims=True) + 1e-5)
    normed = new_stream / np.sqrt((new_stream ** 2).mean(axis=1, keepdims=True) + 1e-6) * pre_w
    # Regions and fibers may add a group's partial sums in different orders, so
    # the two differ by float32 rounding of the terms, which cancel in places
    # (alpha*stream against the normalised branch): the bound scales with the
    # terms' sizes, and the second output carries the first's through pre_w/rms.
    eps = np.finfo(f32).eps
    terms = np.abs(alpha * stream.astype(np.float64)) + np.abs(beta * v / np.sqrt((v * v).mean(axis=1, keepdims=True)
                                                                                    + 1e-5))
    stream_bound = 16 * eps * terms
    normed_bound = stream_bound * np.abs(pre_w) / np.sqrt((new_stream ** 2).mean(axis=1, keepdims=True) + 1e-6) \
        + 16 * eps * np.abs(normed)
    for out, fib, want, bound in zip(got, fibers, (new_stream, normed), (stream_bound, normed_bound)):
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
        excess = np.abs(out.astype(np.float64) - fib) - bound
        assert excess.max() <= 0, f"regions and fibers differ beyond rounding at {np.unravel_index(excess.argmax(), excess.shape)}"
