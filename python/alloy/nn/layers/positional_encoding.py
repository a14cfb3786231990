"""Rotary positional encoding."""
import alloy.core as mx
from alloy.nn.layers.base import Module


class RoPE(Module):
    """Rotates pairs of the first ``dims`` features by position-dependent
    angles (``mx.fast.rope``). ``traditional`` pairs adjacent features
    instead of the two halves; ``scale`` multiplies the positions."""

    def __init__(self, dims, traditional=False, base=10000, scale=1.0):
        super().__init__()
        self.dims = dims
        self.traditional = traditional
        self.base = base
        self.scale = scale

    def _extra_repr(self):
        return f"{self.dims}, traditional={self.traditional}"

    def __call__(self, x, offset=0):
        return mx.fast.rope(x, self.dims, traditional=self.traditional, base=self.base, scale=self.scale,
                            offset=offset)
