"""Differential helpers for alloy.nn against real mlx.nn.

A layer is built in both frameworks by one `build(nn)` function; Alloy's
freshly initialised parameters are copied into MLX's layer through numpy, so
the two hold the same weights and must agree on outputs and gradients.
"""
import numpy as np
import pytest

import alloy.core as ax
import alloy.nn as ann
import mlx.core as mc
import mlx.nn as mnn
from alloy.utils import tree_map
from mlx_oracle import MLX_DEVICE, TOLERANCE, assert_same_value, dtype_name, to_numpy


def to_mlx(tree):
    """An Alloy tree of arrays as an MLX tree with the same values."""
    return tree_map(lambda a: mc.array(to_numpy(a)) if isinstance(a, ax.array) else a, tree)


def pair(build, randomize=None):
    """(alloy_layer, mlx_layer) built by `build(nn)` holding the same weights;
    with `randomize` (an rng), weights are redrawn from N(0, 1) first so
    constant initialisations (norm scales, zero biases) do not hide a term."""
    mine = build(ann)
    if randomize is not None:
        mine.update(tree_map(lambda a: ax.array(randomize.standard_normal(a.shape).astype(np.float32)),
                             mine.parameters()))
    with mc.stream(MLX_DEVICE):
        theirs = build(mnn)
        theirs.update(to_mlx(mine.parameters()))
    return mine, theirs


def _loss_and_grads(nn, core, layer, inputs, cotangent, grad_input):
    """sum(layer(*inputs) * cotangent), its gradient with respect to the
    layer's trainable parameters, and with respect to the first input."""

    def loss(*xs):
        return core.sum(layer(*xs) * cotangent)

    if layer.trainable_parameters():
        value, param_grads = nn.value_and_grad(layer, loss)(*inputs)
    else:  # both frameworks refuse to differentiate with respect to nothing
        value, param_grads = loss(*inputs), {}
    input_grad = core.grad(lambda x0: loss(x0, *inputs[1:]))(inputs[0]) if grad_input else None
    return layer(*inputs), value, param_grads, input_grad


def check_layer(build, *inputs, rng, rtol=None, atol=None, grad_input=True, randomize=False):
    """Forward outputs, then gradients of a random projection of the output,
    agree between the two frameworks. `inputs` are numpy arrays."""
    mine, theirs = pair(build, rng if randomize else None)
    # None stands for an absent optional input (a mask), passed as it is.
    a_in = [None if x is None else ax.array(x) for x in inputs]
    with mc.stream(MLX_DEVICE):
        m_in = [None if x is None else mc.array(x) for x in inputs]
        want_out = theirs(*m_in)
        mc.eval(want_out)
    got_out = mine(*a_in)
    assert_same_value(got_out, want_out, rtol, atol, "output")

    cot = rng.standard_normal(tuple(want_out.shape)).astype(np.float32)
    with mc.stream(MLX_DEVICE):
        want = _loss_and_grads(mnn, mc, theirs, m_in, mc.array(cot), grad_input)
        mc.eval([w for w in want if w is not None])
    got = _loss_and_grads(ann, ax, mine, a_in, ax.array(cot), grad_input)
    names = ("output", "loss", "parameter grads", "input grad")
    # The loss sums output * cot: its rounding grows with the sum of the
    # terms' magnitudes, not with the (cancelled) value, so its absolute
    # tolerance scales with that sum.
    base_atol = atol if atol is not None else TOLERANCE.get(dtype_name(want_out.dtype), (0, 0))[1]
    loss_atol = base_atol * max(1.0, float(np.sum(np.abs(to_numpy(want_out).astype(np.float64) * cot))))
    for g, w, name in zip(got, want, names):
        assert_same_value(g, w, rtol, loss_atol if name == "loss" else atol, name)
    return mine, theirs
