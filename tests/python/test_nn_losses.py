"""alloy.nn.losses and alloy.nn.init against mlx.nn: values and gradients of
each loss on random inputs, every reduction; initializer shapes and statistics."""
import numpy as np
import pytest

import alloy.core as ax
import alloy.nn as ann
import mlx.core as mc
import mlx.nn as mnn
from mlx_oracle import MLX_DEVICE, assert_same_value


def compare(name, args, kwargs, grad=True):
    """The loss and its gradient with respect to the first argument."""
    a_args = [ax.array(a) if isinstance(a, np.ndarray) else a for a in args]
    with mc.stream(MLX_DEVICE):
        m_args = [mc.array(a) if isinstance(a, np.ndarray) else a for a in args]
        want = getattr(mnn.losses, name)(*m_args, **kwargs)
        want_g = mc.grad(lambda x: mc.sum(getattr(mnn.losses, name)(x, *m_args[1:], **kwargs)))(m_args[0]) \
            if grad else None
        mc.eval(want)
    got = getattr(ann.losses, name)(*a_args, **kwargs)
    assert_same_value(got, want, path=name)
    if grad:
        got_g = ax.grad(lambda x: ax.sum(getattr(ann.losses, name)(x, *a_args[1:], **kwargs)))(a_args[0])
        assert_same_value(got_g, want_g, path=f"grad of {name}")


REDUCTIONS = ["none", "mean", "sum"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy(rng, reduction, smoothing):
    logits = rng.standard_normal((4, 6)).astype(np.float32) * 3
    ids = rng.integers(0, 6, 4).astype(np.int32)
    weights = rng.random(4).astype(np.float32)
    compare("cross_entropy", [logits, ids], {"reduction": reduction, "label_smoothing": smoothing})
    compare("cross_entropy", [logits, ids, weights], {"reduction": reduction, "label_smoothing": smoothing})
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    compare("cross_entropy", [logits, probs.astype(np.float32)], {"reduction": reduction})
    # Classes along axis 0.
    compare("cross_entropy", [logits.T.copy(), ids], {"axis": 0, "reduction": reduction})
    # Targets that do not sum to 1 (multi-label scores): the loss depends on
    # the largest logit MLX takes out first.
    scores = rng.uniform(0.05, 0.95, (4, 6)).astype(np.float32)
    compare("cross_entropy", [logits, scores], {"reduction": reduction, "label_smoothing": smoothing})
    compare("cross_entropy", [logits.T.copy(), scores.T.copy()], {"axis": 0, "reduction": reduction})


def test_cross_entropy_errors(rng):
    for nn, core in ((ann, ax), (mnn, mc)):
        logits = core.zeros((4, 6))
        with pytest.raises(ValueError):
            nn.losses.cross_entropy(logits, core.zeros((5,), dtype=core.int32))
        with pytest.raises(ValueError):
            nn.losses.cross_entropy(logits, core.zeros((4,), dtype=core.int32), label_smoothing=1.0)
        with pytest.raises(ValueError):
            nn.losses.cross_entropy(logits, core.zeros((4,), dtype=core.int32), weights=core.ones((3,)))
        with pytest.raises(ValueError):
            nn.losses.mse_loss(logits, logits, reduction="max")
        with pytest.raises(ValueError):
            nn.losses.l1_loss(logits, core.zeros((4, 5)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(rng, reduction):
    p = rng.standard_normal((3, 5)).astype(np.float32) * 2
    t = rng.standard_normal((3, 5)).astype(np.float32) * 2
    for name in ("mse_loss", "l1_loss", "huber_loss", "log_cosh_loss", "hinge_loss"):
        compare(name, [p, t], {"reduction": reduction})
    compare("smooth_l1_loss", [p, t], {"beta": 0.7, "reduction": reduction})
    var = rng.random((3, 5)).astype(np.float32) + 0.1
    compare("gaussian_nll_loss", [p, t, var], {"full": True, "reduction": reduction})


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(rng, reduction):
    logits = rng.standard_normal((4, 3)).astype(np.float32) * 3
    targets = (rng.random((4, 3)) < 0.5).astype(np.float32)
    weights = rng.random((4, 3)).astype(np.float32)
    compare("binary_cross_entropy", [logits, targets], {"reduction": reduction})
    compare("binary_cross_entropy", [logits, targets, weights], {"reduction": reduction})
    probs = (1 / (1 + np.exp(-logits))).astype(np.float32)
    probs[0, 0] = 0.0  # log(0) is clipped at -100 in both
    compare("binary_cross_entropy", [probs, targets], {"with_logits": False, "reduction": reduction}, grad=False)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_and_kl(rng, reduction):
    logits = rng.standard_normal((5, 4)).astype(np.float32)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    ids = rng.integers(0, 4, 5).astype(np.int32)
    compare("nll_loss", [logp.astype(np.float32), ids], {"reduction": reduction})
    other = rng.standard_normal((5, 4)).astype(np.float32)
    logq = (other - np.log(np.exp(other).sum(-1, keepdims=True))).astype(np.float32)
    compare("kl_div_loss", [logp.astype(np.float32), logq], {"reduction": reduction})


@pytest.mark.parametrize("name,kw,std", [
    ("normal", {"mean": 1.0, "std": 2.0}, lambda s: 2.0),
    ("uniform", {"low": -1.0, "high": 3.0}, lambda s: 4 / np.sqrt(12)),
    ("glorot_normal", {}, lambda s: np.sqrt(2 / (s[0] + s[1]))),
    ("glorot_uniform", {}, lambda s: np.sqrt(2 / (s[0] + s[1]))),
    ("he_normal", {}, lambda s: 1 / np.sqrt(s[1])),
    ("he_uniform", {}, lambda s: 1 / np.sqrt(s[1])),
])
def test_initializers(name, kw, std):
    shape = (300, 200)
    got = np.array(getattr(ann.init, name)(**kw)(ax.zeros(shape)))
    assert got.shape == shape and got.dtype == np.float32
    np.testing.assert_allclose(got.std(), std(shape), rtol=0.05)
    want_mean = {"normal": 1.0, "uniform": 1.0}.get(name, 0.0)
    assert abs(got.mean() - want_mean) < 0.05 * std(shape) + 1e-3


def test_initializer_edges():
    np.testing.assert_array_equal(np.array(ann.init.constant(0.5)(ax.zeros((2, 3)))), np.full((2, 3), 0.5))
    np.testing.assert_array_equal(np.array(ann.init.identity()(ax.zeros((3, 3)))), np.eye(3))
    assert ann.init.normal(dtype=ax.float16)(ax.zeros((4,))).dtype == ax.float16
    w = np.array(ann.init.he_normal()(ax.zeros((400, 3, 3, 16)), mode="fan_out"))
    np.testing.assert_allclose(w.std(), 1 / np.sqrt(400 * 9), rtol=0.05)
    for nn, core in ((ann, ax), (mnn, mc)):
        with pytest.raises(ValueError):
            nn.init.identity()(core.zeros((2, 3)))
        with pytest.raises(ValueError):
            nn.init.glorot_normal()(core.zeros((5,)))
        with pytest.raises(ValueError):
            nn.init.he_uniform()(core.zeros((5, 5)), mode="fan_avg")
