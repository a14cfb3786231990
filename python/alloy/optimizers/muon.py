"""Muon: momentum whose update for matrices is orthogonalised by a quintic
Newton-Schulz iteration, as ``mlx.optimizers.Muon``."""
import alloy.core as mx
from alloy.optimizers.optimizers import Optimizer

# Coefficients of the quintic iteration X <- a X + (b A + c A^2) X, A = X X^T,
# tuned so the singular values move quickly towards 1.
_NS_COEFFS = (3.4445, -4.7750, 2.0315)


def _orthogonalize(x, steps):
    """Pushes the singular values of the 2-D ``x`` towards 1."""
    if x.ndim != 2:
        raise ValueError(f"[Muon] Newton-Schulz needs a 2-D array, got shape {tuple(x.shape)}")
    a, b, c = _NS_COEFFS
    wide = x.shape[-2] <= x.shape[-1]
    if not wide:  # iterate on the wide form so X X^T is the small product
        x = x.T
    x = x / (mx.linalg.norm(x, keepdims=True) + 1e-7)
    for _ in range(steps):
        gram = x @ x.T
        poly = mx.addmm(b * gram, gram, gram, beta=1.0, alpha=c)
        x = mx.addmm(a * x, poly, x, beta=1.0, alpha=1.0)
    return x if wide else x.T


class Muon(Optimizer):
    """SGD momentum (Nesterov by default) with L2 ``weight_decay``; updates of
    parameters with two or more axes are orthogonalised (flattened to 2-D
    first) and scaled by sqrt(max(1, rows / cols))."""

    def __init__(self, learning_rate, momentum=0.95, weight_decay=0.01, nesterov=True, ns_steps=5):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.ns_steps = ns_steps

    def init_single(self, parameter, state):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state):
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        mu = self.momentum
        v = mu * state["v"] + (1 - mu) * gradient
        state["v"] = v
        update = gradient * (1 - mu) + v * mu if self.nesterov else v
        lr = self.learning_rate.astype(gradient.dtype)
        if update.ndim >= 2:
            shape = update.shape
            update = _orthogonalize(update.reshape(shape[0], -1), self.ns_steps).reshape(shape)
            lr = lr * max(1, shape[-2] / shape[-1]) ** 0.5
        return parameter - lr * update
