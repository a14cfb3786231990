"""Real client code, unchanged: tiny randomly initialised mlx-lm models whose
layers call Metal kernels (Qwen3-Next's gated delta rule, RWKV-7's WKV and
Mamba-2's SSM decode step), run on real MLX. A forward pass over a prompt and
a few greedily generated tokens with alloy.mlx installed (the kernel path)
equal those of the same model with MLX's own answers restored (the ops path
mlx-lm falls back to), and the kernel path really launched its kernels.
muse_spark and BitNet, which have no ops path, run on real MLX only through
alloy.mlx: they must give the logits of the same files on Alloy's own path."""
import os

import numpy as np
import pytest

import mlx.core as mx

import alloy.mlx
from real_mlx_code import enter_package

enter_package("mlx_lm")  # the model files import unchanged; the package's __init__ does not run
from mlx_lm.models import gated_delta, mamba2, qwen3_next, rwkv7, ssm  # noqa: E402  (after alloy.mlx)

# Float32 logits; the kernels sum in another order than the ops. On MLX's
# CUDA backend the ops path's float32 matmuls run on TF32 tensor cores (10
# mantissa bits) while the kernels accumulate in float32: a looser bound.
RTOL, ATOL = (5e-3, 5e-3) if os.environ.get("ALLOY_TEST_DEVICE", "cpu") == "gpu" else (1e-3, 1e-3)


class LaunchCounter:
    """Counts launches of the kernels a module built at import."""

    def __init__(self, module, names):
        self.module, self.names, self.count, self.saved = module, names, 0, {}

    def __enter__(self):
        for name in self.names:
            kernel = getattr(self.module, name)
            assert isinstance(kernel, alloy.mlx._ext.MetalKernel), f"{name} is not Alloy's kernel"
            self.saved[name] = kernel

            def counted(*args, _kernel=kernel, **kwargs):
                self.count += 1
                return _kernel(*args, **kwargs)

            setattr(self.module, name, counted)
        return self

    def __exit__(self, *exc):
        for name, kernel in self.saved.items():
            setattr(self.module, name, kernel)


def generate(model, prompt, steps, forced=None):
    """Logits of the prompt and of `steps` decode steps with the model's
    cache, feeding the greedy token (or forced[:, i], to follow another run)."""
    cache = model.make_cache()
    logits = model(prompt, cache=cache)
    all_logits, tokens = [np.array(logits[:, -1, :])], []
    for i in range(steps):
        token = mx.argmax(logits[:, -1, :], axis=-1)[:, None] if forced is None else mx.array(forced[:, i:i + 1])
        tokens.append(np.array(token)[:, 0])
        logits = model(token, cache=cache)
        all_logits.append(np.array(logits[:, -1, :]))
    return np.stack(all_logits, 1), np.stack(tokens, 1)


def kernel_path_against_ops_path(model, prompt, module, kernel_names, steps=4):
    model.eval()  # inference: Qwen3-Next takes its kernel only outside training
    alloy.mlx.install()
    with LaunchCounter(module, kernel_names) as counter:
        logits_k, tokens_k = generate(model, prompt, steps)
    assert counter.count > 0, "the kernel path launched no Metal kernel"
    alloy.mlx.uninstall()  # MLX's own answers: mlx-lm takes its ops fallback
    try:
        with LaunchCounter(module, kernel_names) as counter:
            # The same tokens as the kernel run, so the steps compare like for like.
            logits_o, tokens_o = generate(model, prompt, steps, forced=tokens_k)
        assert counter.count == 0
    finally:
        alloy.mlx.install()
    np.testing.assert_allclose(logits_k, logits_o, rtol=RTOL, atol=ATOL, err_msg="logits, prompt and decode steps")
    # Greedy choices agree wherever the ops run's choice is not a near tie.
    top2 = np.sort(logits_o[:, :-1, :], axis=-1)[..., -2:]
    clear = (top2[..., 1] - top2[..., 0]) > 10 * ATOL
    assert np.array_equal(tokens_k[clear], np.argmax(logits_o[:, :-1, :], -1)[clear]), "generated tokens"


def prompt_for(rng, vocab, batch=2, length=7):
    return mx.array(rng.integers(0, vocab, (batch, length)).astype(np.int32))


def test_qwen3_next_gated_delta(rng):
    mx.random.seed(int(rng.integers(2**31)))
    args = qwen3_next.ModelArgs(
        model_type="qwen3_next", hidden_size=64, num_hidden_layers=4, intermediate_size=96,
        num_attention_heads=4, linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=32,
        linear_value_head_dim=32, linear_conv_kernel_dim=4, num_experts=4, num_experts_per_tok=2,
        decoder_sparse_step=1, shared_expert_intermediate_size=64, mlp_only_layers=[], moe_intermediate_size=32,
        rms_norm_eps=1e-6, vocab_size=97, num_key_value_heads=2, rope_theta=10000.0, partial_rotary_factor=0.25,
        max_position_embeddings=256, head_dim=16, full_attention_interval=4)
    model = qwen3_next.Model(args)
    names = [n for n in dir(gated_delta) if isinstance(getattr(gated_delta, n), alloy.mlx._ext.MetalKernel)]
    assert len(names) >= 2
    kernel_path_against_ops_path(model, prompt_for(rng, args.vocab_size), gated_delta, names)


def test_rwkv7_wkv(rng):
    mx.random.seed(int(rng.integers(2**31)))
    args = rwkv7.ModelArgs(model_type="rwkv7", vocab_size=97, hidden_size=128, intermediate_size=256,
                           norm_eps=1e-5, head_dim=64, num_hidden_layers=2, a_low_rank_dim=16,
                           v_low_rank_dim=16, gate_low_rank_dim=16, decay_low_rank_dim=16)
    model = rwkv7.Model(args)
    kernel_path_against_ops_path(model, prompt_for(rng, args.vocab_size), rwkv7, ["_wkv7_kernel"])


def test_mamba2_ssm_decode(rng):
    mx.random.seed(int(rng.integers(2**31)))
    args = mamba2.ModelArgs(model_type="mamba2", num_heads=4, head_dim=16, vocab_size=97, hidden_size=32,
                            intermediate_size=64, state_size=32, num_hidden_layers=2, layer_norm_epsilon=1e-5,
                            conv_kernel=4, n_groups=1, use_bias=False, use_conv_bias=True, tie_word_embeddings=True,
                            time_step_limit=(0.001, 100.0), time_step_rank="auto")
    model = mamba2.Model(args)
    # The SSM kernel serves the one-token decode steps; it handles state sizes
    # that are multiples of 32 (each SIMD lane takes state_size / 32).
    kernel_path_against_ops_path(model, prompt_for(rng, args.vocab_size), ssm, ["_ssm_kernel"])


# Files whose layers call Metal kernels on every device: real MLX on Linux
# cannot run them at all without alloy.mlx. Each runs unchanged on real MLX
# with the plugin, and must give the logits of the same file run on Alloy's
# own framework (tests/python's architecture test runs the other 122 files
# against real MLX without kernels). Same fresh random weights on both sides.
# A kernel of each whose launches are counted.
KERNEL_ONLY = {"muse_spark": ("mlx_lm.kernels.qk_norm_rope", "_qk_norm_rope_kernel"),
               "bitnet": ("mlx_lm.models.bitlinear_layers", "_bitlinear_kernel")}
# muse_spark casts each attention input to bfloat16 (its decoder layer's
# input_layernorm(x).astype(mx.bfloat16)): a float32 rounding that differs
# between the frameworks' ops can flip a bfloat16 rounding, 2^-8 of that
# element, and the logits then differ by about 1e-3 of their largest on
# some seeds (1.03e-3 at seed 2910917759). Its bound is bfloat16's scale.
KERNEL_ONLY_RTOL = {"muse_spark": max(RTOL, 1e-2)}


@pytest.mark.parametrize("name", sorted(KERNEL_ONLY))
def test_kernel_only_model_matches_alloys_own_path(rng, name):
    import importlib

    import alloy.core as ax
    from mlx.utils import tree_flatten
    from mlx_lm_tiny_configs import TINY, tiny_args
    from real_mlx_code import FRAMEWORKS, Loader, as_alloy

    module = importlib.import_module("mlx_lm.models." + name)
    mlx_model = module.Model(tiny_args(name, module))
    weights = []
    for k, v in tree_flatten(mlx_model.parameters()):
        if mx.issubdtype(v.dtype, mx.integer):  # BitNet's packed ternary weights
            values = rng.integers(0, 256, v.shape).astype(np.uint8 if v.dtype == mx.uint8 else np.int32)
        else:
            values = (rng.standard_normal(v.shape) * 0.05).astype(np.float32)
        weights.append((k, mx.array(values).astype(v.dtype)))
    mlx_model.load_weights(weights, strict=True)
    loader = Loader(FRAMEWORKS["alloy"], kernels=True)
    alloy_module = loader.load("mlx_lm.models." + name)
    alloy_model = alloy_module.Model(tiny_args(name, alloy_module))
    alloy_model.load_weights([(k, as_alloy(v)) for k, v in weights], strict=True)

    caches = (importlib.import_module("mlx_lm.models.cache").make_prompt_cache(mlx_model),
              loader.load("mlx_lm.models.cache").make_prompt_cache(alloy_model))
    prompt = rng.integers(0, TINY["vocab_size"], (1, 7))
    kernel_module, kernel = KERNEL_ONLY[name]
    for i, tokens in enumerate([prompt] + [rng.integers(0, TINY["vocab_size"], (1, 1)) for _ in range(2)]):
        with LaunchCounter(importlib.import_module(kernel_module), [kernel]) as counter:
            want = np.array(mlx_model(mx.array(tokens), cache=caches[0]).astype(mx.float32))
        assert counter.count > 0, f"{name} step {i}: {kernel} was not launched"
        got = np.array(alloy_model(ax.array(tokens), cache=caches[1]).astype(ax.float32))
        assert want.shape == got.shape and np.all(np.isfinite(want)), f"{name} step {i}"
        scale = np.max(np.abs(want))
        assert scale > 0, f"{name} step {i}: MLX's logits are all zero"
        assert np.max(np.abs(got - want)) / scale < KERNEL_ONLY_RTOL.get(name, RTOL), (
            f"{name} step {i}: logits differ from Alloy's own")
