"""Transposed convolutions, channels last, weights (out_channels, *kernel,
in_channels), through mx.conv_transpose1d/2d/3d."""
import math

import alloy.core as mx
from alloy.nn.layers.base import Module


class _ConvTranspose(Module):
    def __init__(self, dims, in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding,
                 bias):
        super().__init__()

        def each(v):
            return (v,) * dims if isinstance(v, int) else tuple(v)

        kernel_size = each(kernel_size)
        scale = math.sqrt(1 / (in_channels * math.prod(kernel_size)))
        self.weight = mx.random.uniform(low=-scale, high=scale, shape=(out_channels, *kernel_size, in_channels))
        if bias:
            self.bias = mx.zeros((out_channels,))
        # conv_transpose1d takes plain ints; 2d/3d take tuples
        pick = (lambda v: v if isinstance(v, int) else v[0]) if dims == 1 else each
        self.padding = pick(padding)
        self.stride = pick(stride)
        self.dilation = pick(dilation)
        self.output_padding = pick(output_padding)
        self._dims = dims

    def _extra_repr(self):
        out, *kernel, inp = self.weight.shape
        return (f"{inp}, {out}, kernel_size={tuple(kernel)}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, output_padding={self.output_padding}, bias={'bias' in self}")

    def __call__(self, x):
        op = {1: mx.conv_transpose1d, 2: mx.conv_transpose2d, 3: mx.conv_transpose3d}[self._dims]
        y = op(x, self.weight, self.stride, self.padding, self.dilation, self.output_padding)
        if "bias" in self:
            y = y + self.bias
        return y


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-D convolution of (N, L, in_channels) inputs."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, output_padding=0,
                 bias=True):
        super().__init__(1, in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution of (N, H, W, in_channels) inputs."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, output_padding=0,
                 bias=True):
        super().__init__(2, in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias)


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-D convolution of (N, D, H, W, in_channels) inputs."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, output_padding=0,
                 bias=True):
        super().__init__(3, in_channels, out_channels, kernel_size, stride, padding, dilation, output_padding, bias)
