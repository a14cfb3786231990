"""Recurrent layers (Elman RNN, GRU, LSTM) over (N, L, D) or (L, D) inputs,
returning every step's hidden state, as mlx.nn's. Weights are stacked per
gate in the order of the equations: GRU (r, z, n), LSTM (i, f, g, o)."""
import math

import alloy.core as mx
from alloy.nn.layers.base import Module


def _uniform(scale, shape):
    return mx.random.uniform(low=-scale, high=scale, shape=shape)


def _check_input(name, x, input_size):
    if x.ndim not in (2, 3) or x.shape[-1] != input_size:
        raise ValueError(f"[{name}] expects inputs of shape (N, L, {input_size}) or (L, {input_size}), "
                         f"got {tuple(x.shape)}.")


class RNN(Module):
    """h_{t+1} = nonlinearity(Wxh x_t + Whh h_t + bias) (tanh by default)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity=None):
        super().__init__()
        if nonlinearity is not None and not callable(nonlinearity):
            raise ValueError(f"Nonlinearity must be callable. Current value: {nonlinearity}.")
        self.nonlinearity = nonlinearity or mx.tanh
        self.input_size, self.hidden_size = input_size, hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wxh = _uniform(scale, (hidden_size, input_size))
        self.Whh = _uniform(scale, (hidden_size, hidden_size))
        if bias:
            self.bias = _uniform(scale, (hidden_size,))

    def _extra_repr(self):
        return f"input_dims={self.input_size}, hidden_size={self.hidden_size}, bias={'bias' in self}"

    def __call__(self, x, hidden=None):
        _check_input("RNN", x, self.input_size)
        x = x @ self.Wxh.T
        if "bias" in self:
            x = x + self.bias
        states = []
        for t in range(x.shape[-2]):
            step = x[..., t, :]
            if hidden is not None:
                step = step + hidden @ self.Whh.T
            hidden = self.nonlinearity(step)
            states.append(hidden)
        return mx.stack(states, axis=-2)


class GRU(Module):
    """Gated recurrent unit: reset r, update z, candidate n with the reset
    applied to (Whn h + bhn); h_{t+1} = (1 - z) n + z h."""

    def __init__(self, input_size, hidden_size, bias=True):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(scale, (3 * hidden_size, input_size))
        self.Wh = _uniform(scale, (3 * hidden_size, hidden_size))
        if bias:
            self.b = _uniform(scale, (3 * hidden_size,))
            self.bhn = _uniform(scale, (hidden_size,))

    def _extra_repr(self):
        return f"input_dims={self.input_size}, hidden_size={self.hidden_size}, bias={'b' in self}"

    def __call__(self, x, hidden=None):
        _check_input("GRU", x, self.input_size)
        H = self.hidden_size
        x = x @ self.Wx.T
        if "b" in self:
            x = x + self.b
        x_rz, x_n = x[..., : 2 * H], x[..., 2 * H:]
        states = []
        for t in range(x.shape[-2]):
            rz, n = x_rz[..., t, :], x_n[..., t, :]
            if hidden is not None:
                h_proj = hidden @ self.Wh.T
                rz = rz + h_proj[..., : 2 * H]
                h_n = h_proj[..., 2 * H:]
                if "bhn" in self:
                    h_n = h_n + self.bhn
            rz = mx.sigmoid(rz)
            r, z = rz[..., :H], rz[..., H:]
            if hidden is not None:
                n = n + r * h_n
            elif "bhn" in self:
                n = n + r * self.bhn
            n = mx.tanh(n)
            hidden = (1 - z) * n if hidden is None else (1 - z) * n + z * hidden
            states.append(hidden)
        return mx.stack(states, axis=-2)


class LSTM(Module):
    """Long short-term memory; returns (hidden states, cell states), each of
    shape (N, L, H) or (L, H)."""

    def __init__(self, input_size, hidden_size, bias=True):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        scale = 1.0 / math.sqrt(hidden_size)
        self.Wx = _uniform(scale, (4 * hidden_size, input_size))
        self.Wh = _uniform(scale, (4 * hidden_size, hidden_size))
        if bias:
            self.bias = _uniform(scale, (4 * hidden_size,))

    def _extra_repr(self):
        return f"input_dims={self.input_size}, hidden_size={self.hidden_size}, bias={'bias' in self}"

    def __call__(self, x, hidden=None, cell=None):
        _check_input("LSTM", x, self.input_size)
        H = self.hidden_size
        x = x @ self.Wx.T
        if "bias" in self:
            x = x + self.bias
        hs, cs = [], []
        for t in range(x.shape[-2]):
            gates = x[..., t, :]
            if hidden is not None:
                gates = gates + hidden @ self.Wh.T
            i = mx.sigmoid(gates[..., :H])
            f = mx.sigmoid(gates[..., H: 2 * H])
            g = mx.tanh(gates[..., 2 * H: 3 * H])
            o = mx.sigmoid(gates[..., 3 * H:])
            cell = i * g if cell is None else f * cell + i * g
            hidden = o * mx.tanh(cell)
            hs.append(hidden)
            cs.append(cell)
        return mx.stack(hs, axis=-2), mx.stack(cs, axis=-2)
