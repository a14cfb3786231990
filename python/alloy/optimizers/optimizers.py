"""Optimizers, as ``mlx.optimizers``.

An optimizer keeps a state tree shaped like the parameters (one dict per
parameter, filled by ``init_single``) plus ``step`` and its hyper-parameters
as arrays; a hyper-parameter given as a callable is a schedule evaluated at
each step.
"""
import alloy.core as mx
from alloy.utils import tree_flatten, tree_map, tree_merge, tree_reduce, tree_unflatten


class Optimizer:
    """Base class: subclasses define ``init_single`` and ``apply_single``."""

    def __init__(self, schedulers=None):
        self._initialized = False
        self._state = {"step": mx.array(0, mx.uint64)}
        self._schedulers = dict(schedulers or {})

    def update(self, model, gradients):
        """Applies one step to ``model``'s parameters."""
        model.update(self.apply_gradients(gradients, model))

    def init(self, parameters):
        """Creates the per-parameter state for every parameter not yet known
        (keeps the state of those already there)."""

        def add_missing(params, state):
            if isinstance(params, (list, tuple)):
                state = list(state)
                for i in range(min(len(state), len(params))):
                    state[i] = add_missing(params[i], state[i])
                state.extend(tree_map(lambda _: {}, params[len(state):]))
                return type(params)(state)
            if isinstance(params, dict):
                for k, v in params.items():
                    state[k] = add_missing(v, state[k]) if k in state else tree_map(lambda _: {}, v)
                return state
            return state

        add_missing(parameters, self._state)
        # An empty leaf state means a new parameter; init_single fills it.
        tree_map(lambda p, s: s or self.init_single(p, s), parameters, self._state)
        self._initialized = True

    def init_single(self, parameter, state):
        raise NotImplementedError

    def apply_gradients(self, gradients, parameters):
        """The updated parameters (a tree like ``gradients``); advances the
        step and evaluates the schedules."""
        if not self._initialized:
            self.init(gradients)
        for name, schedule in self._schedulers.items():
            self.state[name] = schedule(self.step)
        self.state["step"] = self.step + 1
        return tree_map(self.apply_single, gradients, parameters, self.state)

    def apply_single(self, gradient, parameter, state):
        raise NotImplementedError

    @property
    def state(self):
        return self._state

    @state.setter
    def state(self, state):
        # A replaced state may lack entries: init() fills them on next use.
        self._initialized = False
        self._state = state

    @property
    def step(self):
        return self.state["step"]

    @property
    def learning_rate(self):
        return self.state["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        self.state["learning_rate"] = mx.array(learning_rate)

    def _maybe_schedule(self, name, value):
        if callable(value):
            self._schedulers[name] = value
            value = value(self.step)
        else:
            value = mx.array(value)
        self.state[name] = value


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum (``dampening``
    scales the new gradient into the velocity), Nesterov momentum and L2
    ``weight_decay``."""

    def __init__(self, learning_rate, momentum=0.0, weight_decay=0.0, dampening=0.0, nesterov=False):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening.")
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.dampening = dampening
        self.nesterov = nesterov

    def init_single(self, parameter, state):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        if self.weight_decay != 0:
            gradient = gradient + self.weight_decay * parameter
        if self.momentum <= 0:
            return parameter - lr * gradient
        v = self.momentum * state["v"]
        v = v + ((1 - self.dampening) * gradient if self.dampening > 0 else gradient)
        state["v"] = v
        update = gradient + self.momentum * v if self.nesterov else v
        return parameter - lr * update


class RMSprop(Optimizer):
    """v = alpha v + (1 - alpha) g^2; p -= lr g / (sqrt(v) + eps)."""

    def __init__(self, learning_rate, alpha=0.99, eps=1e-8):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.alpha = alpha
        self.eps = eps
        if self.alpha < 0.0:
            raise ValueError(f"RMSprop alpha should be >=0, {self.alpha} was provided instead")
        if self.eps < 0.0:
            raise ValueError(f"RMSprop epsilon should be >0, {self.eps} was provided instead")

    def init_single(self, parameter, state):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        v = self.alpha * state["v"] + (1 - self.alpha) * mx.square(gradient)
        state["v"] = v
        return parameter - lr * gradient / (mx.sqrt(v) + self.eps)


class Adagrad(Optimizer):
    """v += g^2; p -= lr g / (sqrt(v) + eps)."""

    def __init__(self, learning_rate, eps=1e-8):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps
        if self.eps < 0.0:
            raise ValueError(f"Adagrad epsilon should be >0, {self.eps} was provided instead")

    def init_single(self, parameter, state):
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        v = state["v"] + mx.square(gradient)
        state["v"] = v
        return parameter - lr * gradient / (mx.sqrt(v) + self.eps)


class Adam(Optimizer):
    """Adam; without ``bias_correction`` (MLX's default) the moments are used
    as they are."""

    def __init__(self, learning_rate, betas=(0.9, 0.999), eps=1e-8, bias_correction=False):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.eps = eps
        self.bias_correction = bias_correction

    def init_single(self, parameter, state):
        state["m"] = mx.zeros_like(parameter)
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = b2 * state["v"] + (1 - b2) * mx.square(gradient)
        state["m"], state["v"] = m, v
        if self.bias_correction:
            step = self.step
            c1 = (lr / (1 - b1**step)).astype(gradient.dtype)
            c2 = mx.rsqrt(1 - b2**step).astype(gradient.dtype)
            return parameter - c1 * m / (mx.sqrt(v) * c2 + self.eps)
        return parameter - lr * m / (mx.sqrt(v) + self.eps)


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr * weight_decay first."""

    def __init__(self, learning_rate, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, bias_correction=False):
        super().__init__(learning_rate=learning_rate, betas=betas, eps=eps, bias_correction=bias_correction)
        self.weight_decay = weight_decay

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        return super().apply_single(gradient, parameter * (1 - lr * self.weight_decay), state)


class Lion(Optimizer):
    """Lion: the update is the sign of an interpolated momentum."""

    def __init__(self, learning_rate, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.weight_decay = weight_decay

    def init_single(self, parameter, state):
        state["m"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = state["m"]
        direction = b1 * m + (1 - b1) * gradient
        state["m"] = b2 * m + (1 - b2) * gradient
        if self.weight_decay > 0:
            parameter = (1 - lr * self.weight_decay) * parameter
        return parameter - lr * mx.sign(direction)


def clip_grad_norm(grads, max_norm):
    """Scales ``grads`` so their global L2 norm is at most ``max_norm``;
    returns ``(clipped_grads, total_norm)``."""
    if max_norm < 0:
        raise ValueError(f"max_norm should be >=0, {max_norm} was provided instead")
    norm_squared = tree_reduce(lambda acc, g: acc + g.square().sum(), grads, 0.0)
    total_norm = mx.sqrt(norm_squared)
    normalizer = mx.minimum(max_norm / (total_norm + 1e-6), 1.0)
    return tree_map(lambda g: g * normalizer, grads), total_norm


class Adamax(Optimizer):
    """Adam with the infinity norm: m = b1 m + (1 - b1) g; v = max(b2 v, |g|);
    p -= lr m / (v + eps) (no bias correction, as MLX)."""

    def __init__(self, learning_rate, betas=(0.9, 0.999), eps=1e-8):
        super().__init__()
        if not 0.0 <= eps:
            raise ValueError(f"Epsilon value should be >=0, {eps} was provided instead")
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.eps = eps

    def init_single(self, parameter, state):
        state["m"] = mx.zeros_like(parameter)
        state["v"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        b1, b2 = self.betas
        m = b1 * state["m"] + (1 - b1) * gradient
        v = mx.maximum(b2 * state["v"], mx.abs(gradient))
        state["m"], state["v"] = m, v
        return parameter - lr * m / (v + self.eps)


class AdaDelta(Optimizer):
    """v = rho v + (1 - rho) g^2; d = sqrt(u + eps) / sqrt(v + eps) g;
    u = rho u + (1 - rho) d^2; p -= lr d."""

    def __init__(self, learning_rate, rho=0.9, eps=1e-6):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.rho = rho
        self.eps = eps
        if self.rho < 0.0:
            raise ValueError(f"AdaDelta rho should be >=0, {self.rho} was provided instead")
        if self.eps < 0.0:
            raise ValueError(f"AdaDelta epsilon should be >0, {self.eps} was provided instead")

    def init_single(self, parameter, state):
        state["v"] = mx.zeros_like(parameter)
        state["u"] = mx.zeros_like(parameter)

    def apply_single(self, gradient, parameter, state):
        lr = self.learning_rate.astype(gradient.dtype)
        rho = self.rho
        v = rho * state["v"] + (1 - rho) * mx.square(gradient)
        d = mx.sqrt(state["u"] + self.eps) * mx.rsqrt(v + self.eps) * gradient
        u = rho * state["u"] + (1 - rho) * mx.square(d)
        state["v"], state["u"] = v, u
        return parameter - lr * d


class MultiOptimizer(Optimizer):
    """Several optimizers, each for the parameters its filter accepts
    (``filter(path, array)``; one filter fewer than optimizers: the last
    optimizer takes every parameter no filter took)."""

    def __init__(self, optimizers, filters=()):
        super().__init__()
        if len(filters) != len(optimizers) - 1:
            raise ValueError(f"Given {len(filters)} filters but {len(optimizers) - 1} needed.")
        self.optimizers = list(optimizers)
        self.filters = list(filters) + [lambda path, array: True]

    def _split(self, tree):
        """`tree` cut into one tree per optimizer, by the first filter that
        accepts each leaf."""
        parts = [[] for _ in self.optimizers]
        for path, leaf in tree_flatten(tree):
            for part, keep in zip(parts, self.filters):
                if keep(path, leaf):
                    part.append((path, leaf))
                    break
        return [tree_unflatten(p) for p in parts]

    def init(self, parameters):
        for optimizer, part in zip(self.optimizers, self._split(parameters)):
            optimizer.init(part)
        self._initialized = True

    def apply_gradients(self, gradients, parameters):
        updated = {}
        for optimizer, part in zip(self.optimizers, self._split(gradients)):
            if part:
                updated = tree_merge(updated, optimizer.apply_gradients(part, parameters))
        return updated

    @property
    def state(self):
        return {"states": [o.state for o in self.optimizers]}

    @state.setter
    def state(self, state):
        if "states" not in state or len(state["states"]) != len(self.optimizers):
            raise ValueError("Invalid state for MultiOptimizer: expected one state per optimizer.")
        for optimizer, s in zip(self.optimizers, state["states"]):
            optimizer.state = s

    @property
    def learning_rate(self):
        return self.optimizers[0].learning_rate


class Adafactor(Optimizer):
    """Adafactor: second moments kept as row and column averages for
    matrices; relative step sizes scaled by the parameter's RMS; updates
    clipped by their RMS (``clip_threshold``)."""

    def __init__(self, learning_rate=None, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8, beta_1=None,
                 weight_decay=0.0, scale_parameter=True, relative_step=True, warmup_init=False):
        super().__init__()
        if learning_rate is not None:
            self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps
        self.clip_threshold = clip_threshold
        self.decay_rate = decay_rate
        self.beta_1 = beta_1
        self.weight_decay = weight_decay
        self.scale_parameter = scale_parameter
        self.relative_step = relative_step
        self.warmup_init = warmup_init

    def init_single(self, parameter, state):
        if parameter.ndim >= 2:
            shape = parameter.shape
            state["exp_avg_sq_row"] = mx.zeros(shape[:-1], dtype=parameter.dtype)
            state["exp_avg_sq_col"] = mx.zeros(shape[:-2] + shape[-1:], dtype=parameter.dtype)
        else:
            state["exp_avg_sq"] = mx.zeros_like(parameter)
        if self.beta_1 is not None:
            state["exp_avg"] = mx.zeros_like(parameter)

    @staticmethod
    def _rms(x):
        return mx.sqrt(mx.mean(mx.square(x)))

    def _step_size(self, parameter):
        step = self.step.astype(mx.float32)
        if self.relative_step:
            min_step = 1e-6 * step if self.warmup_init else 1e-2
            lr = mx.minimum(min_step, mx.rsqrt(step))
        else:
            lr = self.learning_rate.astype(mx.float32)
        if self.scale_parameter:
            lr = mx.maximum(self.eps[1], self._rms(parameter)) * lr
        return lr

    def apply_single(self, gradient, parameter, state):
        lr = self._step_size(parameter)
        beta_2 = 1.0 - mx.power(self.step.astype(mx.float32), self.decay_rate)
        update = mx.square(gradient) + self.eps[0]
        if gradient.ndim >= 2:
            row = beta_2 * state["exp_avg_sq_row"] + (1 - beta_2) * mx.mean(update, axis=-1)
            col = beta_2 * state["exp_avg_sq_col"] + (1 - beta_2) * mx.mean(update, axis=-2)
            state["exp_avg_sq_row"], state["exp_avg_sq_col"] = row, col
            row_factor = mx.rsqrt(row / mx.mean(row, axis=-1, keepdims=True))[..., None]
            col_factor = mx.rsqrt(col)[..., None, :]
            update = row_factor * col_factor * gradient
        else:
            v = beta_2 * state["exp_avg_sq"] + (1 - beta_2) * update
            state["exp_avg_sq"] = v
            update = mx.rsqrt(v) * gradient
        update = update / mx.maximum(1.0, self._rms(update) / self.clip_threshold)
        update = lr * update
        if self.beta_1 is not None:
            update = self.beta_1 * state["exp_avg"] + (1 - self.beta_1) * update
            state["exp_avg"] = update
        if self.weight_decay != 0:
            parameter = parameter + parameter * (-self.weight_decay * lr)
        return (parameter - update).astype(parameter.dtype)
