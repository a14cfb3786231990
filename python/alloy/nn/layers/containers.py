"""Sequential: calls its layers one after another."""
from alloy.nn.layers.base import Module


class Sequential(Module):
    """Applies ``modules`` (or any callables) in order; they are kept in the
    list ``layers`` so their parameters appear as ``layers.<i>.*``."""

    def __init__(self, *modules):
        super().__init__()
        self.layers = list(modules)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
