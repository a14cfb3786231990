"""Max and average pooling over the spatial axes of channels-last inputs
((N, L, C), (N, H, W, C), (N, D, H, W, C)), as mlx.nn's pooling layers.

Windows are strided views of the (padded) input: one as_strided gives
(N, *out_spatial, *kernel, C), reduced over the kernel axes."""
import alloy.core as mx
from alloy.nn.layers.base import Module


def _tuple(value, n, name):
    if isinstance(value, int):
        return (value,) * n
    value = tuple(value)
    if len(value) != n:
        raise ValueError(f"[{name}] expected {n} values, got {value}.")
    return value


class _Pool(Module):
    def __init__(self, dims, kernel_size, stride, padding, reduce, pad_value, name):
        super().__init__()
        self._dims = dims
        self._kernel_size = _tuple(kernel_size, dims, name)
        self._stride = self._kernel_size if stride is None else _tuple(stride, dims, name)
        self._padding = _tuple(padding, dims, name)
        self._reduce = reduce
        self._pad_value = pad_value
        self._name = name

    def _extra_repr(self):
        return f"kernel_size={self._kernel_size}, stride={self._stride}, padding={self._padding}"

    def __call__(self, x):
        d = self._dims
        if x.ndim != d + 2:
            raise ValueError(f"[{self._name}] expects inputs with {d + 2} dimensions (N, spatial..., C), "
                             f"got shape {tuple(x.shape)}.")
        if any(self._padding):
            width = [(0, 0)] + [(p, p) for p in self._padding] + [(0, 0)]
            x = mx.pad(x, width, constant_values=self._pad_value(x.dtype))
        x = mx.contiguous(x)
        shape = x.shape
        spatial = shape[1:-1]
        out = [(n - k) // s + 1 for n, k, s in zip(spatial, self._kernel_size, self._stride)]
        # A window just too large gives no windows (an empty output), one
        # further past the input an error, as MLX (its as_strided refuses the
        # negative size).
        if any(o < 0 for o in out):
            raise ValueError(f"[{self._name}] the window {self._kernel_size} does not fit the padded input "
                             f"{tuple(spatial)}.")
        # Row-major element strides of the padded input.
        strides = [1] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * shape[i + 1]
        window_shape = [shape[0], *out, *self._kernel_size, shape[-1]]
        window_strides = [strides[0], *[strides[1 + i] * self._stride[i] for i in range(d)],
                          *strides[1:-1], strides[-1]]
        windows = mx.as_strided(x, window_shape, window_strides)
        return self._reduce(windows, axis=tuple(range(1 + d, 1 + 2 * d)))


def _lowest(dtype):
    return -float("inf") if mx.issubdtype(dtype, mx.inexact) else mx.iinfo(dtype).min


def _zero(dtype):
    return 0


def _make(dims, reduce, pad_value, label):
    class Pool(_Pool):
        def __init__(self, kernel_size, stride=None, padding=0):
            super().__init__(dims, kernel_size, stride, padding, reduce, pad_value, label)

    Pool.__name__ = Pool.__qualname__ = label
    Pool.__doc__ = f"{label}: {'maximum' if reduce is mx.max else 'mean'} over windows of {dims} spatial axes."
    return Pool


MaxPool1d = _make(1, mx.max, _lowest, "MaxPool1d")
MaxPool2d = _make(2, mx.max, _lowest, "MaxPool2d")
MaxPool3d = _make(3, mx.max, _lowest, "MaxPool3d")
AvgPool1d = _make(1, mx.mean, _zero, "AvgPool1d")
AvgPool2d = _make(2, mx.mean, _zero, "AvgPool2d")
AvgPool3d = _make(3, mx.mean, _zero, "AvgPool3d")
