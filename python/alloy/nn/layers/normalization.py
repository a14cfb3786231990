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


class InstanceNorm(Module):
    """Normalizes each instance's features over its spatial axes (all axes
    but the first and the last), with an optional learned scale and shift."""

    def __init__(self, dims, eps=1e-5, affine=False):
        super().__init__()
        if affine:
            self.weight = mx.ones((dims,))
            self.bias = mx.zeros((dims,))
        self.dims = dims
        self.eps = eps

    def _extra_repr(self):
        return f"{self.dims}, eps={self.eps}, affine={'weight' in self}"

    def __call__(self, x):
        axes = tuple(range(1, x.ndim - 1))
        mean = mx.mean(x, axis=axes, keepdims=True)
        var = mx.var(x, axis=axes, keepdims=True)
        x = (x - mean) * mx.rsqrt(var + self.eps)
        return (self.weight * x + self.bias) if "weight" in self else x


class BatchNorm(Module):
    """Normalizes features (the last axis) over the batch and spatial axes.
    In training, batch statistics normalize and update running estimates
    (``momentum``); in eval mode the running estimates are used."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = mx.ones((num_features,))
            self.bias = mx.zeros((num_features,))
        if track_running_stats:
            self.running_mean = mx.zeros((num_features,))
            self.running_var = mx.ones((num_features,))
            # state, not parameters to train
            self.freeze(keys=["running_mean", "running_var"], recurse=False)

    def unfreeze(self, *args, **kwargs):
        super().unfreeze(*args, **kwargs)
        self.freeze(keys=["running_mean", "running_var"], recurse=False, strict=False)
        return self

    def _extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={'weight' in self}, "
                f"track_running_stats={self.track_running_stats}")

    def __call__(self, x):
        if x.ndim < 2 or x.ndim > 4:
            raise ValueError(f"[BatchNorm] expects inputs of 2 to 4 dimensions (features last), got {x.ndim}.")
        if self.training or not self.track_running_stats:
            axes = tuple(range(x.ndim - 1))
            mean = mx.mean(x, axis=axes)
            var = mx.var(x, axis=axes)
            if self.training and self.track_running_stats:
                # The running variance is the unbiased estimate (n - 1), as
                # in MLX; the batch is normalized with the biased one.
                m = self.momentum
                n = x.size // x.shape[-1]
                self.running_mean = (1 - m) * self.running_mean + m * mean
                self.running_var = (1 - m) * self.running_var + m * var * (n / max(n - 1, 1))
        else:
            mean, var = self.running_mean, self.running_var
        x = (x - mean) * mx.rsqrt(var + self.eps)
        return (self.weight * x + self.bias) if "weight" in self else x
