"""Quantized matmul kernels of two public speculative-decoding packages, run
unchanged on Alloy: mtplx 2.12.2 (`nax_verify.py`, `verify_kernels.py`) and
dflash-mlx 0.1.8 (`verify_qmm.py`). Their GEMVs read weights as `vec<T, 8>`,
and dflash's pipelined variant stages tiles with a `#define` of the kernel
body that names locals across barriers: both failed to compile before.

Each call must launch the package's Metal kernel (its loader counts the
launches) and match a float64 product of the same rounded activations and
the weights dequantized by real MLX.
"""
import numpy as np
import pytest

import alloy.core as ax
import mlx.core as mx
from real_mlx_code import load

CASES_MTPLX = [
    # (function, M, K, N, bits, group size, extra keyword arguments)
    ("nax_qmm_m4", 4, 256, 64, 4, 64, {}),          # m4_ksplit_np: vec<T, 8> weights
    ("vk_qmm_m4_ksplit", 4, 256, 64, 6, 64, {"bits": 6}),
    ("vk_qmm_m6_ksplit", 6, 256, 64, 4, 32, {"bits": 4}),
]


def quantized_problem(rng, M, K, N, bits, group_size, dtype):
    """Activations, packed weights, scales and biases in `dtype`, and the
    float64 reference product."""
    w = (rng.standard_normal((N, K)) * 0.05).astype(np.float32)
    x = rng.standard_normal((M, K)).astype(np.float32)
    with mx.stream(mx.cpu):
        d = getattr(mx, dtype)
        wq, scales, biases = mx.quantize(mx.array(w), group_size=group_size, bits=bits)
        scales, biases = scales.astype(d), biases.astype(d)
        w64 = np.array(mx.dequantize(wq, scales, biases, group_size=group_size, bits=bits).astype(mx.float32))
        x32 = np.array(mx.array(x).astype(d).astype(mx.float32))
        parts = [np.array(wq), np.array(scales.astype(mx.float32)), np.array(biases.astype(mx.float32))]
    want = x32.astype(np.float64) @ w64.astype(np.float64).T
    a = lambda t: ax.array(t).astype(getattr(ax, dtype))  # noqa: E731
    return a(x32), ax.array(parts[0]), a(parts[1]), a(parts[2]), want


def check(got, want, dtype):
    got = np.array(got.astype(ax.float32)).astype(np.float64)
    assert got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max()))
    tol = (0.004 if dtype == "float16" else 0.02) * scale
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, atol=tol, rtol=0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", CASES_MTPLX, ids=[c[0] + f"_{c[4]}bit" for c in CASES_MTPLX])
def test_mtplx_quantized_verify_kernels(rng, monkeypatch, dtype, case):
    fn, M, K, N, bits, gs, extra = case
    monkeypatch.setenv("MTPLX_NAX_M4_IMPL", "legacy")  # its m4_ksplit_np kernel (the file's default)
    module = load("mtplx.nax_verify" if fn.startswith("nax") else "mtplx.verify_kernels", "alloy", kernels=True)
    x, wq, s, b, want = quantized_problem(rng, M, K, N, bits, gs, dtype)
    before = module.__port_loader__.launches()
    got = getattr(module, fn)(x, wq, s, b, group_size=gs, **extra)
    assert module.__port_loader__.launches() > before, f"{fn}: the Metal kernel did not run"
    check(got, want, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("variant,M,K,bits,gs", [("auto", 4, 256, 4, 64), ("mma2big_pipe", 16, 512, 4, 128),
                                                 ("mma2big_pipe", 16, 512, 8, 64)])
def test_dflash_verify_matmul_variants(rng, monkeypatch, dtype, variant, M, K, bits, gs):
    # The file picks its kernel from the environment when it is loaded.
    monkeypatch.setenv("DFLASH_VERIFY_QMM", "1")
    monkeypatch.setenv("DFLASH_VERIFY_VARIANT", variant)
    monkeypatch.setenv("DFLASH_VERIFY_QMM_KPARTS", "2")
    module = load("dflash_mlx.verify_qmm", "alloy", kernels=True)
    x, wq, s, b, want = quantized_problem(rng, M, K, 64, bits, gs, dtype)
    before = module.__port_loader__.launches()
    got = module.verify_matmul(x, wq, s, b, transpose=True, group_size=gs, bits=bits)
    launched = module.__port_loader__.kernels_launched()
    assert module.__port_loader__.launches() > before, f"{variant}: the Metal kernel did not run"
    assert any(("pipe" if variant == "mma2big_pipe" else "ksplit") in name for name in launched), launched
    check(got, want, dtype)
