"""Helpers of the ZMLX kernel tests on real MLX with alloy.mlx
(test_zmlx_kernels_more.py, test_zmlx_moe.py): a call that must launch
ZMLX's kernel (and Alloy's), inputs, float64 references and tolerances."""
import numpy as np

import mlx.core as mx

import alloy.mlx
from zmlx.cache import GLOBAL_KERNEL_CACHE


def _run_counts():
    return {key: GLOBAL_KERNEL_CACHE.get(key).stats.run_count for key in GLOBAL_KERNEL_CACHE.keys()}


def launched(prefixes, fn, *args, **kwargs):
    """fn(*args, **kwargs), asserting that ZMLX launched a kernel whose name
    starts with each of `prefixes`, and that every kernel it launched is
    Alloy's."""
    if isinstance(prefixes, str):
        prefixes = (prefixes,)
    before = _run_counts()
    out = fn(*args, **kwargs)
    names = []
    for key in GLOBAL_KERNEL_CACHE.keys():
        k = GLOBAL_KERNEL_CACHE.get(key)
        if k.stats.run_count > before.get(key, 0):
            names.append(key.name)
            assert isinstance(k._kernel, alloy.mlx._ext.MetalKernel), f"{key.name} is not Alloy's kernel"
    for p in prefixes:
        assert any(n.startswith(p) for n in names), f"no kernel {p}* launched (launched: {names})"
    return out


def f64(a):
    if a.dtype in (mx.bfloat16, mx.float16):
        a = a.astype(mx.float32)
    return np.array(a).astype(np.float64)


def arr(rng, *shape, dtype=mx.float32, scale=1.0, shift=0.0):
    return mx.array((shift + scale * rng.standard_normal(shape)).astype(np.float32)).astype(dtype)


# Relative tolerance of one result rounded to the dtype (plus float32 work).
TOL = {mx.float32: 2e-5, mx.float16: 2e-3, mx.bfloat16: 1.6e-2}


def close(got, want, dtype=None, tol=None, shape=None):
    """got (an MLX array) against want (float64 numpy), with an absolute
    tolerance scaled by want's magnitude."""
    mx.eval(got)
    dtype = dtype if dtype is not None else got.dtype
    if dtype is not None:
        assert got.dtype == dtype, (got.dtype, dtype)
    want = np.asarray(want, dtype=np.float64)
    assert tuple(got.shape) == (shape if shape is not None else want.shape), (got.shape, want.shape)
    t = tol if tol is not None else TOL[dtype]
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(f64(got).reshape(want.shape), want, rtol=t, atol=t * scale)


def sigmoid64(x):
    return 1.0 / (1.0 + np.exp(-x))


def silu64(x):
    return x * sigmoid64(x)


def gelu_tanh64(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


def softmax64(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


FLOATS = [mx.float32, mx.float16, mx.bfloat16]


def check_topk(w, idx, scores, k, weights_of, ordered, tol=1e-5):
    """idx selects the k largest of scores (float64) in each row (by value:
    robust to near-ties), in descending order if `ordered` ("desc") or
    ascending ("asc"); w equals weights_of(selected indices)."""
    mx.eval(w, idx)
    assert idx.dtype == mx.uint32 and idx.shape == w.shape == scores.shape[:-1] + (k,)
    i = np.array(idx).astype(np.int64).reshape(-1, k)
    s = scores.reshape(-1, scores.shape[-1])
    for r in range(i.shape[0]):
        assert len(set(i[r])) == k, i[r]
    chosen = np.take_along_axis(s, i, -1)
    np.testing.assert_allclose(np.sort(chosen, -1), np.sort(s, -1)[:, -k:], rtol=0, atol=1e-6)
    if ordered == "desc":
        assert np.all(np.diff(chosen, axis=-1) <= 1e-6)
    elif ordered == "asc":
        assert np.all(np.diff(chosen, axis=-1) >= -1e-6)
    close(w, weights_of(i).reshape(w.shape), tol=tol)


def gather_setup(rng, B, K, E, Din, Dout, dtype):
    act = arr(rng, B, K, Din, dtype=dtype)
    W = arr(rng, E, Din, Dout, dtype=dtype, scale=Din ** -0.5)
    gate = mx.softmax(arr(rng, B, K), axis=-1).astype(dtype)
    idx = mx.array(np.stack([rng.choice(E, K, replace=False) for _ in range(B)]).astype(np.uint32))
    return act, W, gate, idx


def deepseek_scores(logits, bias, n_group, topk_group):
    aff = sigmoid64(logits)
    s = aff + bias
    if n_group > 1:
        R, D = s.shape
        grouped = s.reshape(R, n_group, D // n_group)
        gscore = np.sort(grouped, -1)[..., -2:].sum(-1)
        keep = np.zeros((R, n_group), dtype=bool)
        np.put_along_axis(keep, np.argsort(-gscore, -1, kind="stable")[:, :topk_group], True, -1)
        s = np.where(np.repeat(keep, D // n_group, -1), s, 0.0)
    return aff, s
