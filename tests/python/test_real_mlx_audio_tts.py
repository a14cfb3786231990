"""mlx-audio's text-to-speech model backbones, unchanged, on Alloy against real MLX.

As in test_real_mlx_audio_models.py (speech to text): each model's files are
read from the installed mlx-audio 0.6.2 at test time (real_mlx_code.py) and
loaded twice, against real MLX (CPU) and with their MLX imports pointed at
`alloy.core` / `alloy.nn`. Both sides build the model from one tiny
configuration of its own config classes, get the same fresh random weights
(strict load) and the same fresh random inputs (speaker embeddings, prompt
embeddings, conditioning features, token ids), and then:

1. every array the forward pass returns agrees with MLX's (relative to its
   largest value), none of MLX's all zero;
2. so does the gradient of a random projection of the main output with
   respect to the float input (nonzero: the output depends on it);
3. for models with a KV-cache decode step, a few cached steps give the same
   logits, and the same greedy tokens wherever MLX's top two are apart.

Covered: Higgs Audio v2, Zonos2 (dense, and with mixture-of-experts blocks:
forward and decoding only, since MLX's own backward pass refuses the router's
index gather), VibeVoice (streaming), Dia, Chatterbox's T3, Soprano, Sesame
CSM, Bark (causal and fine GPTs), Qwen3-TTS's talker and code predictor. For
Dia and Bark, whose inputs are token ids only, the gradient is taken for an
embedding table instead.

Left out of tts/models:
- llama, qwen3: their module downloads the SNAC codec from the hub at import.
- kokoro: covered elsewhere.
- spark (imports soxr), pocket_tts (imports requests): not installed here.
- outetts: imports transformers' tokenizer classes and scipy at the top; its
  backbone is mlx-lm's llama/qwen, not its own.
- voxcpm, voxcpm2, kitten_tts, melotts, echo_tts, irodori_tts, the
  moss_tts family, chatterbox_turbo, indextts, longcat_audiodit, omnivoice,
  tada, arktts, breeze_tts, kugelaudio: test_real_mlx_audio_tts_more.py.
"""
import sys

import numpy as np
import pytest
from model_checks import build_pair, check_cached_decoding, check_forward_and_gradient, features, \
    stand_in_missing
from test_real_mlx_vlm_vision import random_weights

from mlx.utils import tree_flatten

TTS = "mlx_audio.tts.models"
CACHE = "mlx_audio.lm.models.cache"

# Packages that model files import at the top for what these tests do not run
# (hub downloads, tokenizers, progress bars, resampling): stand-ins where they
# are not installed.
STAND_INS = {
    "huggingface_hub": dict(snapshot_download=None, hf_hub_download=None),
    "tqdm": dict(tqdm=None, trange=None),
    "transformers": dict(AutoTokenizer=None, BertTokenizer=None),
    "yaml": dict(),
    "tokenizers": dict(),
    "tokenizers.processors": dict(TemplateProcessing=None),
}


def tokens(low, high, *shape):
    return lambda rng: rng.integers(low, high, shape).astype(np.int32)


def last(logits):
    return logits[:, -1]


def cached(prompt, step, next_input=None):
    """decode through the model's KV caches: prompt(model, core, xs, load) ->
    (last logits, cache); step(model, core, token, xs, cache) -> last logits.
    The prompt first, then one token a step."""
    def decode(model, core, xs, pick, steps, load):
        logits, cache = prompt(model, core, xs, load)
        out = [logits]
        for i in range(steps - 1):
            out.append(step(model, core, pick(i, out[-1]), xs, cache))
        pick(len(out) - 1, out[-1])
        return out
    return decode


# ---- the models --------------------------------------------------------------
# Each entry: the model's folder, make(load) -> model, inputs: builders of
# numpy inputs (the first is the float input the gradient is taken for),
# forward(model, core, *inputs) -> outputs (the first is the main output), and
# for models that decode, decode(model, core, inputs, pick, steps, load) -> per
# step its logits, where pick(step, logits) gives the token fed next.


# Higgs Audio v2: a Llama backbone whose layers route audio positions through
# a second MLP and norms (dual FFN), with text and audio-codebook heads.
def higgs_make(load):
    c = load("config")
    text = c.HiggsTextConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                             intermediate_size=64, vocab_size=61, rope_theta=10000.0, tie_word_embeddings=False,
                             rope_scaling=None)
    config = c.HiggsAudioConfig(text_config=text, audio_num_codebooks=3, audio_codebook_size=13,
                                audio_stream_bos_id=13, audio_stream_eos_id=14, audio_dual_ffn_layers=[1])
    return load("model").Model(config)


def higgs_prompt(model, core, xs, load):
    embeds, mask = xs
    cache = [load(CACHE).KVCache() for _ in model.layers]
    text, _ = model(inputs_embeds=embeds, audio_out_mask=mask, cache=cache)
    return last(text), cache


def higgs_step(model, core, token, xs, cache):
    text, _ = model(input_ids=core.array([[token]]), audio_out_mask=core.array([[token % 2 == 0]]), cache=cache)
    return last(text)


# Zonos2: frames of codebook and text ids summed through one embedding each, a
# speaker embedding projected into one position, dense and mixture-of-experts
# blocks, soft-capped per-codebook logits.
ZONOS_VOCAB = 34  # audio codebook size 32 + end-of-audio and pad


def zonos_make(experts, topk=1):
    def make(load):
        config = load("config").Zonos2Config(
            n_layers=3, dim=32, head_dim=8, n_kv_heads=2, multiple_of=16, n_codebooks=3, codebook_size=32,
            eoa_id=32, audio_pad_id=33, text_vocab=519, speaker_embedding_dim=16, speaker_lda_dim=8,
            moe_n_experts=experts, moe_router_topk=topk, special_topk_layers={}, moe_router_dim=8,
            moe_start_from_layer=1, moe_end_from_layer=1, max_seqlen=64)
        return load("model").Model(config)
    return make


def zonos_prompt(model, core, xs, load):
    speaker, ids = xs
    cache = load(CACHE).make_prompt_cache(model)
    return last(model(ids, cache=cache, speaker_embedding=speaker, speaker_token_position=1)), cache


def zonos_step(model, core, token, xs, cache):
    frame = core.array([[[token % ZONOS_VOCAB] * 4]])
    return last(model(frame, cache=cache))


# VibeVoice (streaming): a Qwen2 text model, then a Qwen2 speech model on its
# hidden states plus text/speech type embeddings, an end-of-speech classifier,
# a diffusion head predicting acoustic latents from that condition, and the
# acoustic tokenizer's convolutional decoder from latents to waveform.
def vibevoice_make(load):
    c = load("config")
    acoustic = dict(vae_dim=8, encoder_n_filters=4, encoder_ratios=[2, 2], encoder_depths="1-1-1",
                    decoder_n_filters=4, decoder_ratios=[2, 2], decoder_depths="1-1-1")
    config = c.ModelConfig(
        acoustic_tokenizer_config=c.AcousticTokenizerConfig(**acoustic),
        decoder_config=c.Qwen2DecoderConfig(hidden_size=32, intermediate_size=64, num_attention_heads=4,
                                            num_key_value_heads=2, num_hidden_layers=3, vocab_size=61, head_dim=8,
                                            rope_theta=10000.0),
        diffusion_head_config=c.DiffusionHeadConfig(hidden_size=32, head_layers=2, latent_size=8, speech_vae_dim=8),
        acoustic_vae_dim=8, tts_backbone_num_hidden_layers=1)
    return load("vibevoice").Model(config)


def vibevoice_speech(model, core, hidden, types, noise, cache=None):
    speech, cache = model.tts_language_model(inputs_embeds=hidden + model.tts_input_types(types), cache=cache)
    latents = model.prediction_head(noise, core.array([500.0] * noise.shape[0]), speech[0, -noise.shape[0]:])
    eos = model.tts_eos_classifier(speech)
    return model.acoustic_tokenizer.decode(latents[None]), latents, eos


def vibevoice_forward(model, core, embeds, types, noise):
    hidden, _ = model.language_model(inputs_embeds=embeds)
    return vibevoice_speech(model, core, hidden, types, noise)


def vibevoice_prompt(model, core, xs, load):
    embeds, types, noise = xs
    cache = (model.language_model.make_cache(), model.tts_language_model.make_cache())
    hidden, _ = model.language_model(inputs_embeds=embeds, cache=cache[0])
    return vibevoice_speech(model, core, hidden, types, noise[-1:], cache[1])[1], cache


def vibevoice_step(model, core, token, xs, cache):
    hidden, _ = model.language_model(input_ids=core.array([[token % 61]]), cache=cache[0])
    return vibevoice_speech(model, core, hidden, core.array([[1]]), xs[2][-1:], cache[1])[1]


# Dia: a text encoder, and a decoder over frames of codebook ids (summed
# embeddings) with grouped-query self-attention and cross-attention whose keys
# are computed once from the encoder output. Token ids only: the gradient is
# taken for the encoder's embedding table.
DIA_VOCAB = 30


def dia_make(load):
    c = load("config")
    model = c.ModelConfig(
        encoder=c.EncoderConfig(n_layer=2, n_embd=32, n_hidden=64, n_head=2, head_dim=16),
        decoder=c.DecoderConfig(n_layer=2, n_embd=32, n_hidden=64, gqa_query_heads=4, kv_heads=2, gqa_head_dim=8,
                                cross_query_heads=2, cross_head_dim=16),
        src_vocab_size=40, tgt_vocab_size=DIA_VOCAB)
    data = c.DataConfig(text_length=16, audio_length=16, channels=3, audio_eos_value=27, audio_pad_value=28,
                        audio_bos_value=29, delay_pattern=[0, 1, 2])
    config = c.DiaConfig(model=model, training=c.TrainingConfig(dtype="float32"), data=data)
    return load("layers").DiaModel(config)


def dia_positions(core, n, start=0):
    return core.arange(start, start + n)[None]


def dia_causal(core, n):
    return core.tril(core.ones((n, n))).astype(core.bool_)[None, None]


def dia_forward(model, core, src, tgt):
    s, t = src.shape[1], tgt.shape[1]
    return model(src, tgt, dia_positions(core, s), dia_positions(core, t), dec_self_attn_mask=dia_causal(core, t),
                 enable_dropout=False)


def dia_prompt(model, core, xs, load):
    src, tgt = xs
    encoded = model.encoder(src, src_positions=dia_positions(core, src.shape[1]), deterministic=True)
    cross = model.decoder.precompute_cross_attention_kv(encoded, dia_positions(core, src.shape[1]))
    cache = [load(CACHE).KVCache() for _ in model.decoder.layers]
    logits = model.decoder(tgt, encoded, dia_positions(core, tgt.shape[1]), dia_positions(core, src.shape[1]), True,
                           dia_causal(core, tgt.shape[1]), None, cache, cross)
    return last(logits), (encoded, cache, cross)


def dia_step(model, core, token, xs, state):
    encoded, cache, cross = state
    frame = core.array([[[token % DIA_VOCAB] * 3]])
    position = dia_positions(core, 1, cache[0].offset)
    return model.decoder.decode_step(frame, position, encoded, None, None, cache, cross)[:, -1]


# Chatterbox T3: a Llama backbone over [speaker projection, prompt speech
# tokens, emotion control, text tokens with learned positions, speech tokens
# with learned positions], with text and speech heads. (The Perceiver
# resampler of the prompt is built at a fixed width of 1024: off here.)
def chatterbox_make(load):
    config = load("mlx_audio.tts.models.chatterbox.config")
    config.LLAMA_CONFIGS["tiny"] = dict(
        model_type="llama", vocab_size=50, hidden_size=32, num_hidden_layers=2, intermediate_size=64,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=256, rms_norm_eps=1e-5,
        rope_theta=10000.0, rope_scaling=None, attention_bias=False, mlp_bias=False, tie_word_embeddings=False)
    hp = config.T3Config(text_tokens_dict_size=45, start_text_token=43, stop_text_token=0, max_text_tokens=16,
                         speech_tokens_dict_size=50, start_speech_token=47, stop_speech_token=48,
                         max_speech_tokens=16, llama_config_name="tiny", speaker_embed_size=16,
                         use_perceiver_resampler=False, emotion_adv=True)
    return load(f"{TTS}.chatterbox.t3.t3").T3(hp)


def chatterbox_cond(model, speaker, emotion, prompt):
    t3 = load_of(model)
    return t3.T3Cond(speaker_emb=speaker, cond_prompt_speech_tokens=prompt, emotion_adv=emotion)


def load_of(model):
    """The cond_enc module of the framework the model was built from."""
    return sys.modules[type(model.cond_enc).__module__]


def chatterbox_forward(model, core, speaker, emotion, prompt, text, speech):
    out = model(chatterbox_cond(model, speaker, emotion, prompt), text, core.array([text.shape[1]]), speech,
                core.array([speech.shape[1]]))
    return out["speech_logits"], out["text_logits"], out["hidden_states"]


def chatterbox_prompt(model, core, xs, load):
    speaker, emotion, prompt, text, speech = xs
    embeds, _ = model.prepare_input_embeds(chatterbox_cond(model, speaker, emotion, prompt), text, speech)
    cache = load(CACHE).make_prompt_cache(model.tfmr)
    hidden = model.tfmr.model(None, cache=cache, input_embeddings=embeds)
    return model.speech_head(hidden[:, -1]), (cache, [speech.shape[1]])


def chatterbox_step(model, core, token, xs, state):
    cache, position = state  # the next speech token's learned position
    embed = model.speech_emb(core.array([[token]])) + model.speech_pos_emb.get_fixed_embedding(position[0])
    position[0] += 1
    hidden = model.tfmr.model(None, cache=cache, input_embeddings=embed)
    return model.speech_head(hidden[:, -1])


# Soprano: a Qwen3 language model with its own head, and a Vocos decoder
# (linear upsampling, ConvNeXt blocks, inverse-STFT head) from hidden states
# to waveform.
def soprano_make(load):
    m = load("soprano")
    decoder = m.DecoderConfig(decoder_num_layers=2, decoder_dim=32, decoder_intermediate_dim=64, hop_length=16,
                              n_fft=64, upscale=2, input_kernel=3)
    config = m.ModelConfig(model_type="qwen3", hidden_size=32, num_hidden_layers=2, intermediate_size=64,
                           num_attention_heads=4, rms_norm_eps=1e-6, vocab_size=61, num_key_value_heads=2,
                           max_position_embeddings=128, rope_theta=10000.0, head_dim=8, tie_word_embeddings=False,
                           decoder_config=decoder)
    return m.Model(config)


def lm_prompt(lm, ids_at=0):
    """prompt of a causal LM called as lm(model)(ids, cache) -> logits: its
    cache is make_prompt_cache(lm(model))."""
    def prompt(model, core, xs, load):
        cache = load(CACHE).make_prompt_cache(lm(model))
        return last(lm(model)(xs[ids_at], cache)), cache
    return prompt


def lm_step(lm):
    return lambda model, core, token, xs, cache: last(lm(model)(core.array([[token]]), cache))


# Sesame CSM: a Llama backbone over frames of summed (masked) audio-codebook
# and text embeddings giving codebook 0, and a Llama depth decoder that
# produces the frame's other codebooks one by one from the backbone's last
# state. The float input is the frame mask the embeddings are multiplied by.
SESAME_CODEBOOKS, SESAME_VOCAB = 4, 33


def sesame_make(load):
    llama = dict(attention_bias=False, attention_dropout=0.0, head_dim=8, hidden_act="silu", initializer_range=0.02,
                 max_position_embeddings=64, mlp_bias=False, num_attention_heads=4, num_key_value_heads=2,
                 rms_norm_eps=1e-5, rope_theta=10000, use_cache=True,
                 rope_scaling=dict(factor=32.0, high_freq_factor=4.0, low_freq_factor=1.0,
                                   original_max_position_embeddings=16, rope_type="llama3"))
    depth = dict(llama, backbone_hidden_size=32, hidden_size=24, intermediate_size=48, model_type="csm_depth",
                 num_codebooks=SESAME_CODEBOOKS, num_hidden_layers=2, vocab_size=SESAME_VOCAB)
    m = load("sesame")
    config = dict(llama, model_type="csm", backbone_flavor="tiny", decoder_flavor="tiny", text_vocab_size=41,
                  audio_vocab_size=SESAME_VOCAB, audio_num_codebooks=SESAME_CODEBOOKS, audio_eos_token_id=0,
                  audio_token_id=40, bos_token_id=1, codebook_eos_token_id=0, codebook_pad_token_id=32,
                  depth_decoder_config=depth, hidden_size=32, intermediate_size=64,
                  num_codebooks=SESAME_CODEBOOKS, num_hidden_layers=2, pad_token_id=0,
                  tie_codebooks_embeddings=False, tie_word_embeddings=False, vocab_size=41)
    return m.SesameModel(config)


def sesame_forward(model, core, mask, frames, codes):
    hidden = model.backbone((model._embed_tokens(frames) * mask[..., None]).sum(axis=2))
    c0 = model.codebook0_head(hidden)
    # the depth decoder over the last state and the frame's codebooks 0..K-2
    depth = core.concatenate([hidden[:, -1:]] + [model._embed_audio(i, codes[:, i:i + 1])
                                                 for i in range(SESAME_CODEBOOKS - 1)], axis=1)
    depth = model.decoder(model.projection(depth))
    rest = core.stack([depth[:, i + 1] @ model.audio_head[i] for i in range(SESAME_CODEBOOKS - 1)], axis=1)
    return c0, rest


def sesame_decode(model, core, xs, pick, steps, load):
    """The model's own frame loop (backbone and depth-decoder caches) with a
    greedy sampler: the frames' codebook ids."""
    mask, frames, _ = xs
    model.setup_caches(1)
    greedy = lambda logits: core.argmax(logits, axis=-1)  # noqa: E731
    out = []
    for _ in range(steps):
        out.append(model.generate_frame(frames, mask, None, greedy))
        frames = core.concatenate([out[-1], core.zeros((1, 1), dtype=core.int32)], axis=1)[:, None]
        mask = core.concatenate([core.ones((1, 1, SESAME_CODEBOOKS)), core.zeros((1, 1, 1))], axis=2)
    return out


# Bark: its causal GPT (the semantic and coarse stages: learned positions,
# last-position logits, a tuple KV cache) and its non-causal fine GPT, which
# sums the embeddings of the codebooks up to the one it predicts. Token ids
# only: the gradient is taken for the input embedding table.
BARK = dict(block_size=32, input_vocab_size=50, output_vocab_size=50, n_layer=2, n_head=4, n_embd=32, bias=True)


def bark_gpt(model, core, ids, kv=None):
    return model(ids, past_kv=kv, use_cache=True)


def bark_prompt(model, core, xs, load):
    logits, kv = bark_gpt(model, core, xs[0])
    return last(logits), [kv]


def bark_step(model, core, token, xs, state):
    logits, state[0] = bark_gpt(model, core, core.array([[token]]), state[0])
    return last(logits)


# Qwen3-TTS's talker: a Qwen3 decoder with interleaved multimodal RoPE over
# prompt embeddings giving the first codebook, and its code predictor (a
# smaller decoder, through a projection) giving the others; the text
# projection MLP maps text-model states into the talker.
def qwen3_tts_make(load):
    c = load("config")
    small = dict(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8, rope_theta=10000.0,
                 num_code_groups=4)
    predictor = c.Qwen3TTSTalkerCodePredictorConfig(vocab_size=40, hidden_size=24, intermediate_size=48, **small)
    config = c.Qwen3TTSTalkerConfig(
        code_predictor_config=predictor, vocab_size=50, hidden_size=32, intermediate_size=64,
        rope_scaling=dict(interleaved=True, mrope_section=[2, 1, 1], rope_type="default"), text_hidden_size=16,
        text_vocab_size=30, codec_eos_token_id=40, codec_think_id=41, codec_nothink_id=42, codec_think_bos_id=43,
        codec_think_eos_id=44, codec_pad_id=45, codec_bos_id=46, **small)
    return load("talker").Qwen3TTSTalkerForConditionalGeneration(config)


def qwen3_tts_forward(model, core, embeds, text):
    logits, hidden = model(embeds + model.text_projection(text))
    rest, _, _ = model.code_predictor(hidden, generation_step=1)
    return logits, hidden, rest


def qwen3_tts_prompt(model, core, xs, load):
    cache = model.make_cache()
    logits, _ = model(xs[0] + model.text_projection(xs[1]), cache=cache)
    return last(logits), cache


def qwen3_tts_step(model, core, token, xs, cache):
    logits, _ = model(model.get_input_embeddings()(core.array([[token]])), cache=cache)
    return last(logits)


MODELS = {
    "higgs_audio": dict(folder="higgs_audio", make=higgs_make,
                        inputs=[features(1, 6, 32), lambda rng: rng.random((1, 6)) < 0.5],
                        forward=lambda m, core, x, mask: m(inputs_embeds=x, audio_out_mask=mask),
                        decode=cached(higgs_prompt, higgs_step)),
    "vibevoice": dict(folder="vibevoice", make=vibevoice_make,
                      inputs=[features(1, 5, 32), tokens(0, 2, 1, 5), features(5, 8)],
                      forward=vibevoice_forward, decode=cached(vibevoice_prompt, vibevoice_step)),
    "dia": dict(folder="dia", make=dia_make, inputs=[tokens(0, 40, 1, 7), tokens(0, DIA_VOCAB, 1, 5, 3)],
                param="encoder.embedding.weight", forward=dia_forward, decode=cached(dia_prompt, dia_step)),
    "chatterbox_t3": dict(folder="chatterbox", make=chatterbox_make,
                          inputs=[features(1, 16), features(1, 1, 1, scale=0.5), tokens(0, 47, 1, 3),
                                  tokens(0, 43, 1, 5), tokens(0, 47, 1, 4)],
                          forward=chatterbox_forward, decode=cached(chatterbox_prompt, chatterbox_step)),
    "soprano": dict(folder="soprano", make=soprano_make, inputs=[features(1, 6, 32), tokens(0, 61, 1, 5)],
                    forward=lambda m, core, hidden, ids: (m.decoder(hidden), m.language_model(ids)),
                    decode=cached(lm_prompt(lambda m: m.language_model, 1), lm_step(lambda m: m.language_model))),
    "sesame": dict(folder="sesame", make=sesame_make,
                   inputs=[lambda rng: rng.uniform(0.5, 1.5, (1, 5, SESAME_CODEBOOKS + 1)).astype(np.float32),
                           tokens(0, SESAME_VOCAB, 1, 5, SESAME_CODEBOOKS + 1), tokens(0, SESAME_VOCAB, 1, 4)],
                   forward=sesame_forward, decode=sesame_decode),
    "bark_semantic": dict(folder="bark", make=lambda load: load("bark").GPT(load("bark").SemanticConfig(**BARK)),
                          inputs=[tokens(0, 50, 1, 6)], param="input_embeds_layer.weight",
                          forward=lambda m, core, ids: m(ids), decode=cached(bark_prompt, bark_step)),
    "bark_fine": dict(folder="bark", inputs=[tokens(0, 50, 1, 6, 4)], param="input_embeds_layers.0.weight",
                      make=lambda load: load("bark").FineGPT(load("bark").FineAcousticsConfig(
                          **BARK, n_codes_total=4, n_codes_given=1)),
                      forward=lambda m, core, ids: m(2, ids)),
    "qwen3_tts": dict(folder="qwen3_tts", make=qwen3_tts_make, inputs=[features(1, 6, 32), features(1, 6, 16)],
                      forward=qwen3_tts_forward, decode=cached(qwen3_tts_prompt, qwen3_tts_step)),
    # dense blocks only (one expert), and with a mixture-of-experts block
    # (top one, then top two of four): the router gathers the experts'
    # probabilities with indices it stops gradients for only afterwards,
    # which MLX's own backward pass refuses, so no gradient there.
    **{name: dict(folder="zonos2", make=zonos_make(*experts), inputs=[features(1, 16), tokens(0, 34, 1, 5, 4)],
                  forward=lambda m, core, spk, ids: m(ids, speaker_embedding=spk, speaker_token_position=1),
                  decode=cached(zonos_prompt, zonos_step), grad=experts == (1,))
       for name, experts in [("zonos2", (1,)), ("zonos2_moe", (4,)), ("zonos2_moe_top2", (4, 2))]},
}


# ---- the checks --------------------------------------------------------------


@pytest.fixture
def models(rng, monkeypatch, request):
    """The spec, and (model, load) of MLX and of Alloy: the models with the
    same fresh random weights."""
    stand_in_missing(monkeypatch, STAND_INS)
    spec = MODELS[request.param]

    def weights_of(mlx_model):
        # Fixed tables that a file keeps among its parameters keep the file's
        # own values: random ones of 1/sqrt(fan-in) would hide positions.
        own = dict(tree_flatten(mlx_model.parameters()))
        return [(k, own[k] if k.endswith(spec.get("tables", ())) else w)
                for k, w in random_weights(rng, mlx_model, spec.get("gain", 1.0))]

    return build_pair(request.param, f"{TTS}.{spec['folder']}", spec, weights_of)


def params(names):
    return [pytest.param(n, marks=MODELS[n].get("marks", ())) for n in sorted(names)]


@pytest.mark.parametrize("models", params(MODELS), indirect=True)
def test_forward_and_gradient_match_mlx(rng, models):
    spec, (mlx_model, _), (alloy_model, _) = models
    check_forward_and_gradient(rng, spec, mlx_model, alloy_model)


DECODERS = [name for name, spec in MODELS.items() if "decode" in spec]


@pytest.mark.parametrize("models", params(DECODERS), indirect=True)
def test_cached_decoding_matches_mlx(rng, models):
    spec, *built = models
    check_cached_decoding(rng, spec, built)
