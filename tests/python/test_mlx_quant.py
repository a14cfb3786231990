"""Quantization family against real MLX: quantize, dequantize,
quantized_matmul, gather_qmm, gather_mm, to_fp8, from_fp8.

Packing is compared exactly (packed words, scales, biases): checkpoints
quantized by MLX must load bit for bit. Dequantized values are exact too;
matmuls get float tolerance.
"""
import numpy as np
import pytest

import alloy.core as mx
from mlx_oracle import Dt, random_array, same, same_error, to_numpy

AFFINE = [(gs, bits) for gs in (32, 64, 128) for bits in (1, 2, 3, 4, 5, 6, 8)]
FLOATS = ["float32", "float16", "bfloat16"]
EXACT = dict(rtol=0, atol=0)


def weights(rng, shape, dtype="float32"):
    # Spread magnitudes so groups see very different ranges (and scales).
    scale = np.exp(rng.uniform(-4, 3, shape[:-1] + (1,)))
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(random_array(rng, (1,), dtype).dtype)


@pytest.mark.parametrize("gs,bits", AFFINE)
def test_affine_quantize_is_bit_exact(rng, gs, bits):
    dtype = FLOATS[rng.integers(len(FLOATS))]
    w = weights(rng, (3, 2 * 128), dtype)
    same(lambda m, w: m.quantize(w, gs, bits), w, **EXACT)
    same(lambda m, w: m.quantize(w, group_size=gs, bits=bits, mode="affine"), w, **EXACT)
    # dequantize of MLX's own packing (the values a checkpoint holds).
    same(lambda m, w: m.dequantize(*m.quantize(w, gs, bits), gs, bits), w, **EXACT)


def test_affine_defaults_batches_and_special_groups(rng):
    w = weights(rng, (2, 3, 128))
    same("quantize", w, **EXACT)
    # Constant and all-zero groups (zero range, zero edge).
    w[0, 0, :64] = 1.5
    w[1, 2, 64:] = 0.0
    same(lambda m, w: m.quantize(w, 64, 3), w, **EXACT)
    same(lambda m, w: m.quantize(w, 64, 1), w, **EXACT)
    same("quantize", w.astype(np.float64), **EXACT)


@pytest.mark.parametrize("dtype", [None, "float16", "bfloat16", "float32"])
def test_dequantize_dtypes(rng, dtype):
    w = weights(rng, (4, 64))
    def f(m, w):
        q, s, b = m.quantize(w, 32, 4)
        kw = {} if dtype is None else {"dtype": getattr(m, dtype)}
        # Mixed scale/bias types show where each step rounds.
        return m.dequantize(q, s.astype(m.float16), b, 32, 4, **kw)

    same(f, w, **EXACT)


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8", "nvfp4"])
def test_fp_modes_are_bit_exact(rng, mode):
    for dtype in FLOATS:
        w = weights(rng, (4, 128), dtype)
        w[0, :32] = 0.0
        same(lambda m, w: m.quantize(w, mode=mode), w, **EXACT)
        same(lambda m, w: m.dequantize(*m.quantize(w, mode=mode), mode=mode), w, **EXACT)
        same(lambda m, w: m.dequantize(*m.quantize(w, mode=mode), mode=mode, dtype=m.float32), w, **EXACT)


def test_nvfp4_groups_of_16(rng):
    # K a multiple of 16 but not of 32 (MLX 0.32.4 packs it when the total
    # number of groups is even).
    for dtype in FLOATS:
        w = weights(rng, (4, 48), dtype)
        same(lambda m, w: m.quantize(w, mode="nvfp4"), w, **EXACT)
        same(lambda m, w: m.dequantize(*m.quantize(w, mode="nvfp4"), mode="nvfp4"), w, **EXACT)


def test_fp4_ties_and_signed_zero():
    # Every multiple of 1/64 in [-6, 6] with the scale pinned to 1 by a 6.
    v = np.arange(-6, 6.01, 1 / 64, dtype=np.float32)
    w = np.zeros((len(v), 32), np.float32)
    w[:, 0], w[:, 1] = 6.0, v
    same(lambda m, w: m.quantize(w, mode="mxfp4"), w, **EXACT)


def float32_dot_atol(x, w, transpose=True):
    """Absolute tolerance for a float32 quantized product: MLX sums
    scale * dot(q, x) + bias * sum(x) per group, Alloy in another order, so
    with cancellation the results differ by a few float32 ulps of the sum of
    |terms| (seen: 7.6e-6 on a result of 0.147), not of the result."""
    x64, w64 = np.abs(np.asarray(x, np.float64)), np.abs(np.asarray(w, np.float64))
    return max(2e-6, 1e-6 * float(np.max(x64 @ (w64.T if transpose else w64))))


@pytest.mark.parametrize("transpose", [True, False])
def test_quantized_matmul(rng, transpose):
    for dtype in FLOATS:
        gs, bits = AFFINE[rng.integers(len(AFFINE))]
        k, n = 128, 96
        w = weights(rng, (n, k) if transpose else (k, n), dtype)
        x = random_array(rng, (2, 5, k if transpose else k), dtype)
        if not transpose:
            x = random_array(rng, (2, 5, k), dtype)
            w = weights(rng, (k, 128), dtype)

        def f(m, x, w):
            return m.quantized_matmul(x, *m.quantize(w, gs, bits), transpose=transpose, group_size=gs, bits=bits)

        same(f, x, w, atol=float32_dot_atol(x, w, transpose) if dtype == "float32" else None)
    x = random_array(rng, (128,))
    w = weights(rng, (2, 128))
    same(lambda m, x, w: m.quantized_matmul(x, *m.quantize(w)), x, w, atol=float32_dot_atol(x, w))


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8", "nvfp4"])
def test_quantized_matmul_fp_modes(rng, mode):
    x = random_array(rng, (3, 64), "bfloat16")
    w = weights(rng, (5, 64))

    def f(m, x, w):
        return m.quantized_matmul(x, *m.quantize(w, mode=mode), mode=mode)

    # float32 activations: MLX's values within float tolerance.
    same(f, x.astype(np.float32), w)
    # bfloat16 activations: MLX's CPU kernel sums in bfloat16, so over 64
    # products with cancellation it can be off by several units (seen: -19.25
    # where the exact sum is -22.77). Shape and dtype come from MLX; values are
    # checked against the float64 product of x and the dequantized weights
    # (dequantize is compared bit for bit above).
    import mlx.core as mlx_core
    want = f(mlx_core, mlx_core.array(x), mlx_core.array(w))
    got = f(mx, mx.array(x), mx.array(w))
    assert got.shape == want.shape and str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    w_dq = to_numpy(mx.dequantize(*mx.quantize(mx.array(w), mode=mode), mode=mode)).astype(np.float64)
    exact = x.astype(np.float64) @ w_dq.T
    scale = np.abs(x.astype(np.float64)) @ np.abs(w_dq).T
    # bfloat16 result rounding (2^-8) plus a float32 sum's error, per element.
    assert np.all(np.abs(to_numpy(got) - exact) <= 2.0**-8 * np.abs(exact) + 1e-5 * scale + 1e-6), (
        f"{mode}: max error {np.max(np.abs(to_numpy(got) - exact))}")


def test_quantized_matmul_result_dtype_promotes(rng):
    w = weights(rng, (4, 64))
    for xd in ["float16", "int32", "bfloat16"]:
        x = random_array(rng, (3, 64), xd)
        same(lambda m, x, w: m.quantized_matmul(x, *m.quantize(w)), x, w)


def test_quantized_matmul_grad_wrt_x(rng):
    x, w, cot = random_array(rng, (3, 64)), weights(rng, (5, 64)), random_array(rng, (3, 5))

    def f(m, x, w, cot):
        q = m.quantize(w)
        return m.grad(lambda x: (m.quantized_matmul(x, *q) * cot).sum())(x)

    same(f, x, w, cot)


def test_gather_qmm(rng):
    x = random_array(rng, (4, 2, 64))
    w = weights(rng, (3, 6, 64))
    lhs = rng.integers(0, 4, (5,)).astype(np.uint32)
    rhs = rng.integers(0, 3, (5,)).astype(np.uint32)

    def f(m, x, w, lhs, rhs):
        return m.gather_qmm(x, *m.quantize(w, 32, 4), lhs_indices=lhs, rhs_indices=rhs, group_size=32, bits=4)

    same(f, x, w, lhs, rhs)
    same(lambda m, x, w, r: m.gather_qmm(x, *m.quantize(w), rhs_indices=r), x[:3], w, rhs[:3])


def test_quantize_errors(rng):
    w = weights(rng, (4, 64))
    same_error("quantize", w, 16, 4)
    same_error("quantize", w, 32, 7)
    same_error("quantize", w[0])
    same_error("quantize", np.zeros((4, 48), np.float32), 32)
    same_error("quantize", w.astype(np.int32))
    same_error("quantize", w, mode="foo")
    same_error("quantize", w, 64, 4, mode="mxfp4")
    same_error("quantize", w, 32, 4, mode="mxfp8")
    same_error("quantize", w, global_scale=np.float32(1.0))


def test_dequantize_and_matmul_errors(rng):
    w = weights(rng, (4, 64))
    q = lambda m, w: m.quantize(w)  # noqa: E731
    same_error(lambda m, w: m.dequantize(*q(m, w)[:2]), w)
    same_error(lambda m, w: m.dequantize(*q(m, w), 32), w)
    same_error(lambda m, w: m.dequantize(q(m, w)[0].astype(m.int32), *q(m, w)[1:]), w)
    same_error(lambda m, w: m.dequantize(*q(m, w), mode="mxfp4"), w)
    same_error(lambda m, w: m.quantized_matmul(m.ones((3, 63)), *q(m, w)), w)
    same_error(lambda m, w: m.quantized_matmul(m.ones((3, 64)), *q(m, w)[:2]), w)
    same_error(lambda m, w: m.quantized_matmul(m.ones((3, 64)), q(m, w)[0].astype(m.int32), *q(m, w)[1:]), w)
    same_error(lambda m, w: m.quantized_matmul(m.ones((3, 4)), *q(m, w), transpose=False, group_size=128), w)
    same_error(lambda m, w: m.quantized_matmul(m.ones((3, 64)), *q(m, w), mode="mxfp4"), w)


def test_gather_mm(rng):
    # MLX's CPU gather_mm evaluates float32 only.
    for dtype in ["float32"]:
        a, b = random_array(rng, (3, 4, 5), dtype), random_array(rng, (2, 5, 6), dtype)
        lhs = rng.integers(0, 3, (2, 1)).astype(np.int32)
        rhs = rng.integers(0, 2, (3,)).astype(np.uint32)
        same("gather_mm", a, b, lhs, rhs)
        same("gather_mm", a, b, lhs_indices=lhs[:, 0][:2])
        same("gather_mm", a, b, None, np.array([0, 1, 1], np.uint32), sorted_indices=True)
    same("gather_mm", random_array(rng, (5,)), random_array(rng, (2, 5, 6)), None, np.array([1, 0, 1], np.int32))
    same("gather_mm", random_array(rng, (2, 3, 4, 5)), random_array(rng, (5, 6)), np.array([[0, 5]], np.int32))


def test_gather_mm_grad(rng):
    a, b = random_array(rng, (3, 4, 5)), random_array(rng, (2, 5, 6))
    lhs, rhs = np.array([0, 2, 2, 1], np.int32), np.array([1, 1, 0, 1], np.int32)
    cot = random_array(rng, (4, 4, 6))

    def f(m, a, b, cot):
        loss = lambda a, b: (m.gather_mm(a, b, m.array(lhs), m.array(rhs)) * cot).sum()  # noqa: E731
        return m.grad(loss, argnums=(0, 1))(a, b)

    same(f, a, b, cot)


def test_gather_mm_errors(rng):
    a, b = random_array(rng, (3, 4, 5)), random_array(rng, (2, 5, 6))
    same_error("gather_mm", a, b)
    same_error("gather_mm", a, b, np.array([0.0, 2.0], np.float32))
    same_error("gather_mm", a, random_array(rng, (2, 4, 6)), np.array([0, 2], np.int32))
    same_error("gather_mm", a.astype(np.int32), b.astype(np.int32), np.array([0, 1], np.int32))


def test_fp8_round_trip(rng):
    special = np.array([0.0, -0.0, 1.0, 448.0, 464.0, 465.0, 500.0, -1000.0, np.nan, np.inf, -np.inf, 2.0**-10,
                        2.0**-9, 3 * 2.0**-11, 1e-30, 1.0625, 1.1875], np.float32)
    v = np.concatenate([special, (rng.standard_normal(2000) * np.exp(rng.uniform(-12, 7, 2000))).astype(np.float32)])
    for dtype in ["float32", "float16", "bfloat16"]:
        same("to_fp8", v.astype(np.float32).astype(random_array(rng, (1,), dtype).dtype))
    codes = np.arange(256, dtype=np.uint8)
    same("from_fp8", codes)
    for dtype in ["float32", "float16", "bfloat16"]:
        same("from_fp8", codes, Dt(dtype), **EXACT)
    same("from_fp8", codes, dtype=Dt("float32"))
    same_error("to_fp8", np.array([1, 2], np.int32))
    same_error("from_fp8", np.array([1.0], np.float32))
    same_error("from_fp8", codes, Dt("int32"))


def test_segmented_mm(rng):
    a, b = random_array(rng, (3, 10)), random_array(rng, (10, 4))
    segs = np.sort(rng.integers(0, 11, (4, 2)), axis=1).astype(np.uint32)
    segs[0] = [2, 2]  # an empty segment gives zeros
    same("segmented_mm", a, b, segs)
    same("segmented_mm", a, b, segments=segs[None, :2].astype(np.int32))
    same("segmented_mm", a, b, segs[0] * 0 + np.array([0, 10], np.uint32))
    same_error("segmented_mm", a, b, segs.astype(np.float32))
    same_error("segmented_mm", np.stack([a, a]), b, segs)
    same_error("segmented_mm", a.astype(np.int32), b.astype(np.int32), segs)


def test_segmented_mm_grad(rng):
    # MLX has no vjp for segmented_mm; the reference is the sum of the slices' products.
    a, b, cot = random_array(rng, (3, 10)), random_array(rng, (10, 4)), random_array(rng, (2, 3, 4))
    segs = [(0, 4), (3, 10)]
    loss = lambda a, b: (mx.segmented_mm(a, b, mx.array(segs, mx.uint32)) * mx.array(cot)).sum()  # noqa: E731
    ga, gb = mx.grad(loss, argnums=(0, 1))(mx.array(a), mx.array(b))
    want_a, want_b = np.zeros_like(a), np.zeros_like(b)
    for c, (lo, hi) in zip(cot, segs):
        want_a[:, lo:hi] += c @ b[lo:hi].T
        want_b[lo:hi] += a[:, lo:hi].T @ c
    np.testing.assert_allclose(to_numpy(ga), want_a, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(to_numpy(gb), want_b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bs", [32, 64])
def test_block_masked_mm(rng, bs):
    # MLX's CPU evaluates float32 only.
    m_, k, n = 70, 100, 40
    a, b = random_array(rng, (2, m_, k)), random_array(rng, (k, n))
    blocks = lambda r, c: (-(-r // bs), -(-c // bs))  # noqa: E731
    mo, ml, mr = (rng.random(blocks(*sh)) < 0.6 for sh in [(m_, n), (m_, k), (k, n)])
    same("block_masked_mm", a, b, bs, mo, ml, mr)
    same("block_masked_mm", a, b, block_size=bs, mask_lhs=ml)
    same("block_masked_mm", a, b, bs, mask_out=rng.random(blocks(m_, n)).astype(np.float32),
         mask_rhs=rng.random(blocks(k, n)).astype(np.float32))
    same("block_masked_mm", a, b, bs)
    # A dropped block contributes nothing, even an infinity.
    a[0, 0, 0] = np.inf
    ml[0, 0] = False
    same("block_masked_mm", a, b, bs, None, ml)
    same_error("block_masked_mm", a, b[:30], bs, mo)
    same_error("block_masked_mm", a, b, bs, mo[:1, :1][:0])
    same_error("block_masked_mm", np.ones((m_, k), np.int32), np.ones((k, n), np.int32), bs)


def test_nvfp4_global_scale(rng):
    for dtype in FLOATS:
        w = weights(rng, (8, 128), dtype)
        g = np.array(np.abs(w.astype(np.float32)).max() * rng.uniform(0.3, 2.0), np.float32)
        same(lambda m, w, g: m.quantize(w, mode="nvfp4", global_scale=g), w, g, **EXACT)
        same(lambda m, w, g: m.dequantize(*m.quantize(w, mode="nvfp4", global_scale=g), mode="nvfp4",
                                          global_scale=g, dtype=m.float32), w, g, **EXACT)
    same_error(lambda m, w: m.quantize(w, mode="nvfp4", global_scale=m.array([1.0, 2.0])), w)
    same_error(lambda m, w: m.quantize(w, mode="nvfp4", global_scale=m.array(1)), w)
