"""mlx-image (mlxim 0.1.10)'s image classifiers, unchanged, on Alloy against
real MLX.

mlx-image is a zoo of convolutional and transformer classifiers written for
MLX: ResNet, MobileNet v2/v3, EfficientNet, RegNet X/Y (grouped convolutions,
squeeze-and-excitation), Swin v1/v2 (shifted windows, relative position
bias, continuous position bias) and ViT. Its model files are read from the
installed package at test time (real_mlx_code.Loader: only their MLX imports
are pointed at `alloy.core` / `alloy.nn`; the package's __init__, which pulls
in huggingface_hub and OpenCV, never runs). Each model is built by mlx-image's
own factory (`MODEL_ENTRYPOINT`), or from its classes with a small
configuration where the factory's is large; real MLX initialises it from a
fresh seed, batch-norm statistics and affine parameters are drawn fresh too,
and Alloy's copy loads the same weights. Then, on the same fresh random
images:

- the logits in eval mode, and in train mode (batch statistics) for the
  models without dropout or stochastic depth;
- the gradients of a cross-entropy loss with respect to every trainable
  parameter (nn.value_and_grad), and the loss itself.
"""
import numpy as np
import pytest
from real_mlx_code import FRAMEWORKS, Loader, as_alloy

import mlx.core as mx
import mlx.nn as mlx_nn
from mlx.utils import tree_flatten

import alloy.core as ax
import alloy.nn as alloy_nn

NUM_CLASSES = 10


def _swin(v2):
    """A small Swin (v2: its blocks and patch merging) from mlx-image's classes."""
    def make(loader):
        m = loader.load("mlxim.model.swin_transformer.swin_transformer")
        extra = dict(block=m.SwinTransformerBlockV2, downsample_layer=m.PatchMergingV2) if v2 else {}
        return m.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4],
                                 stochastic_depth_prob=0.0, num_classes=NUM_CLASSES, **extra)
    return make


def _entry(name, **kwargs):
    return lambda loader: loader.load("mlxim.model._registry").MODEL_ENTRYPOINT[name](num_classes=NUM_CLASSES, **kwargs)


# name: (builder, the image size of the train-mode pass or None where train
# mode is random: dropout, stochastic depth). Batch statistics over a batch
# of 2 at 32x32 reach 1x1 maps in the last stages: a change of 1e-6 in the
# input moves regnet's logits by their whole size there (the float32 sums of
# either framework differ by more), so batch-norm models run train mode on 4
# images of 64x64, where such a change moves them by 2e-4 of their largest
# (hence 1e-3 there). Their gradients in train mode stay ill-conditioned at
# any size tried (RegNet's move by 10-50% for that change: channels whose
# batch variance is near zero), so gradients are taken in eval mode.
MODELS = {
    "resnet18": (_entry("resnet18"), 64),
    "resnet_bottleneck": (lambda loader: (lambda r: r.ResNet(block=r.Bottleneck, layers=[1, 1, 1, 1],
                                                            num_classes=NUM_CLASSES))(
        loader.load("mlxim.model.resnet.resnet")), 64),
    "mobilenet_v2": (_entry("mobilenet_v2", width_mult=0.5), None),
    "mobilenet_v3_small": (_entry("mobilenet_v3_small"), None),
    "mobilenet_v3_large": (_entry("mobilenet_v3_large", width_mult=0.5), None),
    "efficientnet_b0": (_entry("efficientnet_b0"), None),
    "regnet_x_400mf": (_entry("regnet_x_400mf"), 64),
    "regnet_y_400mf": (_entry("regnet_y_400mf"), 64),
    "swin": (_swin(False), 32),
    "swin_v2": (_swin(True), 32),
    "vit": (lambda loader: loader.load("mlxim.model.vit.vit").VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
        num_classes=NUM_CLASSES), 32),
}


def fresh_weights(rng, model):
    """The model's own initialisation (from real MLX, seeded fresh), with the
    batch norms' statistics and affine parameters drawn away from 0 and 1."""
    weights = []
    for k, v in tree_flatten(model.parameters()):
        value = np.array(v.astype(mx.float32))
        leaf = k.rsplit(".", 1)[-1]
        if v.ndim == 1 and leaf == "running_var":
            value = rng.uniform(0.5, 1.5, v.shape)
        elif v.ndim == 1 and leaf == "running_mean":
            value = rng.normal(0.0, 0.1, v.shape)
        elif v.ndim == 1 and leaf == "weight" and np.all(value == 1):
            value = 1.0 + rng.normal(0.0, 0.1, v.shape)
        elif v.ndim == 1 and leaf == "bias" and not np.any(value):
            value = rng.normal(0.0, 0.1, v.shape)
        weights.append((k, mx.array(value.astype(np.float32)).astype(v.dtype)))
    return weights


def close(got, want, what, tol=2e-4, floor=0.0, noise=0.0):
    """Largest difference within tol of MLX's largest magnitude (or of
    `floor`, where that is larger: gradients that are zero in exact
    arithmetic, such as a key projection's bias under softmax, are rounding
    noise of both), plus twice `noise`: how far MLX's own values move when
    its input moves by a rounding error."""
    got, want = np.array(got.astype(ax.float32)), np.array(want.astype(mx.float32))
    assert got.shape == want.shape, f"{what}: shape {got.shape}, MLX {want.shape}"
    assert np.all(np.isfinite(want)), f"{what}: MLX's values are not finite"
    scale = max(float(np.max(np.abs(want))), floor)
    assert scale > 0, f"{what}: MLX's values are all zero"
    err = float(np.max(np.abs(got - want)))
    assert err < tol * scale + 2 * noise, (f"{what} differs from MLX's by {err / scale:.2e} of its largest "
                                           f"(MLX's own moves by {noise / scale:.2e})")


def build_pair(rng, name):
    make = MODELS[name][0]
    mx.random.seed(int(rng.integers(2**31)))
    mlx_model = make(Loader(FRAMEWORKS["mlx"], kernels=False))
    weights = fresh_weights(rng, mlx_model)
    mlx_model.load_weights(weights, strict=True)
    alloy_model = make(Loader(FRAMEWORKS["alloy"], kernels=False))
    alloy_model.load_weights([(k, as_alloy(v)) for k, v in weights], strict=True)
    return mlx_model, alloy_model


def loss_of(nn):
    return lambda model, x, y: nn.losses.cross_entropy(model(x), y, reduction="mean")


def loss_and_grads(nn, core, model, images, labels):
    return nn.value_and_grad(model, loss_of(nn))(model, core.array(images), core.array(labels))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_classifier_matches_mlx(rng, name):
    mlx_model, alloy_model = build_pair(rng, name)
    train_size = MODELS[name][1]
    # Eval mode first: a train-mode pass updates the running statistics, by
    # amounts that differ between the frameworks where it is ill-conditioned.
    images = rng.standard_normal((2, 32, 32, 3)).astype(np.float32)
    for model in (mlx_model, alloy_model):
        model.eval()
    want = mlx_model(mx.array(images))
    assert want.shape == (2, NUM_CLASSES)
    close(alloy_model(ax.array(images)), want, f"{name} logits (eval)")

    # Gradients in eval mode.
    labels = rng.integers(0, NUM_CLASSES, size=(2,)).astype(np.int32)
    if name.startswith("swin"):
        # Swin keeps its relative-position index as an array attribute, so
        # value_and_grad differentiates with respect to it: MLX and Alloy
        # both refuse at the gather that takes it as indices; training
        # freezes it.
        with pytest.raises(ValueError, match="indices"):
            loss_and_grads(mlx_nn, mx, mlx_model, images, labels)
        with pytest.raises(ValueError, match="indices"):
            loss_and_grads(alloy_nn, ax, alloy_model, images, labels)
        for model in (mlx_model, alloy_model):
            model.freeze(keys=["relative_position_index"], strict=False)
    want_loss, want_grads = loss_and_grads(mlx_nn, mx, mlx_model, images, labels)
    got_loss, got_grads = loss_and_grads(alloy_nn, ax, alloy_model, images, labels)
    # A ReLU input within rounding of 0 makes a gradient jump: MLX's own
    # moves by up to 2% when the images move by 1e-6 (regnet_x_400mf at
    # ALLOY_TEST_SEED=2309638707), and two frameworks' float32 sums may fall
    # on either side. Such a gradient is held to what that move shows.
    # Nudged both ways and at two sizes: one nudge can leave the input that
    # sits on a ReLU's edge where it was (ALLOY_TEST_SEED=1544162230).
    nudged_flat = [dict(tree_flatten(loss_and_grads(mlx_nn, mx, mlx_model, images * np.float32(f), labels)[1]))
                   for f in (1 + 1e-6, 1 - 1e-6, 1 + 1e-5, 1 - 1e-5)]
    close(got_loss, want_loss, f"{name} loss", 1e-5)
    want_flat, got_flat = dict(tree_flatten(want_grads)), dict(tree_flatten(got_grads))
    assert sorted(got_flat) == sorted(want_flat), f"{name}: gradient names differ from MLX's"
    assert want_flat, f"{name}: no trainable parameters"
    largest = max(float(np.max(np.abs(np.array(g)))) for g in want_flat.values())
    for k in want_flat:
        noise = max(float(np.max(np.abs(np.array(n[k]) - np.array(want_flat[k])))) for n in nudged_flat)
        close(got_flat[k], want_flat[k], f"{name} gradient of {k}", 1e-3, floor=1e-3 * largest, noise=noise)

    if train_size:
        images = rng.standard_normal((4, train_size, train_size, 3)).astype(np.float32)
        for model in (mlx_model, alloy_model):
            model.train()
        close(alloy_model(ax.array(images)), mlx_model(mx.array(images)), f"{name} logits (train)", 1e-3)
        # ... and the running statistics that pass updated.
        want_stats = {k: v for k, v in tree_flatten(mlx_model.parameters()) if ".running_" in k}
        got_stats = dict(tree_flatten(alloy_model.parameters()))
        assert want_stats or name in {"swin", "swin_v2", "vit"}, f"{name}: no batch-norm statistics"
        for k, v in want_stats.items():
            close(got_stats[k], v, f"{name} {k} after train mode", 1e-3)
