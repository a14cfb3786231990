"""mx.fast's fused ops against real MLX: rms_norm, layer_norm, rope,
scaled_dot_product_attention, cross_entropy; values, dtypes, gradients and
errors."""
import numpy as np
import pytest

from mlx_oracle import random_array, same, same_error

FLOATS = ["float32", "float16", "bfloat16"]


def _grad(fn, argnums):
    """fn(m, *arrays) -> loss-shaped array; returns the gradients in both frameworks."""
    def run(m, *arrays):
        def loss(*a):
            y = fn(m, *a)
            return (y.astype(m.float32) * m.sin(y.astype(m.float32))).sum()
        return m.grad(loss, argnums=argnums)(*arrays)
    return run


# ---- rms_norm / layer_norm

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 16), (2, 3, 33)])
def test_rms_norm(rng, dtype, shape):
    x = random_array(rng, shape, dtype)
    w = random_array(rng, shape[-1:], dtype)
    same("fast.rms_norm", x, w, 1e-5)
    same("fast.rms_norm", x, None, eps=1e-3)
    same("fast.rms_norm", x=x, weight=w.astype(np.float32), eps=1e-5)  # promotes to float32


@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm(rng, dtype):
    x = random_array(rng, (3, 4, 24), dtype)
    w, b = random_array(rng, (24,), dtype), random_array(rng, (24,), dtype)
    same("fast.layer_norm", x, w, b, 1e-5)
    same("fast.layer_norm", x, None, None, 1e-5)
    same("fast.layer_norm", x, w, None, eps=1e-4)
    same("fast.layer_norm", x, None, b.astype(np.float32), 1e-5)  # bias cast to x's dtype without a weight
    same("fast.layer_norm", x, w, b.astype(np.float32), 1e-5)  # promoted with both


def test_norm_non_contiguous(rng):
    x = random_array(rng, (16, 6))  # transposed to (6, 16) inside
    w = random_array(rng, (32,))  # every other entry: 16
    same(lambda m, a, b: m.fast.rms_norm(a.T, b[::2], 1e-5), x, w)
    same(lambda m, a, b: m.fast.layer_norm(a.T, b[1::2], b[::2], 1e-5), x, w)


def test_norm_grads(rng):
    x, w, b = random_array(rng, (4, 20)), random_array(rng, (20,)), random_array(rng, (20,))
    same(_grad(lambda m, x, w: m.fast.rms_norm(x, w, 1e-5), (0, 1)), x, w, rtol=1e-4, atol=1e-5)
    same(_grad(lambda m, x, w, b: m.fast.layer_norm(x, w, b, 1e-5), (0, 1, 2)), x, w, b, rtol=1e-4, atol=1e-5)
    same(_grad(lambda m, x: m.fast.layer_norm(x, None, None, 1e-5), 0), x, rtol=1e-4, atol=1e-5)


def test_norm_errors(rng):
    x = random_array(rng, (2, 3, 8))
    same_error("fast.rms_norm", x, random_array(rng, (7,)), 1e-5)
    same_error("fast.rms_norm", x, random_array(rng, (1, 8)), 1e-5)
    same_error("fast.rms_norm", x.astype(np.int32), None, 1e-5)
    same_error("fast.rms_norm", np.array(1.0, np.float32), None, 1e-5)
    same_error("fast.layer_norm", x, random_array(rng, (8,)), random_array(rng, (7,)), 1e-5)
    same_error("fast.layer_norm", x.astype(np.int32), None, None, 1e-5)


# ---- rope

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("traditional", [False, True])
@pytest.mark.parametrize("shape,dims", [((2, 3, 7, 16), 16), ((1, 9, 12), 8), ((2, 2, 2, 5, 10), 6)])
def test_rope(rng, dtype, traditional, shape, dims):
    x = random_array(rng, shape, dtype)
    same("fast.rope", x, dims, traditional=traditional, base=10000.0, scale=1.0, offset=0)
    same("fast.rope", x, dims, traditional=traditional, base=500.0, scale=0.5, offset=37)


def test_rope_offsets_and_freqs(rng):
    x = random_array(rng, (3, 2, 6, 8))
    freqs = np.abs(random_array(rng, (4,))) + 0.5
    same("fast.rope", x, 8, traditional=False, base=None, scale=1.0, offset=2, freqs=freqs)
    same("fast.rope", x, 8, traditional=True, base=10000.0, scale=2.0, offset=np.array(5, np.int32))
    same("fast.rope", x, 8, traditional=False, base=10000.0, scale=1.0, offset=np.array([0, 3, 100], np.int32))
    same(lambda m, a: m.fast.rope(m.swapaxes(a, 1, 2), 4, traditional=False, base=1e4, scale=1.0, offset=1), x)


def test_rope_grad(rng):
    x = random_array(rng, (2, 2, 5, 12))
    same(_grad(lambda m, a: m.fast.rope(a, 8, traditional=False, base=1e4, scale=1.0, offset=3), 0), x,
         rtol=1e-4, atol=1e-5)
    same(_grad(lambda m, a: m.fast.rope(a, 12, traditional=True, base=1e4, scale=1.0, offset=0), 0), x,
         rtol=1e-4, atol=1e-5)


def test_rope_errors(rng):
    x = random_array(rng, (2, 3, 8))
    kw = dict(traditional=False, base=10000.0, scale=1.0, offset=0)
    same_error("fast.rope", x[0], 8, **kw)
    same_error("fast.rope", x, 7, **kw)
    same_error("fast.rope", x, 16, **kw)
    same_error("fast.rope", x.astype(np.int32), 8, **kw)
    same_error("fast.rope", x, 8, traditional=False, base=None, scale=1.0, offset=0)
    same_error("fast.rope", x, 8, freqs=np.ones(4, np.float32), **kw)
    same_error("fast.rope", x, 8, traditional=False, base=None, scale=1.0, offset=0, freqs=np.ones(3, np.float32))
    same_error("fast.rope", x, 8, traditional=False, base=1e4, scale=1.0, offset=np.array([1, 2, 3], np.int32))
    same_error("fast.rope", x, 8, traditional=False, base=1e4, scale=1.0, offset=np.array([1.5, 2], np.float32))
    same_error("fast.rope", x, 8, traditional=False, base=1e4, scale=1.0)  # offset is required


# ---- scaled_dot_product_attention

def _qkv(rng, b, nq, nkv, tq, tkv, d, dv, dtype="float32"):
    return (random_array(rng, (b, nq, tq, d), dtype), random_array(rng, (b, nkv, tkv, d), dtype),
            random_array(rng, (b, nkv, tkv, dv), dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (6, 1)])
@pytest.mark.parametrize("mask", [None, "causal", "bool", "additive"])
def test_sdpa(rng, dtype, heads, mask):
    nq, nkv = heads
    q, k, v = _qkv(rng, 2, nq, nkv, 5, 7, 8, 6, dtype)
    if mask == "bool":
        mask = rng.random((2, nq, 5, 7)) < 0.7
        mask[..., 0] = True  # every row keeps a key
    elif mask == "additive":
        mask = random_array(rng, (5, 7), dtype)
    same("fast.scaled_dot_product_attention", q, k, v, scale=0.35, mask=mask)


def test_sdpa_shapes_and_sinks(rng):
    q, k, v = _qkv(rng, 1, 4, 2, 9, 6, 8, 8)  # more queries than keys: causal aligns to the lower right
    same("fast.scaled_dot_product_attention", q, k, v, scale=0.3, mask="causal")
    sinks = random_array(rng, (4,))
    same("fast.scaled_dot_product_attention", q, k, v, scale=0.3, sinks=sinks)
    same("fast.scaled_dot_product_attention", q, k, v, scale=0.3, mask="causal", sinks=sinks)
    # Rows whose keys are all masked attend uniformly in MLX (no NaN).
    none_visible = np.zeros((9, 6), bool)
    none_visible[4:, :3] = True
    same("fast.scaled_dot_product_attention", q, k, v, scale=0.3, mask=none_visible)
    mask = rng.random((1, 1, 9, 6)) < 0.5
    mask[..., 0] = True
    same("fast.scaled_dot_product_attention", q, k, v, scale=0.3, mask=mask, sinks=sinks)
    # Mixed dtypes promote; an additive float16 mask promotes to float32.
    same("fast.scaled_dot_product_attention", q.astype(np.float16), k, v, scale=0.3,
         mask=random_array(rng, (9, 6), "float16"))
    same(lambda m, a, b, c: m.fast.scaled_dot_product_attention(m.swapaxes(a, 1, 2), b, c, scale=1.0),
         np.ascontiguousarray(q.transpose(0, 2, 1, 3)), k, v)


def test_sdpa_grads(rng):
    q, k, v = _qkv(rng, 2, 4, 2, 5, 6, 8, 4)
    sinks = random_array(rng, (4,))
    for mask in [None, "causal"]:
        same(_grad(lambda m, q, k, v, s: m.fast.scaled_dot_product_attention(q, k, v, scale=0.4, mask=mask,
                                                                             sinks=s), (0, 1, 2, 3)),
             q, k, v, sinks, rtol=1e-4, atol=1e-5)
    additive = random_array(rng, (2, 4, 5, 6))
    same(_grad(lambda m, q, k, v, a: m.fast.scaled_dot_product_attention(q, k, v, scale=0.4, mask=a), (0, 1, 2, 3)),
         q, k, v, additive, rtol=1e-4, atol=1e-5)


def test_sdpa_errors(rng):
    q, k, v = _qkv(rng, 2, 4, 2, 5, 7, 8, 6)
    f = "fast.scaled_dot_product_attention"
    same_error(f, q, k, v, scale=0.3, mask="bad")
    same_error(f, q, k, v, scale=0.3, mask=np.ones((5, 6), np.float32))
    same_error(f, q, k, v, scale=0.3, mask=np.ones((1, 2, 4, 5, 7), np.float32))
    h = [a.astype(np.float16) for a in (q, k, v)]
    same_error(f, *h, scale=0.3, mask=np.ones((5, 7), np.float32))
    same_error(f, *h, scale=0.3, sinks=np.ones(4, np.float32))
    same_error(f, q, k, v, scale=0.3, sinks=np.ones(2, np.float32))
    same_error(f, q[:, :3], k, v, scale=0.3)
    same_error(f, q[0], k[0], v[0], scale=0.3)
    same_error(f, q, k[..., :4], v, scale=0.3)
    same_error(f, q, k, v[:, :, :6], scale=0.3)
    same_error(f, *[a.astype(np.int32) for a in (q, k, v)], scale=0.3)
    same_error(f, q, k, v, scale=0.3, force_fused=True)


# ---- cross_entropy

@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(6, 11), (2, 3, 40), (7,)])
def test_cross_entropy(rng, dtype, shape):
    logits = random_array(rng, shape, dtype, low=-4, high=4)
    targets = rng.integers(0, shape[-1], size=shape[:-1]).astype(np.int32)
    # MLX's CPU reduces half logits in their own dtype; Alloy accumulates in
    # float32 (as MLX's fused GPU kernels do), so half inputs get their
    # dtype's tolerance rather than float32's.
    tol = {"float16": 4e-3, "bfloat16": 3e-2}.get(dtype)
    same("fast.cross_entropy", logits, targets, rtol=tol, atol=tol)
    same("fast.cross_entropy", logits, targets.astype(np.uint8), rtol=tol, atol=tol)


def test_cross_entropy_grad_and_errors(rng):
    logits = random_array(rng, (5, 9))
    targets = rng.integers(0, 9, size=(5,)).astype(np.int32)
    same(lambda m, a, t: m.grad(lambda z: m.fast.cross_entropy(z, t).sum())(a), logits, targets,
         rtol=1e-5, atol=1e-6)
    same(lambda m, a, t: m.fast.cross_entropy(a.T, t), np.ascontiguousarray(logits.T), targets)
    same_error("fast.cross_entropy", logits, targets[:3])
    same_error("fast.cross_entropy", logits, targets.astype(np.float32))
    same_error("fast.cross_entropy", logits.astype(np.int32), targets)


# ---- gated_delta_update

def _gdn_inputs(rng, b, t, hk, hv, dk, dv, dtype="float32"):
    q, k = random_array(rng, (b, t, hk, dk), dtype), random_array(rng, (b, t, hk, dk), dtype)
    v = random_array(rng, (b, t, hv, dv), dtype)
    gamma = rng.uniform(0.5, 1.0, (b, t, hv)).astype(np.float32)
    beta = rng.uniform(0.0, 1.0, (b, t, hv)).astype(np.float32)
    return q, k, v, gamma, beta


@pytest.mark.parametrize("heads", [(2, 2), (2, 4)])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gated_delta_update(rng, heads, dtype):
    hk, hv = heads
    q, k, v, gamma, beta = _gdn_inputs(rng, 2, 5, hk, hv, 8, 6, dtype)
    # The state is float32 in both, but MLX rounds intermediates of half
    # inputs to half (against a float64 reference its state is off by ~6e-4,
    # Alloy's by ~2e-7), so half inputs get half tolerances throughout.
    tol = dict(rtol=1e-4) if dtype == "float32" else dict(rtol=4e-3, atol=4e-3)
    same("fast.gated_delta_update", q, k, v, gamma, beta, **tol)
    state = random_array(rng, (2, hv, 6, 8))
    mask = rng.random((2, 5)) < 0.6
    same("fast.gated_delta_update", q, k, v, gamma, beta, state, mask, **tol)


def test_gated_delta_update_grad(rng):
    q, k, v, gamma, beta = _gdn_inputs(rng, 1, 4, 1, 2, 4, 3)
    same(lambda m, *a: m.grad(lambda q, k, v: m.fast.gated_delta_update(q, k, v, a[3], a[4])[0].sum(),
                              argnums=(0, 1, 2))(*a[:3]), q, k, v, gamma, beta, rtol=1e-4, atol=1e-5)


def test_gated_delta_update_errors(rng):
    q, k, v, gamma, beta = _gdn_inputs(rng, 1, 3, 2, 4, 8, 6)
    same_error("fast.gated_delta_update", q, k, v[:, :, :3], gamma[..., :3], beta[..., :3])  # 3 heads over 2
    same_error("fast.gated_delta_update", q, k, v, gamma, beta, np.zeros((1, 4, 8, 6), np.float32))
