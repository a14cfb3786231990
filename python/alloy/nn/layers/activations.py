"""Activation functions and their module forms, as in ``mlx.nn``.

Each function is plain array math on ``alloy.core``, so ``mx.grad`` sees
through it. MLX compiles these with ``mx.compile``; alloy.core has no compile
yet, and the results are the same without it.
"""
import math

import alloy.core as mx
from alloy.nn.layers.base import Module


def sigmoid(x):
    return mx.sigmoid(x)


def relu(x):
    return mx.maximum(x, 0)


def relu2(x):
    """ReLU squared."""
    return mx.square(mx.maximum(x, 0))


def relu6(x):
    return mx.minimum(mx.maximum(x, 0), 6.0)


def leaky_relu(x, negative_slope=0.01):
    return mx.maximum(negative_slope * x, x)


def log_softmax(x, axis=-1):
    return x - mx.logsumexp(x, axis=axis, keepdims=True)


def elu(x, alpha=1.0):
    return mx.where(x > 0, x, alpha * (mx.exp(x) - 1))


def softmax(x, axis=-1):
    return mx.softmax(x, axis=axis)


def softmin(x, axis=-1):
    return mx.softmax(-x, axis=axis)


def softplus(x):
    # log(1 + e^x) without overflow for large x.
    return mx.logaddexp(x, 0)


def softsign(x):
    return mx.divide(x, 1 + mx.abs(x))


def softshrink(x, lambd=0.5):
    return mx.where(mx.abs(x) > lambd, x - mx.sign(x) * lambd, 0)


def celu(x, alpha=1.0):
    return mx.maximum(x, 0.0) + alpha * (mx.exp(mx.minimum(x, 0.0) / alpha) - 1)


def silu(x):
    return x * mx.sigmoid(x)


def log_sigmoid(x):
    return -softplus(-x)


def gelu(x):
    """Exact GELU, through the Gaussian CDF."""
    return x * (1 + mx.erf(x / math.sqrt(2))) / 2


def gelu_approx(x):
    """GELU with the tanh approximation."""
    return 0.5 * x * (1 + mx.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def gelu_fast_approx(x):
    """GELU as x * sigmoid(1.702 x)."""
    return x * mx.sigmoid(1.702 * x)


def glu(x, axis=-1):
    """Splits ``x`` in two halves along ``axis``: a * sigmoid(b)."""
    a, b = mx.split(x, 2, axis=axis)
    return a * mx.sigmoid(b)


def step(x, threshold=0.0):
    return mx.where(x > threshold, 1, 0)


def selu(x):
    return elu(x, 1.67326) * 1.0507


def prelu(x, alpha):
    return mx.maximum(0, x) + alpha * mx.minimum(0, x)


def mish(x):
    return x * mx.tanh(softplus(x))


def hardswish(x):
    return x * mx.minimum(mx.maximum(x + 3, 0), 6) / 6


def hard_tanh(x, min_val=-1.0, max_val=1.0):
    return mx.minimum(mx.maximum(x, min_val), max_val)


def hard_shrink(x, lambd=0.5):
    return mx.where(mx.abs(x) > lambd, x, 0)


def tanh(x):
    return mx.tanh(x)


# ---- modules ---------------------------------------------------------------

def _module(fn, name):
    """A parameterless module class whose call is ``fn``."""

    def __call__(self, x):
        return fn(x)

    return type(name, (Module,), {"__call__": __call__, "__doc__": f"Module form of ``{fn.__name__}``."})


Sigmoid = _module(sigmoid, "Sigmoid")
ReLU = _module(relu, "ReLU")
ReLU2 = _module(relu2, "ReLU2")
ReLU6 = _module(relu6, "ReLU6")
Softplus = _module(softplus, "Softplus")
Softsign = _module(softsign, "Softsign")
SiLU = _module(silu, "SiLU")
LogSigmoid = _module(log_sigmoid, "LogSigmoid")
SELU = _module(selu, "SELU")
Mish = _module(mish, "Mish")
Hardswish = _module(hardswish, "Hardswish")
Tanh = _module(tanh, "Tanh")


class _AxisActivation(Module):
    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis


class GLU(_AxisActivation):
    def __call__(self, x):
        return glu(x, self.axis)


class Softmax(_AxisActivation):
    def __call__(self, x):
        return softmax(x, self.axis)


class Softmin(_AxisActivation):
    def __call__(self, x):
        return softmin(x, self.axis)


class LogSoftmax(_AxisActivation):
    def __call__(self, x):
        return log_softmax(x, self.axis)


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01):
        super().__init__()
        self._negative_slope = negative_slope

    def __call__(self, x):
        return leaky_relu(x, self._negative_slope)


class ELU(Module):
    def __init__(self, alpha=1.0):
        super().__init__()
        self._alpha = alpha

    def __call__(self, x):
        return elu(x, self._alpha)


class CELU(Module):
    def __init__(self, alpha=1.0):
        super().__init__()
        self._alpha = alpha

    def __call__(self, x):
        return celu(x, self._alpha)


class Softshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def __call__(self, x):
        return softshrink(x, self.lambd)


class HardShrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def __call__(self, x):
        return hard_shrink(x, self.lambd)


class HardTanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def __call__(self, x):
        return hard_tanh(x, self.min_val, self.max_val)


class Step(Module):
    def __init__(self, threshold=0.0):
        super().__init__()
        self.threshold = threshold

    def __call__(self, x):
        return step(x, self.threshold)


class PReLU(Module):
    """Leaky ReLU with a learned slope (one, or one per channel)."""

    def __init__(self, num_parameters=1, init=0.25):
        super().__init__()
        self.weight = mx.full([num_parameters], init)

    def __call__(self, x):
        return prelu(x, self.weight)


class GELU(Module):
    """GELU; ``approx`` picks the formula: 'none' (exact), 'precise' or
    'tanh' (tanh approximation), 'fast' (sigmoid approximation)."""

    _FORMS = {"none": gelu, "precise": gelu_approx, "tanh": gelu_approx, "fast": gelu_fast_approx}

    def __init__(self, approx="none"):
        super().__init__()
        if approx not in self._FORMS:
            raise ValueError(
                f"The approximation should be in {list(self._FORMS)} but '{approx}' was given"
            )
        self._act = self._FORMS[approx]

    def __call__(self, x):
        return self._act(x)
