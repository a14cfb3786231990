"""Spatial resampling of channels-last inputs (N, *spatial, C) by nearest
neighbour, (multi)linear or cubic interpolation, with MLX's sampling
positions: an axis of n samples scaled by s has int(s * n) outputs, output i
sits at i / s - ((m - 1) / s - n + 1) / 2 in the input (or spreads the input's
first and last samples over the output's with align_corners), and
antialiasing widens the filter by 1 / s when downsampling. Everything is
computed in float32 in MLX's order, so the results are MLX's."""
import math
import operator
from functools import reduce
from itertools import product

import alloy.core as mx
from alloy.nn.layers.base import Module


def _along(values, dim, ndims):
    """A per-output vector shaped to broadcast along spatial axis `dim`."""
    shape = [1] * ndims
    shape[dim] = -1
    return values.reshape(shape)


def _positions(n, scale, align_corners, dim, ndims):
    """Where each of the int(scale * n) outputs of an axis samples its input."""
    m = int(scale * n)
    i = mx.arange(m, dtype=mx.float32)
    if align_corners:
        pos = i * ((n - 1) / max(m - 1, 1))
    else:
        step = 1 / scale
        pos = i * step - ((m - 1) * step - n + 1) / 2
    return _along(pos, dim, ndims)


def _nearest_taps(n, scale, dim, ndims):
    m = int(scale * n)
    i = mx.arange(m, dtype=mx.float32)
    # Upsampling rounds the output's centre; downsampling takes every n/m-th.
    i = mx.round((i + 0.5) * (n / m) - 0.5) if m > n else i * (n / m)
    return _along(i.astype(mx.uint32), dim, ndims)


def _linear_taps(n, scale, align_corners, dim, ndims):
    pos = mx.clip(_positions(n, scale, align_corners, dim, ndims), 0, n - 1)
    lo, hi = mx.floor(pos), mx.ceil(pos)
    frac = mx.expand_dims(pos - lo, -1)
    return (lo.astype(mx.uint32), 1 - frac), (hi.astype(mx.uint32), frac)


def _cubic_taps(n, scale, align_corners, dim, ndims, a=-0.75):
    """Four taps around each position; weights from the unclipped taps, then
    the taps clipped to the axis (the border value repeats)."""
    pos = _positions(n, scale, align_corners, dim, ndims)
    l1 = mx.floor(pos)
    r1 = mx.floor(pos + 1)
    taps = []
    for tap, near in ((l1, True), (r1, True), (l1 - 1, False), (r1 + 1, False)):
        t = mx.abs(pos - tap)
        w = ((a + 2.0) * t - (a + 3.0)) * t * t + 1 if near else (((t - 5) * t + 8) * t - 4) * a
        taps.append((mx.clip(tap, 0, n - 1).astype(mx.uint32), mx.expand_dims(w, -1)))
    return tuple(taps)


def _triangle(t):
    return mx.maximum(1.0 - t, 0.0)


def _keys_cubic(t, a=-0.5):
    inner = ((a + 2.0) * t - (a + 3.0)) * t * t + 1
    outer = (((t - 5) * t + 8) * t - 4) * a
    return mx.where(t <= 1.0, inner, mx.where(t <= 2.0, outer, 0.0))


def _antialiased_taps(n, scale, align_corners, dim, ndims, kernel, radius):
    """The kernel over every input sample within its support of each position,
    widened by 1 / scale when downsampling; taps outside the axis weigh
    nothing and each output's weights are normalised to sum to one."""
    pos = _positions(n, scale, align_corners, dim, ndims)
    widen = 1.0 / scale if scale < 1 else 1.0
    count = math.ceil(radius * widen) + 1
    base = mx.floor(pos)
    taps, weights = [], []
    for k in range(1 - count, count):
        tap = base + k
        w = kernel(mx.abs(pos - tap) / widen)
        weights.append(mx.where((tap >= 0) & (tap < n), w, 0.0))
        taps.append(tap)
    total = sum(weights)
    total = mx.where(total > 0, total, 1.0)
    return tuple((mx.clip(tap, 0, n - 1).astype(mx.uint32), mx.expand_dims(w / total, -1))
                 for tap, w in zip(taps, weights))


def _antialiased(kernel, radius):
    """The taps function of an antialiased interpolation with `kernel`."""
    def taps(n, scale, align_corners, dim, ndims):
        return _antialiased_taps(n, scale, align_corners, dim, ndims, kernel, radius)
    return taps


def _check_dims(x, scale_factor):
    if x.ndim - 2 != len(scale_factor):
        raise ValueError("A scale needs to be provided for each spatial dimension")


def _separable(x, scale_factor, taps_of, align_corners):
    """One spatial axis at a time: the weighted sum of its taps."""
    _check_dims(x, scale_factor)
    ndims = x.ndim - 2
    out = x
    for dim, (n, s) in enumerate(zip(x.shape[1:-1], scale_factor)):
        out = sum(mx.take(out, tap.reshape(-1), axis=dim + 1) * w
                  for tap, w in taps_of(n, s, align_corners, dim, ndims))
    return out


def _joint(x, scale_factor, taps_of, align_corners):
    """Every combination of the axes' taps at once, weighted by the product of
    their weights."""
    _check_dims(x, scale_factor)
    ndims = x.ndim - 2
    per_axis = [taps_of(n, s, align_corners, dim, ndims)
                for dim, (n, s) in enumerate(zip(x.shape[1:-1], scale_factor))]
    out = 0
    for combination in product(*per_axis):
        taps, weights = zip(*combination)
        out = out + reduce(operator.mul, weights) * x[(slice(None),) + taps]
    return out


def upsample_nearest(x, scale_factor):
    """Nearest neighbour; integer factors repeat each sample."""
    _check_dims(x, scale_factor)
    if tuple(map(int, scale_factor)) == tuple(scale_factor):
        for axis, s in enumerate(scale_factor, start=1):
            if int(s) != 1:
                x = mx.repeat(x, int(s), axis=axis)
        return x
    ndims = x.ndim - 2
    return x[(slice(None),) + tuple(_nearest_taps(n, s, dim, ndims)
                                     for dim, (n, s) in enumerate(zip(x.shape[1:-1], scale_factor)))]


def _no_antialias_with_corners(align_corners, antialias):
    if antialias and align_corners:
        raise ValueError("[Upsample] antialias=True with align_corners=True is not supported. Use "
                         "align_corners=False for antialiased interpolation.")


def upsample_linear(x, scale_factor, align_corners=False, antialias=False):
    _no_antialias_with_corners(align_corners, antialias)
    if antialias:
        return _separable(x, scale_factor, _antialiased(_triangle, 1.0), align_corners)
    if not align_corners:
        return _separable(x, scale_factor, _linear_taps, align_corners)
    return _joint(x, scale_factor, _linear_taps, align_corners)


def upsample_cubic(x, scale_factor, align_corners=False, antialias=False):
    _no_antialias_with_corners(align_corners, antialias)
    if antialias:
        return _separable(x, scale_factor, _antialiased(_keys_cubic, 2.0), align_corners)
    return _joint(x, scale_factor, _cubic_taps, align_corners)


class Upsample(Module):
    """Scales the spatial axes by ``scale_factor`` (one float, or one per
    spatial axis) with ``mode`` "nearest", "linear" or "cubic";
    ``antialias`` filters when downsampling (linear and cubic)."""

    def __init__(self, scale_factor, mode="nearest", align_corners=False, antialias=False):
        super().__init__()
        if mode not in ("nearest", "linear", "cubic"):
            raise ValueError(f"[Upsample] Got unsupported upsampling algorithm: {mode}")
        if antialias and mode == "nearest":
            raise ValueError("[Upsample] Antialiasing is not supported for nearest neighbor upsampling")
        self.scale_factor = (tuple(map(float, scale_factor)) if isinstance(scale_factor, (list, tuple))
                             else float(scale_factor))
        _no_antialias_with_corners(align_corners, antialias)
        self.mode = mode
        self.align_corners = align_corners
        self.antialias = antialias

    def _extra_repr(self):
        text = f"scale_factor={self.scale_factor}, mode={self.mode!r}, align_corners={self.align_corners}"
        return text + (", antialias=True" if self.antialias else "")

    def __call__(self, x):
        dims = x.ndim - 2
        if dims <= 0:
            raise ValueError(f"[Upsample] The input should have at least 1 spatial dimension which means it "
                             f"should be at least 3D but {x.ndim}D was provided")
        scales = self.scale_factor
        if isinstance(scales, tuple):
            if len(scales) != dims:
                raise ValueError(f"[Upsample] One scale per spatial dimension is required but "
                                 f"scale_factor={scales} and the number of spatial dimensions were {dims}")
        else:
            scales = (scales,) * dims
        if self.mode == "nearest":
            return upsample_nearest(x, scales)
        if self.mode == "linear":
            return upsample_linear(x, scales, self.align_corners, self.antialias)
        return upsample_cubic(x, scales, self.align_corners, self.antialias)
