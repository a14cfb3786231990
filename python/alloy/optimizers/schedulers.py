"""Learning-rate schedules: functions of the optimizer's step (an array)
that return the rate for that step."""
import math

import alloy.core as mx


def exponential_decay(init, decay_rate):
    """init * decay_rate ** step."""
    def schedule(step):
        return init * decay_rate**step
    return schedule


def step_decay(init, decay_rate, step_size):
    """init * decay_rate ** (step // step_size)."""
    def schedule(step):
        return init * (decay_rate ** (step // step_size))
    return schedule


def cosine_decay(init, decay_steps, end=0.0):
    """Half a cosine from ``init`` down to ``end`` over ``decay_steps``, then
    ``end``."""
    if decay_steps <= 0:
        raise ValueError(f"decay_steps must be greater than 0, but got {decay_steps}.")

    def schedule(step):
        s = mx.minimum(step, decay_steps)
        decay = 0.5 * (1.0 + mx.cos((math.pi / decay_steps) * s))
        return end + decay * (init - end)
    return schedule


def linear_schedule(init, end, steps):
    """From ``init`` to ``end`` linearly over ``steps``, then ``end``."""
    if steps < 1:
        raise ValueError(f"steps must be greater than 0, but got {steps}.")

    def schedule(step):
        step = mx.minimum(step, steps)
        return step * ((end - init) / steps) + init
    return schedule


def join_schedules(schedules, boundaries):
    """``schedules[i]`` from step ``boundaries[i-1]`` on, each seeing the
    steps counted from its own start."""
    if len(schedules) == 0:
        raise ValueError("Must provide at least 1 schedule.")
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"Received {len(boundaries)} boundaries but expected {len(schedules) - 1}.")

    def schedule(step):
        out = schedules[0](step)
        for boundary, later in zip(boundaries, schedules[1:]):
            out = mx.where(step < boundary, out, later(step - boundary))
        return out
    return schedule
