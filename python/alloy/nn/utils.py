"""Gradients of a model's trainable parameters, checkpointing, and
averaging gradients over a distributed group."""
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


def checkpoint(module, fn=None):
    """``fn`` (default: the module's ``__call__``), recomputed during
    differentiation instead of keeping its intermediate values. The module's
    trainable parameters are passed in explicitly, so they get gradients too
    (a checkpointed function only differentiates its explicit inputs)."""
    if fn is None:
        fn = module.__call__

    def with_params(params, *args, **kwargs):
        module.update(params)
        return fn(*args, **kwargs)

    checkpointed = mx.checkpoint(with_params)

    @wraps(fn)
    def wrapped(*args, **kwargs):
        return checkpointed(module.trainable_parameters(), *args, **kwargs)

    return wrapped


def average_gradients(gradients, group=None, all_reduce_size=32 * 1024**2, communication_stream=None):
    """Averages a tree of gradients over the distributed group."""
    from alloy.nn.layers.distributed import average_gradients as average

    return average(gradients, group, all_reduce_size, communication_stream)
