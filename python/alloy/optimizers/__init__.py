"""Optimizers and learning-rate schedules on ``alloy.core``, with
``mlx.optimizers``' API: ``import alloy.optimizers as optim``."""
from alloy.optimizers.optimizers import (  # noqa: F401
    SGD, AdaDelta, Adafactor, Adagrad, Adam, Adamax, AdamW, Lion, MultiOptimizer, Optimizer, RMSprop, clip_grad_norm,
)
from alloy.optimizers.schedulers import (  # noqa: F401
    cosine_decay, exponential_decay, join_schedules, linear_schedule, step_decay,
)
from alloy.optimizers.muon import Muon  # noqa: F401
