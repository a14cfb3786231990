"""The last of mlx-audio's text-to-speech models, unchanged, on Alloy
against real MLX: test_real_mlx_audio_tts_more.py's checks and helpers
(its module docstring says what each check compares) for LongCat AudioDiT,
OmniVoice, TADA, ArkTTS (attention and Falcon-H1 slow stacks), Breeze TTS
and KugelAudio. Each model's comment says what runs.

Left out: ArkTTS's codec (built at fixed full sizes in code); TADA's codec
encoder and aligner (loaded separately); the generate() entry points that
need a tokenizer, a codec or hub files (their prompts are laid out as
generate() lays them out).
"""
import sys

import numpy as np
from model_checks import features
from test_real_mlx_audio_tts import cached, tokens
from test_real_mlx_audio_tts_more import model_tests, prefix_mask, seed, sibling


# LongCat AudioDiT: a UMT5 text encoder (relative-position buckets in every
# block, gated GELU) whose states, layer-normed and added to the embeddings,
# condition a DiT over audio latents (ConvNeXt-V2 text convolutions, global
# AdaLN from time and mean text, RoPE self-attention, cross-attention, the
# latent-prompt condition, a long skip, an intermediate layer returned);
# APG guidance between a conditioned and a null prediction; a WAV-VAE
# (snake-beta, pixel-shuffle shortcuts) that encodes the prompt audio
# (sampling its latents) and decodes.
def longcat_make(load):
    c = load("config")
    config = c.ModelConfig(
        dit_dim=32, dit_depth=2, dit_heads=4, dit_ff_mult=2.0, dit_text_dim=24, repa_dit_layer=1, latent_dim=8,
        latent_hop=4,
        vae_config=c.VaeConfig(channels=4, c_mults=[2, 4], strides=[2, 2], latent_dim=8, encoder_latent_dim=16,
                               downsampling_ratio=4),
        text_encoder_config=c.TextEncoderConfig(vocab_size=50, d_model=24, d_kv=8, d_ff=32, num_layers=2,
                                                num_heads=3, relative_attention_num_buckets=8,
                                                relative_attention_max_distance=16))
    return load("longcat_audiodit").Model(config)


def longcat_forward(model, core, x, ids, text_mask, wave, noise_seed):
    text = model.encode_text(ids, text_mask.astype(core.float32))
    text_len = text_mask.sum(axis=1).astype(core.float32)
    text_mask = text_mask.astype(core.bool_)
    core.random.seed(noise_seed.item())
    prompt, frames = model.encode_prompt_audio(wave)
    latent_cond = core.pad(prompt, [(0, 0), (0, x.shape[1] - frames), (0, 0)])
    mask = core.ones(x.shape[:2], dtype=core.bool_)
    t = core.array([0.3])
    out = model.transformer(x=x, text=text, text_len=text_len, time=t, mask=mask, cond_mask=text_mask,
                            return_ith_layer=1, latent_cond=latent_cond)
    null = model.transformer(x=x, text=core.zeros_like(text), text_len=text_len, time=t, mask=mask,
                             cond_mask=text_mask, latent_cond=core.zeros_like(latent_cond))
    module = sys.modules[type(model).__module__]
    guided = module._apg_forward(x + 0.7 * out["last_hidden_state"], x + 0.7 * null["last_hidden_state"], 4.0,
                                 module._MomentumBuffer(momentum=-0.3), eta=0.5, norm_threshold=1.0)
    return out["last_hidden_state"], out["hidden_state"], guided, prompt, model.vae.decode(x)


# OmniVoice: a bidirectional Qwen3 (QK-norm, RoPE) over [style tokens, text
# tokens, reference audio frames, masked target frames] (text embeddings
# where the audio mask is off, summed codebook embeddings where it is on),
# a head per codebook; and its iterative unmasking (classifier-free
# guidance, top-k filtered Gumbel draws for tokens and positions from one
# seed, rank-based reveal schedule). Token ids only: the gradient is taken
# for the text embedding table.
OMNI_C, OMNI_V = 3, 21  # codebooks; 20 audio tokens and the mask


def omnivoice_make(load):
    config = load("config").OmniVoiceConfig(
        audio_vocab_size=OMNI_V, audio_mask_id=OMNI_V - 1, num_audio_codebook=OMNI_C,
        audio_codebook_weights=[3, 2, 1],
        llm_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                        intermediate_size=64, vocab_size=60, head_dim=8, rope_theta=10000.0))
    load("generation")  # for omnivoice_forward
    return load("omnivoice").Model(config)


def omnivoice_forward(model, core, style, text, reference, noise_seed):
    inputs = model._prepare_inference_inputs(style, text, 4, ref_tokens=reference)
    logits = model(inputs["input_ids"], inputs["audio_mask"])
    core.random.seed(noise_seed.item())
    tokens = sibling(model, "generation").iterative_unmask(
        model, inputs["input_ids"], inputs["audio_mask"], 4, num_steps=3, class_temperature=1.0)
    return logits, tokens


# TADA: a Llama over text tokens plus shifted acoustic features, acoustic
# masks and Gray-coded frame-time embeddings (the prompt built with .at[]
# scatter-adds), text logits through the tied embedding, a flow-matching
# diffusion head for the next acoustic vector and its durations (logSNR
# time schedule, cosine-scheduled separate acoustic and duration CFG), the
# text sampler (pad suppression, repetition penalty, top-k, top-p, a draw
# from one seed), and the codec decoder (segment attention mask, local
# RoPE attention, DAC decoder) over the acoustic vectors expanded by their
# durations.
def tada_make(load):
    config = load("config").ModelConfig(
        vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=8, intermediate_size=64, rope_theta=10000.0, acoustic_dim=8, num_time_classes=16, shift_acoustic=2,
        head_layers=2, head_ffn_ratio=2.0, decoder_hidden_dim=16, decoder_d_model=4, decoder_embed_dim=8,
        decoder_strides=[2, 2], decoder_num_attn_layers=1, decoder_num_attn_heads=2,
        decoder_attn_dim_feedforward=32)
    return load("tada").Model(config)


def tada_prompt_embeds(model, acoustic, ids, masks, before, after):
    return model._build_prompt_inputs_embeds(ids, acoustic, masks, before, after, ids.shape[1])


def tada_forward(model, core, acoustic, ids, masks, before, after, speech, noise_seed):
    hidden, _ = model.model(inputs_embeds=tada_prompt_embeds(model, acoustic, ids, masks, before, after))
    logits = model._lm_head_forward(hidden)
    flow = model._solve_flow_matching(speech, hidden[:, -1:], core.zeros_like(hidden[:, -1:]), num_steps=3,
                                      duration_cfg_scale=1.3)
    core.random.seed(noise_seed.item())
    token = model._sample_next_token(logits, ids, temperature=0.8, top_k=12, top_p=0.9, repetition_penalty=1.2,
                                     pad_token_id=3)
    # (The token plus one: a sampled token 0 is an all-zero output, which
    # close() refuses as a sign of a dead path.)
    return hidden, logits, flow, token.astype(core.float32) + 1, model._decode_wav(acoustic[0], before[0])


def tada_prompt(model, core, xs, load):
    acoustic, ids, masks, before, after = xs[:5]
    hidden, cache = model.model(inputs_embeds=tada_prompt_embeds(model, acoustic, ids, masks, before, after))
    return model._lm_head_forward(hidden[:, -1]), cache


def tada_step(model, core, token, xs, cache):
    """forward_one_step with the picked token, an acoustic vector of the
    prompt's, and frame times derived from the token."""
    _, logits, cache[:] = model.forward_one_step(
        core.array([[token]]), xs[0][:, token % xs[0].shape[1]][:, None], core.array([[token % 2]]),
        core.array([[token % 16]]), core.array([[(token // 3) % 16]]), cache=cache)
    return logits[:, -1]


# ArkTTS: a slow transformer over columns of a text/semantic id and codebook
# ids (codebook embeddings summed where the id is semantic), semantic logits
# tied to the embedding, and a fast transformer producing a frame's other
# codebooks with its own static KV cache; generate_codes() builds the
# left-padded prompt with a reference, and samples (top-k/top-p by
# put_along_axis, repetition-aware resampling, keyed uniform draws split
# from one seed). Two slow stacks: the pure-attention one (QK-norm, bf16
# RoPE table, static KV cache), and the Falcon-H1 hybrid (Mamba-2 and
# attention layers with muP vector, compact semantic head). Token ids only:
# the gradient is taken for the text embedding table. (The codec is built
# at its fixed full size: left out.)
ARK = dict(vocab_size=60, dim=32, n_layer=2, n_head=4, n_local_heads=2, head_dim=8, intermediate_size=64,
           max_seq_len=32, rope_base=10000.0, attention_qk_norm=True, codebook_size=12, num_codebooks=3,
           semantic_begin_id=40, semantic_end_id=51, eos_token_id=52, pad_token_id=53, n_fast_layer=2, fast_dim=24,
           fast_n_head=2, fast_n_local_heads=1, fast_head_dim=8, fast_intermediate_size=48, ras_window_size=4)
FALCON = dict(slow_backbone="falcon_h1", mamba_chunk_size=4, mamba_d_head=8, mamba_d_ssm=32, mamba_d_state=8,
              mamba_n_heads=4, mamba_n_groups=1, mamba_expand=2, embedding_multiplier=1.5)


def arktts_make(**settings):
    return lambda load: load("arktts").ArkttsModel(load("arktts").ModelConfig(**ARK, **settings))


def arktts_forward(model, core, prefix, suffix, codes, lengths, noise_seed):
    as_numpy = [np.array(x) for x in (prefix, suffix, codes, lengths)]
    prompt, mask = model._prepare_prompt(*as_numpy)
    generated = model.generate_codes(*as_numpy, max_new_tokens=4, temperature=0.9, top_p=0.9, top_k=8,
                                     seed=noise_seed.item())
    # flattened, after a marker: a generation that ends at once (end of
    # speech drawn first) is empty
    return model(prompt, mask), core.concatenate([core.array([-7]), generated.reshape(-1)])


# generate_codes()'s inputs: text before and after a reference of 3 frames
# of 3 codebooks, the reference's length, a seed.
ARK_INPUTS = [tokens(0, 40, 1, 4), tokens(0, 40, 1, 3), tokens(0, 12, 1, 3, 3), lambda rng: np.array([3]), seed]


# Breeze TTS: a T5Gemma2 text encoder (bidirectional; sliding-window and
# full layers with their own RoPE bases, offset RMS norms, an end-of-input
# embedding, a padding mask) projected into a Qwen3 backbone over [text,
# reference codebook frames, end-of-audio frame], a codebook-0 head with an
# end-of-speech class, and a Llama depth decoder with per-position heads
# completing each frame (its cached, CFG-guided, sampled frame loop from one
# seed; reserved codec ids masked by .at[] adds; the repetition penalty by
# put_along_axis). Token ids only: the gradient is taken for the text
# encoder's embedding table. generate() needs the tokenizer and codec: its
# prompt is laid out as _prompt_embeddings() lays it out.
BREEZE_C, BREEZE_V = 3, 23  # codebooks; 20 codec ids and 3 reserved


def breeze_make(load):
    config = load("config").ModelConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=8, rope_theta=10000.0, max_position_embeddings=64, num_codebooks=BREEZE_C, vocab_size=BREEZE_V,
        text_vocab_size=50, codebook_pad_token_id=BREEZE_V - 1, codec_config=dict(codebook_size=BREEZE_V - 3),
        depth_decoder_config=dict(hidden_size=24, num_hidden_layers=2, intermediate_size=48, num_attention_heads=2,
                                  num_key_value_heads=1, head_dim=12, max_position_embeddings=8,
                                  rope_theta=10000.0),
        text_encoder_config=dict(vocab_size=50, hidden_size=24, intermediate_size=48, num_hidden_layers=2,
                                 num_attention_heads=2, num_key_value_heads=1, head_dim=12, query_pre_attn_scalar=12,
                                 sliding_window=4, eoi_token_index=49, sliding_window_pattern=2))
    return load("breeze_tts").Model(config)


def breeze_prompt_embeddings(model, core, ids, text_mask, reference):
    text = model.text_encoder_proj(model.text_encoder(ids, text_mask.astype(core.bool_)))
    eos = core.full((1, 1, BREEZE_C), model.config.codebook_eos_token_id)
    return core.concatenate([text, model.backbone_model.embed_tokens(reference),
                             model.backbone_model.embed_tokens(eos)], axis=1)


def breeze_forward(model, core, ids, text_mask, reference, noise_seed):
    hidden = model.backbone_model(input_embeddings=breeze_prompt_embeddings(model, core, ids, text_mask, reference))
    logits = model.lm_head(hidden)
    # the uncached depth decoder: a placeholder, then the last frame's first two codebooks
    depth = model.depth_decoder.next_logits(reference[:, -1], hidden[:, -1])
    penalized = model._mask_reserved_codec_logits(model._apply_repetition_penalty(logits[:, -1], [1, 4, 7], 1.3))
    return hidden, logits, depth, penalized[:, :BREEZE_V - 3], core.isinf(penalized)


def breeze_decode(model, core, xs, pick, steps, load):
    """generate()'s frame loop with classifier-free guidance (the guidance
    prompt without the last text tokens): each step's guided logits; the
    first codebook drawn from them (repetition penalty, reserved ids
    masked), the others by _depth_tokens, from one seed."""
    ids, text_mask, reference, noise_seed = xs
    states = []
    for prompt in (breeze_prompt_embeddings(model, core, ids, text_mask, reference),
                   breeze_prompt_embeddings(model, core, ids[:, :4], text_mask[:, :4], reference)):
        cache = model.backbone_model.make_cache()
        states.append([model.backbone_model(input_embeddings=prompt, cache=cache)[:, -1], cache])
    core.random.seed(noise_seed.item())
    out, firsts = [], []
    for _ in range(steps):
        (cond, _), (uncond, _) = states
        logits = model.lm_head(uncond) + 1.5 * (model.lm_head(cond) - model.lm_head(uncond))
        out.append(logits)
        logits = model._mask_reserved_codec_logits(model._apply_repetition_penalty(logits, firsts, 1.3))
        firsts.append(model._sample(logits, temperature=0.9, top_p=0.9, top_k=8))
        frame = model._depth_tokens(firsts[-1], cond, unconditional_hidden=uncond, cfg_scale=1.5, temperature=0.9,
                                    top_p=0.9, top_k=8)
        for state in states:
            state[0] = model.backbone_model(core.array([[frame]]), cache=state[1])[:, -1]
    return out


# KugelAudio (VibeVoice-based): a Qwen2 language model with its head, a
# speech connector feeding acoustic latents back in, a diffusion head
# sampled by the stochastic SDE-DPM-Solver++ (with classifier-free
# guidance, from one seed), and VibeVoice's convolutional acoustic decoder.
# generate() needs the tokenizer and the real special-token ids: the
# language model is decoded with its cache here.
def kugel_make(load):
    c = load("config")
    acoustic = dict(vae_dim=8, encoder_n_filters=4, encoder_ratios=[2, 2], encoder_depths="1-1-1",
                    decoder_n_filters=4, decoder_ratios=[2, 2], decoder_depths="1-1-1")
    config = c.ModelConfig(
        acoustic_tokenizer_config=c.AcousticTokenizerConfig(**acoustic),
        decoder_config=c.Qwen2DecoderConfig(hidden_size=32, intermediate_size=64, num_attention_heads=4,
                                            num_hidden_layers=2, num_key_value_heads=2, vocab_size=60,
                                            rope_theta=10000.0),
        diffusion_head_config=c.DiffusionHeadConfig(hidden_size=32, head_layers=2, latent_size=8, speech_vae_dim=8,
                                                    ddpm_num_inference_steps=3),
        acoustic_vae_dim=8)
    return load("kugelaudio").Model(config)


def kugel_forward(model, core, latents, ids, noise_seed):
    hidden, _ = model.language_model(input_ids=ids)
    core.random.seed(noise_seed.item())
    speech = model.sample_speech_tokens(hidden[:, -1], cfg_scale=1.5, neg_condition=hidden[:, 0])
    return (model.acoustic_tokenizer.decode(latents), model.get_lm_logits(hidden), speech,
            model.acoustic_connector(latents))


def kugel_prompt(model, core, xs, load):
    hidden, cache = model.language_model(input_ids=xs[1])
    return model.get_lm_logits(hidden[:, -1]), [cache]


def kugel_step(model, core, token, xs, state):
    hidden, state[0] = model.language_model(input_ids=core.array([[token]]), cache=state[0])
    return model.get_lm_logits(hidden[:, -1])


MODELS = {
    "longcat_audiodit": dict(folder="longcat_audiodit", make=longcat_make,
                             inputs=[features(1, 9, 8), tokens(0, 50, 1, 6), prefix_mask(1, 6, 3), features(1, 13),
                                     seed],
                             forward=longcat_forward),
    "omnivoice": dict(folder="omnivoice", make=omnivoice_make,
                      inputs=[tokens(0, 60, 5), tokens(0, 60, 6), tokens(0, OMNI_V - 1, 3, OMNI_C), seed],
                      param="backbone.embed_tokens.weight", forward=omnivoice_forward),
    "tada": dict(folder="tada", make=tada_make,
                 inputs=[features(1, 4, 8), tokens(0, 60, 1, 8), tokens(0, 2, 1, 4), tokens(0, 4, 1, 5),
                         tokens(0, 16, 1, 5), features(1, 16), seed],
                 forward=tada_forward, decode=cached(tada_prompt, tada_step)),
    "arktts": dict(folder="arktts", make=arktts_make(), inputs=ARK_INPUTS, param="embeddings.weight",
                   forward=arktts_forward),
    "arktts_falcon_h1": dict(folder="arktts", make=arktts_make(**FALCON), inputs=ARK_INPUTS,
                             param="slow.embed_tokens.weight", forward=arktts_forward),
    "breeze_tts": dict(folder="breeze_tts", make=breeze_make,
                       inputs=[tokens(0, 50, 1, 7), prefix_mask(1, 7, 4), tokens(0, BREEZE_V - 3, 1, 3, BREEZE_C),
                               seed],
                       param="text_encoder.embed_tokens.weight", forward=breeze_forward,
                       decode=breeze_decode),
    "kugelaudio": dict(folder="kugelaudio", make=kugel_make, inputs=[features(1, 3, 8), tokens(0, 60, 1, 6), seed],
                       forward=kugel_forward, decode=cached(kugel_prompt, kugel_step)),
}


models, test_forward_and_gradient_match_mlx, test_cached_decoding_matches_mlx = model_tests(MODELS)
