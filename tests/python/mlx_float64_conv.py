"""Convolutions in float64 built from MLX's own ops (pads, strided slices,
broadcast products, sums), for float64 references MLX cannot compute
itself: its Convolution primitive has no float64. Inside `float64_convs()`,
mx.conv1d / conv2d / conv3d / conv_transpose1d / conv_transpose2d /
conv_general take this path for float64 arrays and MLX's own otherwise.
Layout as MLX's: input (N, *spatial, C_in), weight (C_out, *kernel, C_in / groups)."""
import contextlib
import itertools

import mlx.core as mx


def _per_dim(v, nd):
    return [v] * nd if isinstance(v, int) else list(v)


def _dilate(x, axis, factor):
    """factor - 1 zeros between neighbours along `axis`."""
    n = x.shape[axis]
    x = mx.expand_dims(x, axis + 1)
    pads = [(0, 0)] * x.ndim
    pads[axis + 1] = (0, factor - 1)
    x = mx.pad(x, pads)
    shape = list(x.shape)
    x = x.reshape(shape[:axis] + [n * factor] + shape[axis + 2:])
    index = [slice(None)] * x.ndim
    index[axis] = slice(0, (n - 1) * factor + 1)
    return x[tuple(index)]


def _pad_or_crop(x, axis, lo, hi):
    pads = [(0, 0)] * x.ndim
    pads[axis] = (max(lo, 0), max(hi, 0))
    x = mx.pad(x, pads)
    index = [slice(None)] * x.ndim
    index[axis] = slice(max(-lo, 0), x.shape[axis] - max(-hi, 0))
    return x[tuple(index)]


def conv_general(x, w, stride=1, padding=0, kernel_dilation=1, input_dilation=1, groups=1, flip=False):
    """mx.conv_general's result, summed tap by tap in x's dtype."""
    nd = x.ndim - 2
    stride, dil, idil = (_per_dim(v, nd) for v in (stride, kernel_dilation, input_dilation))
    if isinstance(padding, (tuple, list)) and len(padding) == 2 and not isinstance(padding[0], int):
        lo, hi = list(padding[0]), list(padding[1])
    else:
        lo = hi = _per_dim(padding, nd)
    for d in range(nd):
        if idil[d] > 1:
            x = _dilate(x, d + 1, idil[d])
        x = _pad_or_crop(x, d + 1, lo[d], hi[d])
    if flip:
        w = w[(slice(None),) + (slice(None, None, -1),) * nd + (slice(None),)]
    kernel = w.shape[1:-1]
    out = [(x.shape[d + 1] - dil[d] * (kernel[d] - 1) - 1) // stride[d] + 1 for d in range(nd)]
    c_out, c_group = w.shape[0], w.shape[-1]
    taps = w.size // (c_out * c_group)
    w = w.reshape(groups, c_out // groups, taps, c_group)
    total = None
    for t, tap in enumerate(itertools.product(*[range(k) for k in kernel])):
        index = (slice(None),) + tuple(
            slice(tap[d] * dil[d], tap[d] * dil[d] + (out[d] - 1) * stride[d] + 1, stride[d]) for d in range(nd)
        ) + (slice(None),)
        xs = x[index].reshape([x.shape[0]] + out + [groups, 1, c_group])
        term = (xs * w[:, :, t, :]).sum(-1)  # (N, *out, groups, C_out / groups)
        total = term if total is None else total + term
    return total.reshape([x.shape[0]] + out + [c_out])


def _conv(x, w, stride=1, padding=0, dilation=1, groups=1):
    return conv_general(x, w, stride, padding, dilation, 1, groups)


def _conv_transpose(nd):
    # A transposed convolution is a convolution of the input dilated by the
    # stride, with the kernel flipped and padded by dilation * (k - 1) - padding.
    def conv_transpose(x, w, stride=1, padding=0, dilation=1, output_padding=0, groups=1):
        stride, padding, dilation, output_padding = (
            _per_dim(v, nd) for v in (stride, padding, dilation, output_padding))
        kernel = w.shape[1:-1]
        lo = [dilation[d] * (kernel[d] - 1) - padding[d] for d in range(nd)]
        hi = [lo[d] + output_padding[d] for d in range(nd)]
        return conv_general(x, w, 1, (lo, hi), dilation, stride, groups, flip=True)
    return conv_transpose


_REPLACEMENTS = {"conv1d": _conv, "conv2d": _conv, "conv3d": _conv,
                 "conv_transpose1d": _conv_transpose(1), "conv_transpose2d": _conv_transpose(2),
                 "conv_general": conv_general}


@contextlib.contextmanager
def float64_convs():
    """mx's convolutions take conv_general's path above for float64 inputs."""
    originals = {name: getattr(mx, name) for name in _REPLACEMENTS}

    def routed(name):
        def call(x, w, *args, **kwargs):
            kwargs.pop("stream", None)
            if x.dtype == mx.float64 or w.dtype == mx.float64:
                return _REPLACEMENTS[name](x.astype(mx.float64), w.astype(mx.float64), *args, **kwargs)
            return originals[name](x, w, *args, **kwargs)
        return call

    for name in _REPLACEMENTS:
        setattr(mx, name, routed(name))
    try:
        yield
    finally:
        for name, f in originals.items():
            setattr(mx, name, f)
