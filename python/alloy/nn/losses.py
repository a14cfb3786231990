"""Loss functions, as ``mlx.nn.losses``. Each takes a ``reduction``:
'none' (per-element losses), 'mean' or 'sum'."""
import math

import alloy.core as mx

_REDUCTIONS = ("none", "mean", "sum")


def _reduce(loss, reduction="none"):
    if reduction == "mean":
        return mx.mean(loss)
    if reduction == "sum":
        return mx.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError("Invalid reduction. Must be 'none', 'mean', or 'sum'.")


def _same_shape(a, b, a_name, b_name):
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{a_name} shape {tuple(a.shape)} does not match {b_name} shape {tuple(b.shape)}.")


def _apply_weights(loss, weights):
    if weights is None:
        return loss
    if tuple(weights.shape) != tuple(loss.shape):
        raise ValueError(
            f"Weights with shape {tuple(weights.shape)} is not the same as output loss with shape {tuple(loss.shape)}."
        )
    return loss * weights


def cross_entropy(logits, targets, weights=None, axis=-1, label_smoothing=0.0, reduction="none"):
    """Cross entropy of ``logits`` against class indices (``targets`` with
    ``axis`` dropped) or probabilities (``targets`` shaped like ``logits``).
    ``label_smoothing`` mixes the target with the uniform distribution."""
    if label_smoothing < 0 or label_smoothing >= 1:
        raise ValueError(f"Label smoothing must in [0, 1), got {label_smoothing}.")

    as_probs = targets.ndim == logits.ndim
    expected = list(logits.shape)
    if not as_probs:
        expected.pop(axis)
    if tuple(targets.shape) != tuple(expected):
        raise ValueError(f"Targets shape {tuple(targets.shape)} does not match logits shape {tuple(logits.shape)}.")

    fused = (mx.default_device() == mx.gpu and not as_probs and label_smoothing == 0
             and axis in (-1, logits.ndim - 1) and mx.issubdtype(logits.dtype, mx.floating)
             and mx.issubdtype(targets.dtype, mx.integer))
    if fused:
        # As MLX on its GPU: one kernel accumulating in float32.
        return _reduce(_apply_weights(mx.fast.cross_entropy(logits, targets).astype(logits.dtype), weights),
                       reduction)

    # The largest logit is taken out first, as MLX does: with targets that do
    # not sum to 1 the loss depends on it.
    logits = logits - mx.stop_gradient(mx.max(logits, axis=axis, keepdims=True))
    if as_probs:
        score = mx.sum(logits * targets, axis=axis)
    else:
        score = mx.take_along_axis(logits, mx.expand_dims(targets, axis), axis).squeeze(axis)

    lse = mx.logsumexp(logits, axis=axis)
    if label_smoothing > 0:
        # The smoothed target puts (1 - s) on the true class and s spread
        # evenly over all classes, whose score is the mean logit.
        loss = lse - (1 - label_smoothing) * score - label_smoothing * logits.mean(axis=axis)
    else:
        loss = lse - score
    return _reduce(_apply_weights(loss, weights), reduction)


def binary_cross_entropy(inputs, targets, weights=None, with_logits=True, reduction="mean"):
    """Binary cross entropy of logits (``with_logits``) or probabilities;
    logs of probabilities are clipped at -100 so 0 and 1 stay finite."""
    _same_shape(inputs, targets, "Inputs", "targets")
    if with_logits:
        loss = mx.logaddexp(0.0, inputs) - inputs * targets
    else:
        log_p = mx.clip(mx.log(inputs), -100, None)
        log_1mp = mx.clip(mx.log(1 - inputs), -100, None)
        loss = -(targets * log_p + (1 - targets) * log_1mp)
    return _reduce(_apply_weights(loss, weights), reduction)


def l1_loss(predictions, targets, reduction="mean"):
    _same_shape(predictions, targets, "Predictions", "targets")
    return _reduce(mx.abs(predictions - targets), reduction)


def mse_loss(predictions, targets, reduction="mean"):
    _same_shape(predictions, targets, "Predictions", "targets")
    return _reduce(mx.square(predictions - targets), reduction)


def nll_loss(inputs, targets, axis=-1, reduction="none"):
    """Negative log likelihood of class indices ``targets`` given
    log-probabilities ``inputs``."""
    loss = -mx.take_along_axis(inputs, mx.expand_dims(targets, -1), axis).squeeze(-1)
    return _reduce(loss, reduction)


def kl_div_loss(inputs, targets, axis=-1, reduction="none"):
    """KL(targets || inputs), both given as log-probabilities."""
    loss = mx.sum(mx.exp(targets) * (targets - inputs), axis)
    return _reduce(loss, reduction)


def smooth_l1_loss(predictions, targets, beta=1.0, reduction="mean"):
    """Quadratic below ``beta``, linear above."""
    _same_shape(predictions, targets, "Predictions", "targets")
    diff = mx.abs(predictions - targets)
    loss = mx.where(diff < beta, 0.5 * mx.square(diff) / beta, diff - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(inputs, targets, delta=1.0, reduction="none"):
    errors = inputs - targets
    abs_errors = mx.abs(errors)
    quadratic = mx.minimum(abs_errors, delta)
    linear = abs_errors - quadratic
    return _reduce(0.5 * quadratic**2 + delta * linear, reduction)


def hinge_loss(inputs, targets, reduction="none"):
    return _reduce(mx.maximum(1 - inputs * targets, 0), reduction)


def log_cosh_loss(inputs, targets, reduction="none"):
    # log(cosh(e)) = logaddexp(e, -e) - log 2, stable for large |e|.
    errors = inputs - targets
    return _reduce(mx.logaddexp(errors, -errors) - math.log(2), reduction)


def gaussian_nll_loss(inputs, targets, vars, full=False, eps=1e-6, reduction="mean"):
    """Negative log likelihood of ``targets`` under N(inputs, vars)."""
    _same_shape(inputs, targets, "Inputs", "targets")
    _same_shape(inputs, vars, "Inputs", "vars")
    vars = mx.maximum(vars, eps)
    loss = 0.5 * (mx.log(vars) + mx.square(targets - inputs) / vars)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def cosine_similarity_loss(x1, x2, axis=1, eps=1e-8, reduction="none"):
    """x1 . x2 / max(|x1| |x2|, eps) along `axis`."""
    dot = mx.sum(x1 * x2, axis=axis)
    norms = mx.sqrt(mx.sum(mx.square(x1), axis=axis)) * mx.sqrt(mx.sum(mx.square(x2), axis=axis))
    return _reduce(dot / mx.maximum(norms, eps), reduction)


def margin_ranking_loss(inputs1, inputs2, targets, margin=0.0, reduction="none"):
    """max(0, margin - targets * (inputs1 - inputs2)); targets are 1 or -1."""
    if not (inputs1.shape == inputs2.shape == targets.shape):
        raise ValueError(f"[margin_ranking_loss] inputs1 {tuple(inputs1.shape)}, inputs2 {tuple(inputs2.shape)} "
                         f"and targets {tuple(targets.shape)} must have the same shape.")
    return _reduce(mx.maximum(margin - targets * (inputs1 - inputs2), 0), reduction)


def triplet_loss(anchors, positives, negatives, axis=-1, p=2, margin=1.0, eps=1e-6, reduction="none"):
    """max(|a - pos|_p - |a - neg|_p + margin, 0), each p-norm taken as
    (sum |d|^p + eps)^(1/p) along `axis`."""

    def distance(d):
        return mx.power(mx.sum(mx.power(mx.abs(d), p), axis=axis) + eps, 1.0 / p)

    return _reduce(mx.maximum(distance(anchors - positives) - distance(anchors - negatives) + margin, 0), reduction)
