"""Conv1d and Conv2d, channels last (NLC / NHWC) as in MLX."""
import math

import alloy.core as mx
from alloy.nn.layers.base import Module


def _pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


class Conv1d(Module):
    """1-D convolution of (N, L, in_channels) inputs; weight of shape
    (out_channels, kernel_size, in_channels // groups)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True):
        super().__init__()
        if in_channels % groups != 0:
            raise ValueError(
                f"The number of input channels ({in_channels}) must be divisible by the number of groups ({groups})"
            )
        scale = math.sqrt(1 / (in_channels * kernel_size))
        self.weight = mx.random.uniform(low=-scale, high=scale,
                                        shape=(out_channels, kernel_size, in_channels // groups))
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.padding = padding
        self.dilation = dilation
        self.stride = stride
        self.groups = groups

    def _extra_repr(self):
        out, k, in_per_group = self.weight.shape
        return (f"{in_per_group * self.groups}, {out}, kernel_size={k}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, groups={self.groups}, bias={'bias' in self}")

    def __call__(self, x):
        y = mx.conv1d(x, self.weight, self.stride, self.padding, self.dilation, self.groups)
        if "bias" in self:
            y = y + self.bias
        return y


class Conv2d(Module):
    """2-D convolution of (N, H, W, in_channels) inputs; weight of shape
    (out_channels, kh, kw, in_channels // groups). Sizes are ints or pairs."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True):
        super().__init__()
        if in_channels % groups != 0:
            raise ValueError(
                f"The number of input channels ({in_channels}) must be divisible by the number of groups ({groups})"
            )
        kernel_size, stride, padding = _pair(kernel_size), _pair(stride), _pair(padding)
        scale = math.sqrt(1 / (in_channels * kernel_size[0] * kernel_size[1]))
        self.weight = mx.random.uniform(low=-scale, high=scale,
                                        shape=(out_channels, *kernel_size, in_channels // groups))
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.padding = padding
        self.stride = stride
        self.dilation = dilation
        self.groups = groups

    def _extra_repr(self):
        out, kh, kw, in_per_group = self.weight.shape
        return (f"{in_per_group * self.groups}, {out}, kernel_size={(kh, kw)}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, groups={self.groups}, bias={'bias' in self}")

    def __call__(self, x):
        y = mx.conv2d(x, self.weight, self.stride, self.padding, self.dilation, self.groups)
        if "bias" in self:
            y = y + self.bias
        return y


def _triple(value):
    return (value,) * 3 if isinstance(value, int) else tuple(value)


class Conv3d(Module):
    """3-D convolution of (N, D, H, W, in_channels) inputs; weight of shape
    (out_channels, kd, kh, kw, in_channels). Sizes are ints or triples."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, bias=True):
        super().__init__()
        kernel_size, stride, padding = _triple(kernel_size), _triple(stride), _triple(padding)
        scale = math.sqrt(1 / (in_channels * math.prod(kernel_size)))
        self.weight = mx.random.uniform(low=-scale, high=scale, shape=(out_channels, *kernel_size, in_channels))
        if bias:
            self.bias = mx.zeros((out_channels,))
        self.padding = padding
        self.stride = stride
        self.dilation = dilation

    def _extra_repr(self):
        out, *kernel, inp = self.weight.shape
        return (f"{inp}, {out}, kernel_size={tuple(kernel)}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, bias={'bias' in self}")

    def __call__(self, x):
        y = mx.conv3d(x, self.weight, self.stride, self.padding, self.dilation)
        if "bias" in self:
            y = y + self.bias
        return y
