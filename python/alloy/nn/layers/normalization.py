"""RMSNorm, LayerNorm and GroupNorm over the last (feature) axis."""
import alloy.core as mx
from alloy.nn.layers.base import Module


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) * weight, through ``mx.fast.rms_norm``."""

    def __init__(self, dims, eps=1e-5):
        super().__init__()
        self.weight = mx.ones((dims,))
        self.eps = eps

    def _extra_repr(self):
        return f"{self.weight.shape[0]}, eps={self.eps}"

    def __call__(self, x):
        return mx.fast.rms_norm(x, self["weight"], self.eps)


class LayerNorm(Module):
    """(x - mean) / sqrt(var + eps) over the last axis, then an optional
    learned scale (``affine``) and shift (``bias``), via ``mx.fast.layer_norm``."""

    def __init__(self, dims, eps=1e-5, affine=True, bias=True):
        super().__init__()
        if affine:
            self.weight = mx.ones((dims,))
            if bias:
                self.bias = mx.zeros((dims,))
        self.dims = dims
        self.eps = eps

    def _extra_repr(self):
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x):
        weight = self["weight"] if "weight" in self else None
        bias = self["bias"] if "bias" in self else None
        return mx.fast.layer_norm(x, weight, bias, self.eps)


class GroupNorm(Module):
    """Normalizes groups of features: the last axis (``dims`` features) is cut
    into ``num_groups`` groups, each normalized over all other non-batch axes.

    MLX's default assigns features to groups by stride (feature f belongs to
    group f % num_groups); ``pytorch_compatible`` uses contiguous blocks.
    """

    def __init__(self, num_groups, dims, eps=1e-5, affine=True, pytorch_compatible=False):
        super().__init__()
        if affine:
            self.bias = mx.zeros((dims,))
            self.weight = mx.ones((dims,))
        self.num_groups = num_groups
        self.dims = dims
        self.eps = eps
        self.pytorch_compatible = pytorch_compatible

    def _extra_repr(self):
        return (f"{self.num_groups}, {self.dims}, eps={self.eps}, affine={'weight' in self}, "
                f"pytorch_compatible={self.pytorch_compatible}")

    def _contiguous_groups(self, x):
        batch, *rest, dims = x.shape
        size = dims // self.num_groups
        x = x.reshape(batch, -1, self.num_groups, size)
        x = x.transpose(0, 2, 1, 3).reshape(batch, self.num_groups, -1)
        x = mx.fast.layer_norm(x, None, None, self.eps)
        x = x.reshape(batch, self.num_groups, -1, size)
        return x.transpose(0, 2, 1, 3).reshape(batch, *rest, dims)

    def _strided_groups(self, x):
        batch, *rest, dims = x.shape
        x = x.reshape(batch, -1, self.num_groups)
        mean = mx.mean(x, axis=1, keepdims=True)
        var = mx.var(x, axis=1, keepdims=True)
        x = (x - mean) * mx.rsqrt(var + self.eps)
        return x.reshape(batch, *rest, dims)

    def __call__(self, x):
        norm = self._contiguous_groups if self.pytorch_compatible else self._strided_groups
        x = norm(x)
        if "weight" in self:
            return self.weight * x + self.bias
        return x
