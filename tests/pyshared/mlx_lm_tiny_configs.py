"""Tiny configurations for mlx-lm's model files: one shared set of settings
that every file's ModelArgs takes what it declares from, and the settings of
each file that reads a name its own way. Used by the architecture tests on
Alloy's own path (tests/python) and on real MLX with alloy.mlx
(tests/mlx_plugin)."""
from real_mlx_code import dataclass_from

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
    # Its own names for the sizes (without them: 2.7 B parameters, 11 GB a
    # framework, which took a CI worker down).
    "phixtral": dict(num_vocab=97, model_dim=64, num_heads=4, num_layers=2),
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
    "rwkv7": dict(a_low_rank_dim=8, v_low_rank_dim=8, gate_low_rank_dim=8, decay_low_rank_dim=8),
    "bailing_moe_linear": dict(num_shared_experts=1, layer_group_size=2, group_norm_size=1),
    "bailing_hybrid": dict(num_shared_experts=1, layer_group_size=2, group_norm_size=1),
    "qwen": dict(kv_channels=16),
    # Its Metal kernels (mlx_lm/kernels) run on every device: on real MLX only with alloy.mlx.
    "muse_spark": _wrapping(post_norm_eps=1e-5, rope_parameters=dict(rope_theta=10000.0),
                            layer_rope_theta=[10000.0, 0.0], layer_types=["sliding_attention", "full_attention"],
                            final_logit_softcapping=30.0, output_multiplier=1.0, num_local_experts=4,
                            moe_hidden_size=32, mlp_layer_types=["sparse", "sparse"]),
    "dbrx": dict(attn_config=dict(kv_n_heads=2, clip_qkv=8, rope_theta=10000),
                 ffn_config=dict(ffn_hidden_size=64, moe_num_experts=4, moe_top_k=2)),
})


def args_from(config, module):
    """The file's ModelArgs from `config`: a field it lacks keeps its
    default, or is None where it has none (the file then takes its own)."""
    return dataclass_from(module.ModelArgs, config)


def tiny_args(name, module):
    """The architecture's ModelArgs from TINY and its OVERRIDES."""
    return args_from({**TINY, **OVERRIDES.get(name, {})}, module)
