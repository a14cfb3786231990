"""mlx-lm's model architectures, unchanged, on Alloy against real MLX.

Each architecture's file (`mlx_lm/models/<name>.py`, read from the installed
package at test time, see real_mlx_code.py) is loaded twice: as it is against
real MLX (CPU), and with its MLX imports pointed at `alloy.core` / `alloy.nn`.
Both get the same tiny configuration and the same fresh random weights; a
prompt is run, then two tokens are decoded through the model's own KV cache
(`make_prompt_cache`), and every step's logits must agree. A training step
on nineteen of them must agree in loss, gradients and updated weights;
mlx-lm's samplers (sample_utils.py) must draw MLX's tokens for a seed, and
its generate_step (generate.py) must generate MLX's tokens.

The list holds 122 of mlx-lm 0.32.2's 126 model files, each built from
the one shared tiny configuration below and the settings of its own in
OVERRIDES (layer patterns, nested text configurations, RoPE or MoE dicts).
The other four: bitnet and muse_spark call Metal kernels whatever the
device (their kernels are tested in test_real_mlx_fused_kernels.py; real
MLX cannot run them here), olmo needs the ai2-olmo package, and
prism_hadamard_qwen35 loads only 2-bit Hadamard-packed checkpoints.
"""
import dataclasses

import numpy as np
import pytest
from real_mlx_code import FRAMEWORKS, Loader

import mlx.core as mx
from mlx.utils import tree_flatten

import alloy.core as ax

# One configuration for every architecture: each ModelArgs takes the fields it
# declares and leaves the rest.
TINY = dict(
    model_type="tiny", hidden_size=64, num_hidden_layers=2, intermediate_size=128, num_attention_heads=4,
    num_key_value_heads=2, vocab_size=97, rms_norm_eps=1e-5, head_dim=16, max_position_embeddings=256,
    rope_theta=10000.0, layer_norm_eps=1e-5, norm_eps=1e-5, n_layer=2, n_head=4, n_embd=64, d_model=64,
    n_layers=2, n_heads=4, dim=64, hidden_dim=128, num_layers=2, num_heads=4, tie_word_embeddings=False,
    moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2, n_routed_experts=4, n_shared_experts=1,
    kv_lora_rank=16, q_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16, vocab=97, d_ff=128,
    ffn_dim=128, embed_dim=64, partial_rotary_factor=0.5, sliding_window=8, num_local_experts=4,
    first_k_dense_replace=1, n_group=1, topk_group=1, rope_scaling=None, attention_bias=False, mlp_bias=False,
    hidden_act="silu", num_key_value_groups=2, layer_types=None, block_size=256, context_length=256,
    n_positions=256, seq_length=256, linear_num_value_heads=4, linear_num_key_heads=2, linear_key_head_dim=16,
    linear_value_head_dim=16, linear_conv_kernel_dim=4, decoder_sparse_step=1, shared_expert_intermediate_size=32,
    mlp_only_layers=[], state_size=8, layer_norm_epsilon=1e-5, conv_kernel=4, n_groups=1, use_bias=False,
    use_conv_bias=True, time_step_limit=(0.0, float("inf")), time_step_rank=8, attn_layer_offset=1,
    attn_layer_period=2, expert_layer_offset=1, expert_layer_period=2, mamba_d_conv=4, mamba_d_state=8,
    mamba_expand=2, conv1d_width=4, logits_soft_cap=30.0, attention_window_size=8, conv_bias=False,
    conv_L_cache=3, block_dim=64, block_multiple_of=16, block_ffn_dim_multiplier=1.0,
    block_auto_adjust_ff_dim=False, norm_topk_prob=True, n_ctx=256, rotary_emb_base=10000.0, rotary_pct=0.25,
    routed_scaling_factor=1.0, embedding_multiplier=1.0, logits_scaling=1.0, residual_multiplier=1.0,
    attention_multiplier=0.25, scale_emb=1.0, dim_model_base=64, scale_depth=1.0, rotary_dim=8,
    sliding_window_pattern=2, model_max_length=256, head_size=16, num_kv_heads=2, ffn_hidden_size=128,
)

# Where one architecture reads a shared name differently.
# The hybrids name their layer stack (linear attention, SSM or convolution
# layers between attention layers) each in its own way.
# RoPE settings for a file that names one per kind of layer.
TWO_ROPES = dict(sliding_attention=dict(rope_theta=10000.0, rope_type="default"),
                 full_attention=dict(rope_theta=10000.0, rope_type="default"))

OVERRIDES = {
    "exaone4": dict(sliding_window_pattern="LG"),  # a string of L(ocal)/G(lobal) layers
    "qwen3_next": dict(full_attention_interval=2),  # gated delta, then attention
    "recurrent_gemma": dict(block_types=["recurrent", "attention"], num_key_value_heads=1),
    "lfm2": dict(layer_types=["conv", "full_attention"]),
    "lfm2_moe": dict(layer_types=["conv", "full_attention"], num_dense_layers=1),
    "nemotron_h": dict(hybrid_override_pattern=["M", "*", "-", "E"], mamba_num_heads=4, mamba_head_dim=16,
                       mamba_proj_bias=False, ssm_state_size=8, moe_shared_expert_intermediate_size=32),
    "granitemoehybrid": dict(layer_types=["mamba", "attention"], mamba_n_heads=4, mamba_d_head=16, mamba_n_groups=1,
                             mamba_chunk_size=8, mamba_conv_bias=True, mamba_proj_bias=False,
                             shared_intermediate_size=32, position_embedding_type="rope"),
    "olmo3": dict(layer_types=["sliding_attention", "full_attention"]),
}


def _wrapping(**text):
    """The settings of a model file that wraps a text model (the language
    half of a vision-language model, or a newer generation's file) and
    takes its configuration as a nested `text_config`."""
    return {"text_config": {**TINY, "model_type": "tiny", **text}, **text}


OVERRIDES.update({name: _wrapping() for name in
                  ["gemma3", "mistral3", "pixtral", "kimi_vl", "qwen2_vl", "qwen3_vl", "qwen3_vl_moe"]})
OVERRIDES.update({name: _wrapping(full_attention_interval=2) for name in ["qwen3_5", "qwen3_5_moe"]})
OVERRIDES["lfm2-vl"] = _wrapping(layer_types=["conv", "full_attention"])
# Files that read their RoPE or MoE settings from dicts of their own.
OVERRIDES.update({
    "deepseek_v2": dict(rope_scaling=dict(type="yarn", factor=1.0, original_max_position_embeddings=256, beta_fast=32,
                                          beta_slow=1, mscale=1, mscale_all_dim=0)),
    "minicpm3": dict(rope_scaling=dict(type="default")),
    "hunyuan": dict(rope_scaling=dict(alpha=1.0, factor=1.0, type="dynamic"), moe_topk=2, num_shared_expert=1,
                    use_mixed_mlp_moe=True),
    "exaone_moe": dict(layer_types=["sliding_attention", "full_attention"], is_moe_layer=[False, True]),
    "ministral3": dict(rope_parameters=dict(rope_theta=10000.0, llama_4_scaling_beta=0.1,
                                            original_max_position_embeddings=256)),
    "mistral4": dict(rope_parameters=dict(rope_theta=10000.0, llama_4_scaling_beta=0.1,
                                          original_max_position_embeddings=256)),
    "plamo": dict(n_shared_head=2),
    "afm7": dict(num_kv_reuse_layers=1),
    "afmoe": dict(layer_types=["sliding_attention", "full_attention"], num_dense_layers=1, num_shared_experts=1),
    "baichuan_m1": dict(sliding_window_layers=[0], conv_window=2),
    "bailing_moe": dict(num_shared_experts=1),
    "ernie4_5_moe": dict(moe_num_experts=4, moe_k=2, moe_intermediate_size=32, moe_num_shared_experts=1),
    "gpt_bigcode": dict(n_inner=128),
    "longcat_flash": dict(attention_method="MLA", zero_expert_type="identity", moe_topk=2, expert_ffn_hidden_size=32,
                          zero_expert_num=1, mla_scale_q_lora=True, mla_scale_kv_lora=True),
    "longcat_flash_ngram": dict(moe_topk=2, expert_ffn_hidden_size=32, zero_expert_num=1, mla_scale_q_lora=True,
                                mla_scale_kv_lora=True, ngram_vocab_size_ratio=2),
    "kimi_linear": dict(linear_attn_config=dict(kda_layers=[1], num_heads=4, head_dim=16, short_conv_kernel_size=4),
                        qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=16, num_experts_per_token=2,
                        num_shared_experts=1, first_k_dense_replace=1),
    "lille-130m": dict(n_kv_heads=2),
    "llama4_text": dict(intermediate_size_mlp=128, no_rope_layers=[1, 0], use_qk_norm=True),
    "llama4": _wrapping(intermediate_size_mlp=128, attention_chunk_size=4, interleave_moe_layer_step=2,
                        use_qk_norm=True, num_experts_per_tok=1, num_hidden_layers=4),  # the 4th is global
    # Four layers: the last two (one sliding, one global) reuse the first two's keys and values.
    "gemma4_text": dict(global_head_dim=32, vocab_size_per_layer_input=97, num_kv_shared_layers=2,
                        hidden_size_per_layer_input=16, num_hidden_layers=4),
    "gemma4": dict(text_config=dict(global_head_dim=32, vocab_size_per_layer_input=97, num_kv_shared_layers=2,
                                    hidden_size_per_layer_input=16, hidden_size=64, num_hidden_layers=4,
                                    intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                                    head_dim=16, sliding_window=8, sliding_window_pattern=2)),
    "mellum": dict(layer_types=["sliding_attention", "full_attention"], rope_parameters=TWO_ROPES),
    "spark2_5": dict(layer_types=["sliding_attention", "full_attention"], rope_parameters=TWO_ROPES, hidden_act="gelu"),
    "mimo_v2_flash": dict(hybrid_layer_pattern=[1, 0], moe_layer_freq=[0, 1], add_swa_attention_sink_bias=True,
                          add_full_attention_sink_bias=False, sliding_window_size=8, topk_method="noaux_tc",
                          scoring_func="sigmoid", layernorm_epsilon=1e-5, swa_rope_theta=10000.0,
                          swa_num_attention_heads=4, swa_num_key_value_heads=2, swa_head_dim=16, swa_v_head_dim=16),
    "openelm": dict(num_transformer_layers=2, model_dim=64, ffn_dim_divisor=16, num_query_heads=[4, 4],
                    num_kv_heads=[2, 2], ffn_multipliers=[2.0, 2.0]),
    # Its vocabulary must hold the token ids it masks (up to 100351): real
    # MLX's CPU scatter writes out of bounds otherwise (Alloy drops them).
    "phi3small": dict(vocab_size=100352, dense_attention_every_n_layers=2, ff_intermediate_size=128, gegelu_limit=20.0,
                      blocksparse_block_size=32, blocksparse_num_local_blocks=1, blocksparse_vert_stride=2),
    "step3p5": dict(num_attention_groups=2, layer_types=["sliding_attention", "full_attention"], moe_num_experts=4,
                    moe_top_k=2, moe_intermediate_size=32, share_expert_dim=32, moe_layers_enum="1",
                    swiglu_limits=[0, 7.0], swiglu_limits_shared=[0, 7.0]),
    "kimi_k25": _wrapping(),
    "kimi_k3": _wrapping(hidden_act="situ", attn_res_block_size=1, num_experts_per_token=2, num_shared_experts=1,
                         first_k_dense_replace=1,
                         linear_attn_config=dict(kda_layers=[1], num_heads=4, head_dim=16, short_conv_kernel_size=4)),
    "minimax_m3_vl": _wrapping(dense_intermediate_size=128, shared_intermediate_size=32, num_local_experts=4,
                               mlp_layer_types=["dense", "sparse"], layer_types=["sparse_attention", "full_attention"],
                               sparse_attention_config=dict(sparse_num_index_heads=2, sparse_index_dim=16,
                                                            sparse_block_size=2, sparse_topk_blocks=2,
                                                            sparse_local_block=1)),
    # Four layers, the last two sharing the first two's caches; the first
    # layer's MLP keeps its activations above a Gaussian quantile (erfinv).
    "gemma3n": _wrapping(num_hidden_layers=4, num_kv_shared_layers=2, vocab_size_per_layer_input=97,
                         rope_local_base_freq=10000.0, final_logit_softcapping=30.0,
                         layer_types=["sliding_attention", "full_attention"] * 2,
                         activation_sparsity_pattern=[0.95, 0.0, 0.0, 0.0], hidden_size_per_layer_input=16,
                         altup_num_inputs=2, altup_coef_clip=120.0, altup_correct_scale=True, altup_active_idx=0,
                         laurel_rank=8),
    # Three layers: attention and MLP, a linear attention and no MLP, no attention and a linear MLP.
    "nemotron-nas": dict(num_hidden_layers=3, block_configs=[
        dict(attention=dict(n_heads_in_group=2), ffn=dict(ffn_mult=1.5)),
        dict(attention=dict(replace_with_linear=True), ffn=dict(no_op=True)),
        dict(attention=dict(no_op=True), ffn=dict(replace_with_linear=True))]),
    "glm_moe_dsa": dict(index_head_dim=16, index_n_heads=2, index_topk=4, topk_method="noaux_tc",
                        scoring_func="sigmoid", moe_layer_freq=1, rope_parameters=dict(rope_theta=10000.0)),
    "muse_spark": _wrapping(post_norm_eps=1e-5, rope_parameters=dict(rope_theta=10000.0),
                            layer_rope_theta=[10000.0, 0.0], layer_types=["sliding_attention", "full_attention"],
                            final_logit_softcapping=30.0, output_multiplier=1.0, num_local_experts=4,
                            moe_hidden_size=32, mlp_layer_types=["sparse", "sparse"]),
    "rwkv7": dict(a_low_rank_dim=8, v_low_rank_dim=8, gate_low_rank_dim=8, decay_low_rank_dim=8),
    "bailing_moe_linear": dict(num_shared_experts=1, layer_group_size=2, group_norm_size=1),
    "bailing_hybrid": dict(num_shared_experts=1, layer_group_size=2, group_norm_size=1),
    "qwen": dict(kv_channels=16),
    "dbrx": dict(attn_config=dict(kv_n_heads=2, clip_qkv=8, rope_theta=10000),
                 ffn_config=dict(ffn_hidden_size=64, moe_num_experts=4, moe_top_k=2)),
})

ARCHITECTURES = [
    "afm7", "afmoe", "apertus", "baichuan_m1", "bailing_hybrid", "bailing_moe", "bailing_moe_linear",
    "bailing_moe_v3", "cohere", "cohere2", "dbrx", "deepseek", "deepseek_v2", "deepseek_v3", "deepseek_v32",
    "deepseek_v41", "dots1", "ernie4_5", "ernie4_5_moe", "exaone", "exaone4", "exaone_moe", "falcon_h1", "gear",
    "gemma", "gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma4", "gemma4_text", "glm", "glm4", "glm4_moe",
    "glm4_moe_lite", "glm_moe_dsa", "gpt2", "gpt_bigcode", "gpt_neox", "gpt_oss", "gptj", "granite", "granitemoe",
    "granitemoehybrid", "helium", "hunyuan", "hunyuan_v1_dense", "internlm2", "internlm3", "iquestloopcoder", "jamba",
    "kimi_k25", "kimi_k3", "kimi_linear", "kimi_vl", "Klear", "laguna", "lfm2", "lfm2-vl", "lfm2_moe", "lille-130m",
    "llama", "llama4", "llama4_text", "longcat_flash", "longcat_flash_ngram", "mamba", "mamba2", "mellum", "mimo",
    "mimo_v2_flash", "minicpm", "minicpm3", "minimax", "minimax_m3_vl", "ministral3", "mistral3", "mistral4",
    "mixtral", "muse_glimmer", "nanbeige", "nanochat", "nemotron", "nemotron-nas", "nemotron_h", "olmo2", "olmo3",
    "olmo_hybrid", "olmoe", "openelm", "phi", "phi3", "phi3small", "phimoe", "phixtral", "pixtral", "plamo", "plamo2",
    "plamo3", "qwen", "qwen2", "qwen2_moe", "qwen2_vl", "qwen3", "qwen3_5", "qwen3_5_moe", "qwen3_moe", "qwen3_next",
    "qwen3_vl", "qwen3_vl_moe", "recurrent_gemma", "rwkv7", "seed_oss", "smollm3", "solar_open", "spark2_5",
    "stablelm", "starcoder2", "step3p5", "talkie", "telechat3", "youtu_llm",
]


def args_from(config, module):
    """The file's ModelArgs from `config`: a field it lacks keeps its
    default, or is None where it has none (the file then takes its own)."""
    kwargs = {}
    for f in dataclasses.fields(module.ModelArgs):
        if f.name in config:
            kwargs[f.name] = config[f.name]
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            kwargs[f.name] = None
    return module.ModelArgs(**kwargs)


def tiny_args(name, module):
    """The architecture's ModelArgs from TINY and its OVERRIDES."""
    return args_from({**TINY, **OVERRIDES.get(name, {})}, module)


def build(framework, name):
    loader = Loader(FRAMEWORKS[framework], kernels=False)
    module = loader.load("mlx_lm.models." + name)
    cache = loader.load("mlx_lm.models.cache")
    return module.Model(tiny_args(name, module)), cache


def as_alloy(value):
    return ax.array(np.array(value.astype(mx.float32))).astype(getattr(ax, str(value.dtype).split(".")[-1]))


def logits(framework_core, out):
    return np.array(out.astype(framework_core.float32))


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_architecture_matches_mlx(rng, name):
    mlx_model, mlx_cache = build("mlx", name)
    weights = [(k, mx.array((rng.standard_normal(v.shape) * 0.05).astype(np.float32)).astype(v.dtype))
               for k, v in tree_flatten(mlx_model.parameters())]
    assert weights, f"{name}: the model has no parameters"
    mlx_model.load_weights(weights, strict=True)
    alloy_model, alloy_cache = build("alloy", name)
    alloy_model.load_weights([(k, as_alloy(v)) for k, v in weights], strict=True)

    prompt = rng.integers(0, TINY["vocab_size"], (1, 7))
    steps = [prompt] + [rng.integers(0, TINY["vocab_size"], (1, 1)) for _ in range(2)]
    caches = mlx_cache.make_prompt_cache(mlx_model), alloy_cache.make_prompt_cache(alloy_model)
    for i, tokens in enumerate(steps):
        want = logits(mx, mlx_model(mx.array(tokens), cache=caches[0]))
        got = logits(ax, alloy_model(ax.array(tokens), cache=caches[1]))
        assert got.shape == want.shape, f"{name} step {i}: shape {got.shape}, MLX {want.shape}"
        # Some files mask token ids with -inf (phi3small): the same ones must be.
        finite = np.isfinite(want)
        assert np.array_equal(np.isfinite(got), finite), f"{name} step {i}: other logits are infinite than MLX's"
        assert np.array_equal(got[~finite], want[~finite]), f"{name} step {i}: other infinities than MLX's"
        got, want = got[finite], want[finite]
        scale = np.max(np.abs(want))
        assert scale > 0, f"{name} step {i}: MLX's logits are all zero"
        err = np.max(np.abs(got - want)) / scale
        assert err < 1e-4, f"{name} step {i}: logits differ from MLX's by {err:.2e} of their largest"


# A training step (mlx-lm's LoRA and full fine-tuning path): cross-entropy,
# value_and_grad over the whole model, one optimizer update, on a few
# families. SGD with momentum and weight decay: its step is linear in the
# gradient, where Adam's divides a near-zero gradient by its own size, so
# rounding noise in one (equal to float tolerance) could flip a step's sign.
TRAINED = ["llama", "qwen3_moe", "mamba2", "gemma2", "phi3", "deepseek_v3", "olmo_hybrid", "qwen3_next", "lfm2",
           "rwkv7", "kimi_linear", "kimi_k3", "gemma3n", "llama4", "glm_moe_dsa", "bailing_hybrid", "minimax_m3_vl",
           "phi3small", "mimo_v2_flash"]


def train_step(core, nn, optim, model, tokens):
    def loss_fn(m, x, y):
        return nn.losses.cross_entropy(m(x), y, reduction="mean")

    optimizer = optim.SGD(learning_rate=0.1, momentum=0.9, weight_decay=0.01)
    loss, grads = nn.value_and_grad(model, loss_fn)(model, core.array(tokens[:, :-1]), core.array(tokens[:, 1:]))
    optimizer.update(model, grads)
    core.eval(model.parameters())
    return loss, grads


@pytest.mark.parametrize("name", TRAINED)
def test_training_step_matches_mlx(rng, name):
    import alloy.nn as anx
    import alloy.optimizers as aopt
    import mlx.nn as mnn
    import mlx.optimizers as mopt

    mlx_model, _ = build("mlx", name)
    weights = [(k, mx.array((rng.standard_normal(v.shape) * 0.05).astype(np.float32)).astype(v.dtype))
               for k, v in tree_flatten(mlx_model.parameters())]
    mlx_model.load_weights(weights, strict=True)
    alloy_model, _ = build("alloy", name)
    alloy_model.load_weights([(k, as_alloy(v)) for k, v in weights], strict=True)
    tokens = rng.integers(0, TINY["vocab_size"], (2, 9))

    want_loss, want_grads = train_step(mx, mnn, mopt, mlx_model, tokens)
    got_loss, got_grads = train_step(ax, anx, aopt, alloy_model, tokens)
    np.testing.assert_allclose(float(got_loss.item()), float(want_loss.item()), rtol=1e-5)
    from alloy.utils import tree_flatten as alloy_flatten

    for what, want_tree, got_tree in (("gradient", want_grads, got_grads),
                                      ("updated weight", mlx_model.parameters(), alloy_model.parameters())):
        want, got = dict(tree_flatten(want_tree)), dict(alloy_flatten(got_tree))
        assert want.keys() == got.keys(), f"{name}: {what}s of {sorted(set(want) ^ set(got))} on one side only"
        for k in want:
            w, g = np.array(want[k].astype(mx.float32)), np.array(got[k].astype(ax.float32))
            scale = max(np.max(np.abs(w)), 1e-6)
            assert np.max(np.abs(g - w)) / scale < 1e-3, f"{name}: {what} {k} differs from MLX's"


# mlx-lm's samplers (sample_utils.py, its compiled top-k/top-p/min-p/XTC
# filters and categorical draw, with mx.random.state carried through
# mx.compile): after the same seed, Alloy draws MLX's tokens.
SAMPLERS = [dict(temp=0.7), dict(temp=1.0, top_p=0.9), dict(temp=0.8, min_p=0.05), dict(temp=0.9, top_k=20),
            dict(temp=1.0, xtc_probability=0.5, xtc_threshold=0.05, xtc_special_tokens=[0]),
            dict(temp=0.6, top_p=0.95, top_k=40, min_p=0.02), dict(temp=0.0)]


@pytest.mark.parametrize("settings", SAMPLERS, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()))
def test_sampler_draws_mlx_tokens(rng, settings):
    samplers = {fw: Loader(FRAMEWORKS[fw], kernels=False).load("mlx_lm.sample_utils").make_sampler(**settings)
                for fw in ("mlx", "alloy")}
    for trial in range(5):
        logits = (rng.standard_normal((1, 500)) * 3).astype(np.float32)
        seed = int(rng.integers(2**31))
        drawn = {}
        for fw, core in (("mlx", mx), ("alloy", ax)):
            core.random.seed(seed)
            logprobs = core.array(logits)
            logprobs = logprobs - core.logsumexp(logprobs, axis=-1, keepdims=True)
            drawn[fw] = [samplers[fw](logprobs).item() for _ in range(4)]
        assert drawn["alloy"] == drawn["mlx"], f"trial {trial}, seed {seed}"


# mlx-lm's generate_step (generate.py, unchanged): its own generation stream
# (mx.new_thread_local_stream), mx.async_eval pipelining, chunked prefill, a
# rotating or quantized KV cache, a sampler and a repetition penalty. The
# command-line half of mlx-lm (tokenizers, hub downloads) is left out: its
# two modules are stood in for, and generate.py's one transformers import
# (a type annotation) gets an empty module.
GENERATION = {
    "greedy": lambda sample_utils: {},
    "sampled": lambda sample_utils: dict(sampler=sample_utils.make_sampler(temp=0.8, top_p=0.9)),
    "rotating cache": lambda sample_utils: dict(max_kv_size=16),
    "quantized cache": lambda sample_utils: dict(kv_bits=8, kv_group_size=32, quantized_kv_start=0),
    "chunked prefill": lambda sample_utils: dict(prefill_step_size=8),
    "repetition penalty": lambda sample_utils: dict(
        logits_processors=sample_utils.make_logits_processors(repetition_penalty=1.3)),
}


def _generate_utils_stand_in():
    import inspect
    import types

    def does_model_support_input_embeddings(model):
        return "input_embeddings" in inspect.signature(model.__call__).parameters

    return {
        "mlx_lm.tokenizer_utils": types.SimpleNamespace(TokenizerWrapper=object, load=None),
        "mlx_lm.utils": types.SimpleNamespace(does_model_support_input_embeddings=does_model_support_input_embeddings,
                                              load=None, maybe_set_recommended_wired_limit=lambda: None),
    }


@pytest.mark.parametrize("name", ["llama", "mamba2", "qwen3_next"])
@pytest.mark.parametrize("mode", list(GENERATION))
def test_generate_step_matches_mlx(rng, monkeypatch, name, mode):
    import sys
    import types

    transformers = types.ModuleType("transformers")
    transformers.PreTrainedTokenizer = object
    monkeypatch.setitem(sys.modules, "transformers", transformers)
    # 32-wide heads: the quantized cache quantizes along them in groups of 32.
    monkeypatch.setitem(OVERRIDES, name, {**OVERRIDES.get(name, {}), "head_dim": 32, "num_attention_heads": 2,
                                          "num_key_value_heads": 1})
    prompt = rng.integers(0, TINY["vocab_size"], (37,))
    tokens, weights = {}, None
    for fw, core in (("mlx", mx), ("alloy", ax)):
        loader = Loader(FRAMEWORKS[fw], kernels=False, substitutes=_generate_utils_stand_in())
        generate = loader.load("mlx_lm.generate")
        module = loader.load("mlx_lm.models." + name)
        model = module.Model(tiny_args(name, module))
        if weights is None:
            weights = [(k, mx.array((rng.standard_normal(v.shape) * 0.05).astype(np.float32)).astype(v.dtype))
                       for k, v in tree_flatten(model.parameters())]
        model.load_weights(weights if fw == "mlx" else [(k, as_alloy(v)) for k, v in weights], strict=True)
        core.random.seed(7)
        settings = GENERATION[mode](loader.load("mlx_lm.sample_utils"))
        # A generation stream of its own, as generate.py makes one, on the
        # device the suite runs on (the loaded file's `mx` answers "CPU").
        stream = core.new_thread_local_stream(core.default_device())
        tokens[fw] = [t for t, _ in generate.generate_step(core.array(prompt), model, stream=stream, max_tokens=12,
                                                           **settings)]
    assert len(tokens["mlx"]) == 12
    assert tokens["alloy"] == tokens["mlx"]


# nn.quantize over a whole model (QuantizedLinear, QuantizedEmbedding, and
# the MoE's QuantizedSwitchLinear through gather_qmm), in each of MLX's
# modes: the quantized model's logits agree with MLX's.
QUANTIZATIONS = {
    "affine4": dict(group_size=32, bits=4), "affine8": dict(group_size=64, bits=8),
    "mxfp4": dict(group_size=32, bits=4, mode="mxfp4"), "mxfp8": dict(group_size=32, bits=8, mode="mxfp8"),
    "nvfp4": dict(group_size=16, bits=4, mode="nvfp4"),
}


@pytest.mark.parametrize("name", ["llama", "qwen3_moe"])
@pytest.mark.parametrize("quantization", list(QUANTIZATIONS))
def test_quantized_model_matches_mlx(rng, monkeypatch, name, quantization):
    # Rows of 128 and 256: every mode's group divides them.
    monkeypatch.setitem(OVERRIDES, name, dict(hidden_size=128, intermediate_size=256, moe_intermediate_size=64,
                                              head_dim=32))
    logits, weights = {}, None
    tokens = rng.integers(0, TINY["vocab_size"], (1, 9))
    for fw, core in (("mlx", mx), ("alloy", ax)):
        loader = Loader(FRAMEWORKS[fw], kernels=False)
        module = loader.load("mlx_lm.models." + name)
        model = module.Model(tiny_args(name, module))
        if weights is None:
            weights = [(k, mx.array((rng.standard_normal(v.shape) * 0.05).astype(np.float32)))
                       for k, v in tree_flatten(model.parameters())]
        model.load_weights(weights if fw == "mlx" else [(k, as_alloy(v)) for k, v in weights], strict=True)
        loader.framework.module("mlx.nn").quantize(model, **QUANTIZATIONS[quantization])
        logits[fw] = np.array(model(core.array(tokens)).astype(core.float32))
    scale = np.max(np.abs(logits["mlx"]))
    assert np.max(np.abs(logits["alloy"] - logits["mlx"])) / scale < 1e-4
