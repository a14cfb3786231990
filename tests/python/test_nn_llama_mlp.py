"""The seed's LlamaMLP (examples/seeds/llama_mlp.py): its fused SiLU gate is a
metal_kernel; the model trains with alloy.nn / alloy.optimizers, and its
gradients equal those of the same model with the gate in plain ops."""
import pathlib
import sys

import numpy as np

import alloy.core as mx
import alloy.nn as nn
import alloy.optimizers as optim
from alloy.utils import tree_flatten

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "seeds"))
import llama_mlp  # noqa: E402


class PlainLlamaMLP(llama_mlp.LlamaMLP):
    """The same model, gate * silu(up) written with core ops."""

    def __call__(self, x):
        gate, up = self.gate_proj(x), self.up_proj(x)
        return self.down_proj(gate * nn.silu(up))


def models(rng, dim=16, hidden=32):
    fused, plain = llama_mlp.LlamaMLP(dim, hidden), PlainLlamaMLP(dim, hidden)
    fused.set_dtype(mx.float16)
    plain.set_dtype(mx.float16)
    plain.update(fused.parameters())
    return fused, plain


def test_fused_gate_matches_plain_ops(rng):
    gate = mx.array(rng.standard_normal((6, 32)).astype(np.float16))
    up = mx.array(rng.standard_normal((6, 32)).astype(np.float16) * 3)
    want = np.array(gate).astype(np.float64) * np.array(nn.silu(up.astype(mx.float32))).astype(np.float64)
    got = np.array(llama_mlp.silu_gate_fused(gate, up)).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def test_gradients_match_plain_model(rng):
    fused, plain = models(rng)
    x = mx.array(rng.standard_normal((4, 5, 16)).astype(np.float16))
    y = mx.array(rng.standard_normal((4, 5, 16)).astype(np.float16))

    def grads(model):
        loss = lambda: nn.losses.mse_loss(model(x).astype(mx.float32), y.astype(mx.float32))
        return nn.value_and_grad(model, loss)()

    (lf, gf), (lp, gp) = grads(fused), grads(plain)
    np.testing.assert_allclose(lf.item(), lp.item(), rtol=1e-2)
    for (k, a), (_, b) in zip(tree_flatten(gf), tree_flatten(gp)):
        a, b = np.array(a.astype(mx.float32)), np.array(b.astype(mx.float32))
        np.testing.assert_allclose(a, b, rtol=2e-2, atol=2e-2 * np.abs(b).max(), err_msg=k)


def test_training_lowers_loss(rng):
    fused, _ = models(rng)
    fused.set_dtype(mx.float16)
    x = mx.array(rng.standard_normal((32, 16)).astype(np.float16))
    y = mx.array(rng.standard_normal((32, 16)).astype(np.float16) * 0.5)
    step = nn.value_and_grad(fused, lambda: nn.losses.mse_loss(fused(x).astype(mx.float32), y.astype(mx.float32)))
    # Adam's eps (1e-8) is 0 in float16, so 0/0 appears where v underflows; SGD has no such term.
    opt = optim.SGD(0.5, momentum=0.9)
    losses = []
    for _ in range(8):
        loss, g = step()
        opt.update(fused, g)
        mx.eval(fused.parameters(), opt.state)
        losses.append(loss.item())
    assert losses[-1] < 0.9 * losses[0], losses
