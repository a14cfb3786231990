"""Spatial upsampling of channels-last inputs (N, *spatial, C) by nearest
neighbour, (multi)linear or cubic interpolation, one spatial axis at a time
(the interpolations are separable)."""
import math

import alloy.core as mx
from alloy.nn.layers.base import Module


def _source_positions(n_in, n_out, scale, align_corners):
    """Where each output sample sits in input coordinates."""
    i = mx.arange(n_out).astype(mx.float32)
    if align_corners:
        return i * ((n_in - 1) / (n_out - 1)) if n_out > 1 else mx.zeros((n_out,))
    return (i + 0.5) / scale - 0.5


def _sizes(x, axis, scale):
    """Input and output sizes of an axis, and the scale they imply (the
    output size is floored, so positions follow n_out / n_in, not `scale`)."""
    n_in = x.shape[axis]
    n_out = math.floor(n_in * scale)
    return n_in, n_out, n_out / n_in


def _nearest(x, axis, scale):
    n_in, n_out, scale = _sizes(x, axis, scale)
    index = mx.minimum(mx.floor(mx.arange(n_out).astype(mx.float32) / scale).astype(mx.int32), n_in - 1)
    return mx.take(x, index, axis=axis)


def _weighted(x, axis, taps):
    """sum over (index, weight) taps; weights broadcast along `axis`."""
    shape = [1] * x.ndim
    shape[axis] = -1
    out = None
    for index, weight in taps:
        term = mx.take(x, index, axis=axis) * weight.reshape(shape).astype(x.dtype)
        out = term if out is None else out + term
    return out


def _linear(x, axis, scale, align_corners):
    n_in, n_out, scale = _sizes(x, axis, scale)
    pos = mx.clip(_source_positions(n_in, n_out, scale, align_corners), 0, n_in - 1)
    lo = mx.floor(pos)
    frac = pos - lo
    lo = lo.astype(mx.int32)
    hi = mx.minimum(lo + 1, n_in - 1)
    return _weighted(x, axis, [(lo, 1 - frac), (hi, frac)])


def _cubic_weight(t, a=-0.75):
    t = mx.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return mx.where(t <= 1, near, mx.where(t < 2, far, mx.zeros_like(t)))


def _cubic(x, axis, scale, align_corners):
    n_in, n_out, scale = _sizes(x, axis, scale)
    pos = _source_positions(n_in, n_out, scale, align_corners)
    base = mx.floor(pos)
    taps = []
    for k in (-1, 0, 1, 2):
        index = base + k
        taps.append((mx.clip(index, 0, n_in - 1).astype(mx.int32), _cubic_weight(pos - index)))
    return _weighted(x, axis, taps)


class Upsample(Module):
    """Scales the spatial axes by ``scale_factor`` (one float, or one per
    spatial axis) with ``mode`` "nearest", "linear" or "cubic"."""

    def __init__(self, scale_factor, mode="nearest", align_corners=False, antialias=False):
        super().__init__()
        if mode not in ("nearest", "linear", "cubic"):
            raise ValueError(f"[Upsample] Got unsupported upsampling algorithm: {mode}")
        if antialias:
            # MLX's antialiased downsampling filter is not reproduced yet.
            raise ValueError("[Upsample] antialias=True is not supported by Alloy yet.")
        self.scale_factor = tuple(scale_factor) if isinstance(scale_factor, (list, tuple)) else float(scale_factor)
        self.mode = mode
        self.align_corners = align_corners

    def _extra_repr(self):
        return f"scale_factor={self.scale_factor}, mode={self.mode!r}, align_corners={self.align_corners}"

    def __call__(self, x):
        dims = x.ndim - 2
        if dims <= 0:
            raise ValueError(f"[Upsample] The input should have at least 1 spatial dimension which means it "
                             f"should be at least 3D but {x.ndim}D was given")
        scales = self.scale_factor
        if isinstance(scales, tuple):
            if len(scales) != dims:
                raise ValueError(f"[Upsample] A scale factor was provided for {len(scales)} dimensions but the "
                                 f"input has {dims} spatial dimensions")
        else:
            scales = (scales,) * dims
        for axis, scale in enumerate(scales, start=1):
            if self.mode == "nearest":
                x = _nearest(x, axis, scale)
            elif self.mode == "linear":
                x = _linear(x, axis, scale, self.align_corners)
            else:
                x = _cubic(x, axis, scale, self.align_corners)
        return x
