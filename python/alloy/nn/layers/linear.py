"""Identity, Linear and Bilinear layers."""
import math

import alloy.core as mx
from alloy.nn.layers.base import Module


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def __call__(self, x):
        return x


class Linear(Module):
    """y = x W^T + b, with W of shape (output_dims, input_dims) drawn from
    U(-k, k), k = 1/sqrt(input_dims), and b likewise when ``bias``."""

    def __init__(self, input_dims, output_dims, bias=True):
        super().__init__()
        scale = math.sqrt(1.0 / input_dims)
        self.weight = mx.random.uniform(low=-scale, high=scale, shape=(output_dims, input_dims))
        if bias:
            self.bias = mx.random.uniform(low=-scale, high=scale, shape=(output_dims,))

    def _extra_repr(self):
        out_dims, in_dims = self.weight.shape
        return f"input_dims={in_dims}, output_dims={out_dims}, bias={'bias' in self}"

    def __call__(self, x):
        # MLX fuses the bias with mx.addmm; alloy.core has no addmm, and the
        # product plus a broadcast add is the same value.
        y = x @ self["weight"].T
        if "bias" in self:
            y = y + self["bias"]
        return y

    def to_quantized(self, group_size=None, bits=None, mode="affine"):
        from alloy.nn.layers.quantized import QuantizedLinear

        return QuantizedLinear.from_linear(self, group_size, bits, mode)


class Bilinear(Module):
    """y_i = x1^T W_i x2 + b_i, with W of shape (output_dims, input2_dims,
    input1_dims)."""

    def __init__(self, input1_dims, input2_dims, output_dims, bias=True):
        super().__init__()
        scale = math.sqrt(1.0 / input1_dims)
        self.weight = mx.random.uniform(low=-scale, high=scale, shape=(output_dims, input2_dims, input1_dims))
        if bias:
            self.bias = mx.random.uniform(low=-scale, high=scale, shape=(output_dims,))

    def _extra_repr(self):
        out, in2, in1 = self.weight.shape
        return f"input1_dims={in1}, input2_dims={in2}, output_dims={out}, bias={'bias' in self}"

    def __call__(self, x1, x2):
        out, in2, in1 = self.weight.shape
        batch = x1.shape[:-1]
        x1 = x1.reshape(-1, in1)
        x2 = x2.reshape(-1, 1, in2)
        # (n, in1) @ (in1, out*in2) -> (n, out, in2), then contract in2 with x2.
        w = self.weight.reshape(out * in2, in1)
        y = (x1 @ w.T).reshape(-1, out, in2).swapaxes(-2, -1)
        y = (x2 @ y).squeeze(1)
        if "bias" in self:
            y = y + self.bias
        return y.reshape(*batch, out)
