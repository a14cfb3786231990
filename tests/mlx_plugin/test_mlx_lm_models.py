"""Real client code, unchanged: tiny randomly initialised mlx-lm models whose
layers call Metal kernels (Qwen3-Next's gated delta rule, RWKV-7's WKV and
Mamba-2's SSM decode step), run on real MLX. A forward pass over a prompt and
a few greedily generated tokens with alloy.mlx installed (the kernel path)
equal those of the same model with MLX's own answers restored (the ops path
mlx-lm falls back to), and the kernel path really launched its kernels."""
import os

import numpy as np

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
