"""Dropout layers: zero elements at random while training, scaling the rest
so the expected value is unchanged; identity in eval mode."""
import alloy.core as mx
from alloy.nn.layers.base import Module


def _check_p(p):
    if p < 0 or p >= 1:
        raise ValueError(f"The dropout probability {p} is not in [0, 1)")
    return 1 - p


class Dropout(Module):
    """Zeroes each element with probability ``p``."""

    def __init__(self, p=0.5):
        super().__init__()
        self._p_1 = _check_p(p)

    def _extra_repr(self):
        return f"p={1 - self._p_1}"

    def __call__(self, x):
        if self._p_1 == 1 or not self.training:
            return x
        mask = mx.random.bernoulli(self._p_1, x.shape)
        return (mask * x) * (1 / self._p_1)


class Dropout2d(Module):
    """Zeroes whole channels of (N, H, W, C) or (H, W, C) inputs with
    probability ``p``: one draw per channel, shared over H and W."""

    def __init__(self, p=0.5):
        super().__init__()
        self._p_1 = _check_p(p)

    def _extra_repr(self):
        return f"p={1 - self._p_1}"

    def __call__(self, x):
        if x.ndim not in (3, 4):
            raise ValueError(f"Received input with {x.ndim} dimensions. Expected 3 or 4 dimensions.")
        if self._p_1 == 1 or not self.training:
            return x
        shape = list(x.shape)
        shape[-2] = shape[-3] = 1
        mask = mx.random.bernoulli(self._p_1, shape)
        return (mask * x) * (1 / self._p_1)


class Dropout3d(Module):
    """Zeroes whole channels of (N, D, H, W, C) or (D, H, W, C) inputs with
    probability ``p`` in training, scaling the rest by 1 / (1 - p)."""

    def __init__(self, p=0.5):
        super().__init__()
        self._p_1 = _check_p(p)

    def _extra_repr(self):
        return f"p={1 - self._p_1}"

    def __call__(self, x):
        if x.ndim not in (4, 5):
            raise ValueError(f"[Dropout3d] expects inputs of 4 or 5 dimensions ((N,) D, H, W, C), got {x.ndim}.")
        if self._p_1 == 1 or not self.training:
            return x
        mask_shape = list(x.shape)
        mask_shape[-2] = mask_shape[-3] = mask_shape[-4] = 1
        mask = mx.random.bernoulli(p=self._p_1, shape=mask_shape)
        return (1 / self._p_1) * mask * x
