"""alloy.optimizers against mlx.optimizers: the same model and the same
gradients for a few steps give the same parameters and state."""
import numpy as np
import pytest

import alloy.core as ax
import alloy.nn as ann
import alloy.optimizers as aopt
import mlx.core as mc
import mlx.optimizers as mopt
from alloy.utils import tree_map
from mlx_oracle import MLX_DEVICE, assert_same_value
from nn_oracle import pair, to_mlx


def build(nn):
    return nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 3, bias=False))


def random_grads(rng, model):
    return tree_map(lambda p: ax.array(rng.standard_normal(p.shape).astype(np.float32)), model.parameters())


def run_steps(rng, make, steps=4, model=build, rtol=1e-5, atol=1e-6):
    """Applies `steps` updates with fresh random gradients to the same model
    in both frameworks; checks parameters and optimizer state each step."""
    mine, theirs = pair(model)
    opt_mine, opt_theirs = make(aopt), make(mopt)
    for _ in range(steps):
        grads = random_grads(rng, mine)
        opt_mine.update(mine, grads)
        with mc.stream(MLX_DEVICE):
            opt_theirs.update(theirs, to_mlx(grads))
            mc.eval(theirs.parameters(), opt_theirs.state)
        assert_same_value(mine.parameters(), theirs.parameters(), rtol, atol)
        assert_same_value(opt_mine.state, opt_theirs.state, rtol, atol)
    return opt_mine, opt_theirs


OPTIMIZERS = {
    "sgd": lambda o: o.SGD(0.1),
    "sgd_momentum": lambda o: o.SGD(0.05, momentum=0.9, weight_decay=0.01, dampening=0.1),
    "sgd_nesterov": lambda o: o.SGD(0.05, momentum=0.8, nesterov=True),
    "adam": lambda o: o.Adam(0.01),
    "adam_bias_correction": lambda o: o.Adam(0.01, betas=[0.8, 0.95], bias_correction=True),
    "adamw": lambda o: o.AdamW(0.01, weight_decay=0.1),
    "adagrad": lambda o: o.Adagrad(0.1),
    "rmsprop": lambda o: o.RMSprop(0.01, alpha=0.9),
    "lion": lambda o: o.Lion(0.01, weight_decay=0.1),
    "adamax": lambda o: o.Adamax(0.01, betas=[0.85, 0.99]),
    "adadelta": lambda o: o.AdaDelta(0.5, rho=0.8),
    "adafactor": lambda o: o.Adafactor(),
    "adafactor_lr_beta": lambda o: o.Adafactor(0.01, relative_step=False, beta_1=0.9, weight_decay=0.1,
                                               clip_threshold=0.5),
    "adafactor_warmup": lambda o: o.Adafactor(warmup_init=True, scale_parameter=False),
    "adam_cosine": lambda o: o.Adam(o.cosine_decay(0.1, 3, 0.01)),
    "sgd_joined": lambda o: o.SGD(o.join_schedules([o.linear_schedule(0.0, 0.1, 2), o.exponential_decay(0.1, 0.5)],
                                                   [2])),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizer_steps_match_mlx(rng, name):
    opt, _ = run_steps(rng, OPTIMIZERS[name])
    assert int(opt.step.item()) == 4


def test_learning_rate_setter_and_state_reset(rng):
    mine, theirs = run_steps(rng, lambda o: o.Adam(0.01), steps=2)
    mine.learning_rate = 0.5
    theirs.learning_rate = 0.5
    assert float(mine.learning_rate.item()) == 0.5
    # Replacing the state forces a fresh init on the next update.
    mine.state = {"step": ax.array(0, ax.uint64), "learning_rate": ax.array(0.1)}
    model = build(ann)
    mine.update(model, random_grads(rng, model))
    assert "m" in mine.state["layers"][0]["weight"]


@pytest.mark.parametrize("schedule", [
    lambda o: o.step_decay(0.1, 0.9, 3), lambda o: o.exponential_decay(0.2, 0.7),
    lambda o: o.cosine_decay(0.1, 5), lambda o: o.cosine_decay(0.1, 5, end=0.02),
    lambda o: o.linear_schedule(0.0, 1.0, 4),
    lambda o: o.join_schedules([o.linear_schedule(0.0, 0.1, 3), o.cosine_decay(0.1, 4)], [3]),
], ids=lambda _: "schedule")
def test_schedules_match_mlx(schedule):
    mine, theirs = schedule(aopt), schedule(mopt)
    for step in range(10):
        with mc.stream(MLX_DEVICE):
            want = theirs(mc.array(step))
        assert_same_value(mine(ax.array(step)), want)


def test_schedule_errors():
    for o in (aopt, mopt):
        with pytest.raises(ValueError):
            o.linear_schedule(0.0, 1.0, 0)
        with pytest.raises(ValueError):
            o.join_schedules([], [])
        with pytest.raises(ValueError):
            o.join_schedules([o.exponential_decay(0.1, 0.5)], [3])
        with pytest.raises(ValueError):
            o.SGD(0.1, momentum=0.0, nesterov=True)
        with pytest.raises(ValueError):
            o.RMSprop(0.1, alpha=-1)
        with pytest.raises(ValueError, match="decay_steps must be greater than 0"):
            o.cosine_decay(0.1, -5)
        with pytest.raises(ValueError, match="max_norm should be >=0"):
            o.clip_grad_norm({"w": (ax if o is aopt else mc).ones(3)}, -1.0)


@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm(rng, max_norm):
    model = build(ann)
    grads = random_grads(rng, model)
    got = aopt.clip_grad_norm(grads, max_norm)
    with mc.stream(MLX_DEVICE):
        want = mopt.clip_grad_norm(to_mlx(grads), max_norm)
        mc.eval(want)
    assert_same_value(got, want)


def test_training_loop_lowers_loss(rng):
    model = build(ann)
    x = ax.array(rng.standard_normal((16, 5)).astype(np.float32))
    y = ax.array(rng.standard_normal((16, 3)).astype(np.float32))
    loss_and_grad = ann.value_and_grad(model, lambda: ann.losses.mse_loss(model(x), y))
    opt = aopt.Adam(0.05)
    losses = []
    for _ in range(20):
        loss, grads = loss_and_grad()
        opt.update(model, grads)
        ax.eval(model.parameters(), opt.state)
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]


def test_multi_optimizer_matches_mlx(rng):
    # A model without lists: real MLX's MultiOptimizer cannot merge the
    # updates of a list of layers (its tree_merge refuses them).
    def make(o):
        return o.MultiOptimizer([o.Adam(0.01), o.SGD(0.05, momentum=0.9)], [lambda path, w: path == "bias"])

    run_steps(rng, make, steps=3, model=lambda nn: nn.Linear(5, 3))


def test_multi_optimizer_needs_one_filter_fewer():
    for o in (aopt, mopt):
        with pytest.raises(ValueError):
            o.MultiOptimizer([o.SGD(0.1), o.Adam(0.1)], [])


@pytest.mark.parametrize("kw", [{}, {"nesterov": False, "weight_decay": 0.0, "ns_steps": 3}])
def test_muon_matches_mlx(rng, kw):
    # Newton-Schulz iterations in float32 in both: a looser tolerance
    run_steps(rng, lambda o: o.Muon(0.02, **kw), rtol=1e-4, atol=1e-5)
