"""Gradients of a model's trainable parameters."""
from functools import wraps

import alloy.core as mx


def value_and_grad(model, fn):
    """Wraps ``fn(*args)`` (which calls ``model``) so that it returns ``(value,
    grads)``, grads being a tree shaped like ``model.trainable_parameters()``."""

    def with_params(params, *args, **kwargs):
        # mx.value_and_grad differentiates with respect to `params`; putting
        # them into the model routes them through fn's forward pass.
        model.update(params)
        return fn(*args, **kwargs)

    value_grad = mx.value_and_grad(with_params)

    @wraps(fn)
    def wrapped(*args, **kwargs):
        return value_grad(model.trainable_parameters(), *args, **kwargs)

    return wrapped
