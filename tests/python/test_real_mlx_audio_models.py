"""mlx-audio's speech-to-text models, unchanged, on Alloy against real MLX.

Each model's files (read from the installed mlx-audio 0.6.2 at test time, see
real_mlx_code.py) are loaded twice: as they are against real MLX (CPU), and
with their MLX imports pointed at `alloy.core` / `alloy.nn`. Both sides build
the model from one tiny configuration of its own config classes, get the same
fresh random weights (strict load) and the same fresh random input (mel
features or waveform, and token ids for decoders), and then:

1. every array the forward pass returns agrees with MLX's (relative to its
   largest value), none of MLX's all zero;
2. so does the gradient of a random projection of the main output with
   respect to the float input (a nonzero one: the output depends on it);
3. for models that decode, a few steps through the model's own caches (KV
   caches, rotating windows, LSTM states, streaming encoder caches) give the
   same logits and the same greedy tokens wherever MLX's top two are apart;
   FireRedASR2's beam search and Granite NAR's one-pass transcription give
   the same tokens.

26 architectures (29 entries: Parakeet's three heads, Granite Speech and its
plus variant). Left out of stt/models:
- mimo_v2_asr: its language model reads the discrete codes of a separate RVQ
  audio tokenizer through per-channel local transformers; not attempted here.
- mega_asr: Qwen3-ASR (covered) plus LoRA deltas and a quality router that
  load from its checkpoint's files.
- phonon, phonon2: Qwen3-ASR and Parakeet TDT (covered) with weights packed in
  ternary / five-value checkpoint formats (the unpacking is in
  test_real_mlx_code.py).
- nemo: alignment helpers, no network (the qwen3_forced_aligner folder only
  re-exports qwen3_asr's aligner, covered).
The text-to-speech backbones (tts/models) are not covered here.
"""
import importlib.util
import sys
import types

import numpy as np
import pytest
from real_mlx_code import arrays_in, as_alloy
from model_checks import both, build, check_input_gradient, check_outputs, decode_both, features
from test_real_mlx_vlm_vision import close, random_weights

import mlx.core as mx
from mlx.utils import tree_flatten

import alloy.core as ax

STT = "mlx_audio.stt.models"

# Packages that model files import at the top for what these tests do not
# run (hub downloads, tokenizers, progress bars): stand-ins where they are not
# installed.
STAND_INS = {
    "huggingface_hub": dict(snapshot_download=None, hf_hub_download=None),
    "tqdm": dict(tqdm=lambda *args, **kwargs: types.SimpleNamespace(update=lambda *a: None, close=lambda: None)),
    "transformers": dict(AutoTokenizer=None),
}


# ---- the models --------------------------------------------------------------
# Each entry: the model's folder, make(load) -> model, inputs(rng) -> numpy
# arrays (the first is the float input the gradient is taken for), forward(model,
# core, *inputs) -> outputs (the first is the main output), and, for models
# that decode, decode(model, core, inputs, pick, steps, load) -> per step its
# logits (or its logits and new state), where pick(step, logits) gives the
# token fed next.


def stepwise(start, step):
    """decode of an encoder-decoder: start(model, inputs) -> (encoder
    output, prompt, cache); step(model, encoded, tokens, cache, position) ->
    (last logits, cache). The prompt first, then one token a step."""
    def decode(model, core, xs, pick, steps, load):
        encoded, token, cache = start(model, xs)
        out, position = [], 0
        for i in range(steps):
            logits, cache = step(model, encoded, token, cache, position)
            position += token.shape[1]
            out.append(logits)
            token = core.array([[pick(i, logits)]])
        return out
    return decode


def whisper_make(load):
    w = load("whisper")
    dims = w.ModelDimensions(n_mels=16, n_audio_ctx=12, n_audio_state=32, n_audio_head=2, n_audio_layer=2,
                             n_vocab=97, n_text_ctx=16, n_text_state=32, n_text_head=2, n_text_layer=2)
    return w.Model(dims, dtype=w.mx.float32)


def whisper_step(model, audio, token, cache, position):
    logits, cache, _ = model.decoder(token, audio, kv_cache=cache)
    return logits[:, -1], cache


def moonshine_make(load):
    config = load("config").ModelConfig(vocab_size=97, hidden_size=32, intermediate_size=64,
                                        encoder_num_hidden_layers=2, decoder_num_hidden_layers=2,
                                        encoder_num_attention_heads=2, decoder_num_attention_heads=2,
                                        # grouped keys in the encoder only: the decoder caches
                                        # its keys after repeating them, which its next step
                                        # cannot extend (in MLX as in Alloy)
                                        encoder_num_key_value_heads=1, tie_word_embeddings=False)
    return load("moonshine").Model(config)


def moonshine_forward(model, core, audio, tokens):
    encoded = model.encoder(audio)
    hidden, _ = model.decoder(tokens, encoded)
    return model._get_logits(hidden), encoded


def moonshine_step(model, encoded, token, cache, position):
    hidden, cache = model.decoder(token, encoded, cache=cache)
    return model._get_logits(hidden[:, -1]), cache


# wav2vec 2.0 as pre-trained (group-normed first convolution, post-norm
# encoder) and MMS as fine-tuned for CTC (layer-normed convolutions,
# pre-norm "stable" encoder, attention adapters).
WAV2VEC = dict(vocab_size=29, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
               conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3), num_feat_extract_layers=3,
               num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)


def wav2vec_make(load):
    return load("wav2vec").Wav2Vec2Model(load("wav2vec").ModelConfig(**WAV2VEC))


def mms_make(load):
    wav2vec = load(f"{STT}.wav2vec.wav2vec")
    config = wav2vec.ModelConfig(**WAV2VEC, feat_extract_norm="layer", do_stable_layer_norm=True,
                                 adapter_attn_dim=16, conv_bias=True)
    return load("mms").Model(config)


def sensevoice_make(load):
    config = load("config").ModelConfig(
        vocab_size=61, input_size=24,
        encoder_conf=dict(output_size=32, attention_heads=2, linear_units=64, num_blocks=2, tp_blocks=1, kernel_size=5))
    return load("sensevoice").SenseVoiceSmall(config)


def lasr_make(load):
    config = load("config").ModelConfig(
        vocab_size=41, encoder_config=dict(
            hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, intermediate_size=64,
            conv_kernel_size=5, num_mel_bins=16, subsampling_conv_channels=24, subsampling_conv_kernel_size=3))
    return load("lasr").LasrForCTC(config)


# NVIDIA NeMo's FastConformer (depthwise-striding subsampling by 4, relative
# positional attention, convolution modules with BatchNorm) under its three
# heads, built from NeMo-style configuration dictionaries as the checkpoints
# carry them: token-and-duration transducer, plain transducer, CTC.
CONFORMER = dict(feat_in=16, n_layers=2, d_model=32, n_heads=2, ff_expansion_factor=2, subsampling_factor=4,
                 self_attention_model="rel_pos", subsampling="dw_striding", conv_kernel_size=5,
                 subsampling_conv_channels=8, pos_emb_max_len=64, xscaling=True)
VOCABULARY = [f"\u2581t{i}" for i in range(23)]
DURATIONS = [0, 1, 2, 3]


def parakeet_config(head):
    config = dict(preprocessor=dict(sample_rate=16000, normalize="per_feature", window_size=0.025,
                                    window_stride=0.01, window="hann", features=16, n_fft=512, dither=0.0),
                  encoder=CONFORMER)
    transducer = dict(decoder=dict(blank_as_pad=True, vocab_size=len(VOCABULARY),
                                   prednet=dict(pred_hidden=24, pred_rnn_layers=2)),
                      joint=dict(num_classes=len(VOCABULARY), vocabulary=VOCABULARY,
                                 jointnet=dict(joint_hidden=32, activation="relu", encoder_hidden=32, pred_hidden=24)))
    if head == "tdt":
        transducer["joint"]["num_extra_outputs"] = len(DURATIONS)
        return dict(config, **transducer, target="nemo.collections.asr.models.rnnt_bpe_models.EncDecRNNTBPEModel",
                    model_defaults=dict(tdt_durations=DURATIONS),
                    decoding=dict(model_type="tdt", durations=DURATIONS, greedy=dict(max_symbols=4)))
    if head == "rnnt":
        return dict(config, **transducer, target="nemo.collections.asr.models.rnnt_bpe_models.EncDecRNNTBPEModel",
                    decoding=dict(greedy=dict(max_symbols=4)))
    return dict(config, target="nemo.collections.asr.models.ctc_bpe_models.EncDecCTCModelBPE",
                decoder=dict(feat_in=32, num_classes=-1, vocabulary=VOCABULARY), decoding=dict(greedy=None))


def parakeet_make(head):
    return lambda load: load("parakeet").Model.from_config(parakeet_config(head))


def transducer_forward(model, core, mel, labels):
    """The encoder, the prediction network over a label sequence, and the
    joint network over every (frame, label) pair."""
    encoded, lengths = model.encoder(mel)
    predicted, state = model.decoder(labels)
    return model.joint(encoded, predicted), encoded, lengths, predicted, state


def ctc_forward(model, core, mel):
    encoded, lengths = model.encoder(mel)
    return model.decoder(encoded), encoded, lengths


def transducer_decode(model, core, xs, pick, steps, load, encode=lambda model, core, mel, load: model.encoder(mel)[0]):
    """One label a frame through the prediction network's LSTM state (the
    transducers' cache), starting from blank; for TDT also its compiled step
    (mx.compile) on the same state, whose LSTM state must agree too."""
    encoded = encode(model, core, xs[0], load)
    blank = len(model.vocabulary)
    compiled = getattr(model, "_compiled_tdt_step", None)
    out, state, label = [], None, None
    for i in range(steps):
        frame = encoded[:, i:i + 1]
        predicted, new_state = model.decoder(label, state)
        logits = model.joint(frame, predicted)[0, 0, 0, : blank + 1]
        out.append((logits, *new_state))
        if compiled is not None and state is not None:
            out[-1] += compiled(frame, label, *state)[2:]
        state, label = new_state, core.array([[pick(i, logits)]])
    return out


def nemotron_make(load):
    # Cache-aware streaming FastConformer: causal subsampling and convolutions,
    # attention limited to 4 frames back and 1 ahead; a language prompt.
    config = load("nemotron_asr").ModelConfig.from_dict(dict(
        encoder=dict(CONFORMER, causal_downsampling=True, att_context_size=[[4, 1]], use_bias=False),
        prompt=dict(num_prompts=4, prompt_hidden=16, prompt_dictionary={"auto": 0, "en": 2}),
        decoder=dict(pred_hidden=24, pred_rnn_layers=2, vocab_size=len(VOCABULARY)),
        joint=dict(joint_hidden=32, encoder_hidden=32, pred_hidden=24, num_classes=len(VOCABULARY)),
        vocabulary=VOCABULARY, default_att_context_size=[4, 1]))
    return load("nemotron_asr").Model(config)


def nemotron_forward(model, core, mel, labels):
    encoded, lengths = model.encoder(mel, att_context_size=[4, 1])
    prompted = model.apply_prompt(encoded, "en")
    predicted, state = model.decoder(labels)
    return model.joint(prompted, predicted), prompted, lengths, predicted, state


def nemotron_streamed(model, core, mel, load):
    """The encoder run as it streams, chunk by chunk through its attention,
    convolution and subsampling caches: the frames its decode() reads."""
    return core.concatenate(list(load("streaming").stream_encode(model, mel, "en")), axis=1)


def canary_make(load):
    config = load("config").ModelConfig(
        preprocessor=dict(features=16), encoder=CONFORMER, vocab_size=97, enc_output_dim=48,
        transf_decoder=dict(num_layers=2, hidden_size=48, num_attention_heads=2, inner_size=64))
    return load("canary").Model(config)


def canary_forward(model, core, mel, tokens):
    encoded, lengths, mask = model._encode_audio(mel)
    logits, _ = model.decoder(tokens, encoded, encoder_mask=mask)
    return logits, encoded, lengths


def canary_step(model, encoded, token, cache, position):
    logits, cache = model.decoder(token, *encoded, cache=cache, start_pos=position)
    return logits[:, -1], cache


def granite5_make(load):
    # Block attention over 8 frames with relative positions, the first block
    # subsampling by 2, a mid-network CTC injection; padded frames masked.
    config = load("config").ModelConfig(vocab_size=31, encoder_config=dict(
        vocab_size=31, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, num_mel_bins=4, head_dim=16, max_position_embeddings=16, context_size=8,
        conv_kernel_size=5, subsample_layers=[0]))
    return load("granite_speech5").Model(config)


def padding_mask(frames, valid):
    return lambda rng: (np.arange(frames) < valid)[None].astype(np.int32)


def cohere_make(load):
    # From the waveform: its own STFT log-mel front end (with its seeded
    # dither), a FastConformer, and a Transformer decoder with a KV cache.
    config = load("config").ModelConfig(
        vocab_size=97, preprocessor=dict(features=16),
        encoder=dict(CONFORMER, subsampling_factor=8), head=dict(hidden_size=48, num_classes=97),
        transf_decoder=dict(config_dict=dict(hidden_size=48, inner_size=64, num_attention_heads=2, num_layers=2,
                                             max_sequence_length=64)))
    return load("cohere_asr").Model(config)


def cohere_forward(model, core, audio, ids):
    """_encode_waveforms' steps without its async_eval, which MLX refuses
    inside grad: front end, encoder, projection to the decoder's width."""
    mel, lengths = model.audio_frontend([audio])
    encoded, lengths = model.encoder(mel, lengths)
    encoded = model.encoder_decoder_proj(encoded)
    hidden, _ = model.transf_decoder(ids, encoded)
    return model.log_softmax(hidden), encoded, mel, lengths


def cohere_step(model, encoded, token, cache, position):
    hidden, cache = model.transf_decoder(token, *encoded, cache=cache, start_pos=position)
    return model.log_softmax.mlp.layer0(hidden[:, -1]), cache


def fireredasr_make(load):
    cfg = load("config")
    config = cfg.ModelConfig(idim=16, odim=53, d_model=32,
                             encoder=cfg.EncoderConfig(n_layers=2, n_head=2, d_model=32, kernel_size=5),
                             decoder=cfg.DecoderConfig(n_layers=2, n_head=2, d_model=32, pe_maxlen=64))
    return load("fireredasr2").FireRedASR2(config)


def fireredasr_decode(model, core, xs, pick, steps, load):
    """The model's own beam search (3 beams, `steps` tokens; its decoder
    caches each layer's output): the best sequence and its confidences."""
    return [model.decoder.beam_search(model.encoder(xs[0]), beam_size=3, max_len=steps)[::-1]]


def granite_nar_make(load):
    # Non-autoregressive: a Conformer with CTC heads (one mid-network
    # injection, posterior-weighted pooling), a Q-Former over two of its
    # layers, and a bidirectional Granite editor over [audio | hypothesis].
    cfg = load("config")
    encoder = cfg.EncoderConfig(
        num_layers=2, hidden_dim=32, num_heads=2, dim_head=16, input_dim=16, output_dim=11, bpe_output_dim=31,
        bpe_pooling_window=4, conv_kernel_size=5, conv_expansion_factor=2, feedforward_mult=2, max_pos_emb=16,
        context_size=8, self_conditioning_layer=1, blank_token_id=0, dropout=0.0, pred_dropout=0.0,
        initializer_range=0.02)
    projector = cfg.ProjectorConfig(
        num_layers=1, num_encoder_layers=2, hidden_size=32, num_heads=2, block_size=10, downsample_rate=5,
        encoder_dim=32, llm_dim=48, mlp_ratio=2, mlp_bias=True, attn_bias=True, dropout_prob=0.0, layernorm_eps=1e-5)
    text = cfg.TextConfig(
        hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
        vocab_size=31, max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=True,
        attention_multiplier=0.2, embedding_multiplier=12.0, logits_scaling=8.0, residual_multiplier=0.22,
        bos_token_id=1, eos_token_id=2, pad_token_id=3)
    return load("granite_speech_nar").Model(cfg.ModelConfig(
        encoder, projector, text, encoder_layer_indices=[1, -1], blank_token_id=0, scale_projected_embeddings=True,
        min_edit_sequence_length=8, tie_word_embeddings=True))


def granite_nar_forward(model, core, feats, ids):
    """The networks of _transcribe_tokens on a given hypothesis (its own
    comes from argmax and CTC collapse, which have no gradient)."""
    encoded = model.encoder(feats)
    audio = model.projector(core.concatenate(encoded.hidden_states_for_projector, axis=-1))
    audio = audio / model.config.text.embedding_multiplier
    embeddings = core.concatenate([audio, model.editor.embed_tokens(ids)], axis=1)
    logits = model.editor(embeddings, core.arange(embeddings.shape[1]), logits_start=audio.shape[1])
    return logits, encoded.char_logits, encoded.bpe_logits, audio


# Speech LLMs: an audio encoder whose frames replace placeholder tokens of
# the prompt, and a language model of mlx-audio's lm package (its KV cache).
TEXT = dict(vocab_size=97, hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1, head_dim=24, rope_theta=10000.0, tie_word_embeddings=False)
AUDIO_TOKEN = 90  # the placeholder id; the prompts' other tokens are below it


def prompt(audio_frames):
    """Token ids: a few text tokens, the audio placeholders, a few more."""
    def make(rng):
        ids = np.concatenate([rng.integers(0, 80, 3), np.full(audio_frames, AUDIO_TOKEN), rng.integers(0, 80, 2)])
        return ids[None].astype(np.int32)
    return make


def lm_decode(prefill, step=lambda model, token, cache: model(token, cache=cache)):
    """Prefill the prompt with its audio into the model's KV cache, then one
    token a step."""
    def decode(model, core, xs, pick, steps, load):
        cache = model.make_cache() if hasattr(model, "make_cache") else [
            load("mlx_audio.lm.models.cache").KVCache() for _ in model.language_model.layers]
        out = []
        for i in range(steps):
            logits = prefill(model, core, xs, cache) if i == 0 else step(model, token, cache)
            out.append(logits[:, -1])
            token = core.array([[pick(i, logits[:, -1])]])
        return out
    return decode


# Qwen3-ASR's encoder: chunks of 16 mel frames, 2 encoder frames each;
# attention in windows of 4 frames.
QWEN3_AUDIO = dict(num_mel_bins=16, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=64, d_model=32,
                   max_source_positions=64, n_window=8, output_dim=48, n_window_infer=32, downsample_hidden_size=8)


def qwen3_asr_make(load):
    config = load("config").ModelConfig(audio_config=QWEN3_AUDIO, text_config=TEXT, audio_token_id=AUDIO_TOKEN)
    return load("qwen3_asr").Qwen3ASRModel(config)


def qwen3_aligner_make(load):
    # The same towers, with a head of 40 timestamp classes for the vocabulary.
    aligner = load("qwen3_forced_aligner")
    config = aligner.ForcedAlignerConfig(audio_config=QWEN3_AUDIO, text_config=TEXT, audio_token_id=AUDIO_TOKEN,
                                         classify_num=40)
    return aligner.ForcedAlignerModel(config)


def qwen2_audio_make(load):
    config = load("config").ModelConfig(
        audio_config=dict(d_model=32, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=64, num_mel_bins=16,
                          max_source_positions=32),
        text_config=dict(TEXT, attention_bias=True), audio_token_id=AUDIO_TOKEN)
    return load("qwen2_audio").Model(config)


def spliced(core, text, audio, ids):
    """Prompt embeddings `text` with the audio frames in place of the
    placeholders, for models whose own splice needs their Hugging Face
    processor or goes through numpy (which the gradient cannot)."""
    first = int(np.argmax(np.array(ids)[0] == AUDIO_TOKEN))
    return core.concatenate([text[:, :first], audio, text[:, first + audio.shape[1]:]], axis=1)


def spliced_llm(embed_tokens, audio_features=lambda model, core, mel: model.get_audio_features(mel)):
    """forward and decode of a model called as model(ids, cache=...,
    input_embeddings=...), the audio it encodes spliced into the prompt."""
    def embeddings(model, core, mel, ids):
        return spliced(core, embed_tokens(model)(ids), audio_features(model, core, mel), ids)

    return dict(forward=lambda m, core, mel, ids: m(ids, input_embeddings=embeddings(m, core, mel, ids)),
                decode=lm_decode(lambda m, core, xs, cache: m(xs[1], cache=cache,
                                                              input_embeddings=embeddings(m, core, *xs))))


def fun_asr_make(load):
    # SenseVoice's SANM encoder, a Transformer adaptor pairing its frames, Qwen3.
    config = load("config").FunASRNanoConfig(
        input_size=24, text_config=TEXT,
        audio_encoder_conf=dict(output_size=32, attention_heads=2, linear_units=64, num_blocks=2, tp_blocks=1,
                                kernel_size=5),
        audio_adaptor_conf=dict(downsample_rate=2, ffn_dim=64, llm_dim=48, encoder_dim=32, n_layer=1,
                                attention_heads=2))
    return load("fun_asr_nano").FunASRNano(config)


def fun_asr_audio(model, core, feats):
    lengths = core.array([feats.shape[1]])
    return model.audio_adaptor(*model.audio_encoder(feats, lengths))[0]


def higgs_make(load):
    # A Whisper-style encoder pooled by 2, then a strided depthwise
    # convolution: 8 mel frames per audio token.
    config = load("config").ModelConfig(
        audio_encoder_config=dict(num_mel_bins=16, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=64,
                                  d_model=32, max_source_positions=32),
        text_config=TEXT, audio_in_token_idx=AUDIO_TOKEN)
    return load("higgs_audio_3").Model(config)


def moss_music_make(load):
    # Mel chunks of 16 frames (the last one shorter: padding masks), two
    # chunks an encoder batch; both encoder layers' states are injected
    # ("deepstack") into the first two language-model layers.
    config = load("config").ModelConfig(
        audio_config=dict(d_model=32, output_dim=24, num_mel_bins=128, encoder_layers=2, encoder_attention_heads=2,
                          encoder_ffn_dim=64, downsample_hidden_size=4, max_source_positions=64, n_window=8,
                          conv_chunksize=2, deepstack_encoder_layer_indexes=[0, 1]),
        language_config=TEXT, adapter_hidden_size=32, deepstack_num_inject_layers=2, audio_token_id=AUDIO_TOKEN)
    return load("moss_music").Model(config)


def moss_music_prompt(model, core, mel, ids):
    """The model's own splice, from what its processor hands it."""
    processed = types.SimpleNamespace(input_ids=ids[0], audio_input_mask=ids[0] == AUDIO_TOKEN, audio_data=mel,
                                      audio_data_seqlens=core.array([mel.shape[-1]]))
    _, embeddings, deepstack, _ = model._build_prompt_embeddings(processed)
    return embeddings, deepstack


def moss_diarize_make(load):
    # A Whisper encoder over two chunks of one recording (4 and 3 audio
    # tokens of 4 frames each), merged in order into the prompt.
    config = load("config").ModelConfig(
        audio_config=dict(num_mel_bins=16, d_model=32, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=64,
                          max_source_positions=16),
        text_config=TEXT, audio_token_id=AUDIO_TOKEN, audio_merge_size=4, tie_word_embeddings=False)
    return load("moss_transcribe_diarize").Model(config)


def moss_diarize_call(model, core, mel, ids, cache=None):
    return model(ids, input_features=mel, audio_feature_lengths=core.array([4, 3]),
                 audio_chunk_mapping=core.array([0, 0]), cache=cache)


def ming_make(load):
    # A Whisper-style encoder, and a Bailing-MoE-V3 language model: a Kimi
    # delta-attention layer then a latent (MLA) attention layer, each with
    # a mixture of 8 experts (2 a token, grouped routing) and a shared one.
    text = dict(TEXT, num_key_value_heads=2, layer_group_size=2, q_lora_rank=16, kv_lora_rank=16, qk_nope_head_dim=16,
                qk_rope_head_dim=8, v_head_dim=16, num_experts=8, num_shared_experts=1, num_experts_per_tok=2,
                moe_intermediate_size=16, moe_shared_expert_intermediate_size=16, n_group=2, topk_group=1,
                max_position_embeddings=256)
    audio = dict(n_mels=16, n_audio_ctx=16, n_audio_state=32, n_audio_head=2, n_audio_layer=2, whisper_chunk_size=32)
    return load("ming_v3_asr").Model(load("config").ModelConfig(text_config=text, audio_config=audio,
                                                                  audio_token_id=AUDIO_TOKEN))


def ming_prompt(model, mel, ids):
    """The model's own splice (its encoder takes frames x mel bins)."""
    return model.inject_audio(ids[0], model.encode_audio(mel[0]))[1]


def ming_forward(model, core, mel, ids):
    """The audio embeddings first: real MLX has no gradient through the
    experts' routing (a gather by argpartition indices), so the gradient is
    taken through the encoder and its projector only."""
    audio = model.encode_audio(mel[0])
    return audio, model(inputs_embeds=model.inject_audio(ids[0], audio)[1])


def voxtral_make(load):
    # 4 encoder frames per audio token (intermediate_size = 4 x d_model).
    config = load("config").ModelConfig(
        audio_config=dict(d_model=32, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=64, num_mel_bins=16,
                          max_source_positions=16, intermediate_size=128),
        text_config=dict(TEXT, max_position_embeddings=256), audio_token_id=AUDIO_TOKEN)
    return load("voxtral").Model(config)


def glmasr_make(load):
    # A Whisper encoder with rotary attention; 4 of its frames per audio token.
    config = load("config").ModelConfig(
        whisper_config=dict(d_model=32, encoder_attention_heads=2, encoder_ffn_dim=64, encoder_layers=2,
                            num_mel_bins=16, max_source_positions=16),
        lm_config=dict(TEXT, max_position_embeddings=256), merge_factor=4, use_rope=True)
    return load("glmasr").Model(config)


def glmasr_call(model, mel, ids, cache=None):
    """The model's own splice: the audio frames from the prompt's first
    placeholder on."""
    first = int(np.argmax(np.array(ids)[0] == AUDIO_TOKEN))
    return model(ids, audios=mel, audio_offsets=[[first]], audio_length=[[4]], cache=cache)


def granite_make(plus):
    def make(load):
        # Block attention over 8 frames with relative positions (20 frames:
        # a partial last block), a mid-network CTC injection, and a Q-Former
        # projector of 2 queries per 10 frames; the plus variant concatenates
        # the first block's output onto the last.
        config = load("config").ModelConfig(
            encoder_config=dict(input_dim=16, num_layers=2, hidden_dim=32, feedforward_mult=2, num_heads=2, dim_head=16,
                                output_dim=11, context_size=8, max_pos_emb=16, conv_kernel_size=5,
                                cat_hidden_layers=[1] if plus else None),
            projector_config=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                                  encoder_hidden_size=64 if plus else 32),
            text_config=TEXT, audio_token_index=AUDIO_TOKEN, downsample_rate=5, window_size=10)
        return load("granite_speech").Model(config)
    return make


def vibevoice_make(load):
    # From the 24 kHz waveform: acoustic and semantic tokenizer encoders
    # (causal strided convolutions, depthwise-convolution blocks), 4 samples
    # a frame, whose features are summed in place of the placeholders.
    config = load("config")
    tokenizer = dict(encoder_n_filters=8, encoder_ratios=[2, 2], encoder_depths="1-1-1")
    return load("vibevoice_asr").Model(config.ModelConfig(
        acoustic_tokenizer_config=config.AcousticTokenizerConfig(**tokenizer, vae_dim=16),
        semantic_tokenizer_config=config.SemanticTokenizerConfig(**tokenizer, vae_dim=12),
        decoder_config=config.Qwen2Config(**{k: v for k, v in TEXT.items() if k != "head_dim"},
                                          layer_types=["full_attention"] * 2, max_window_layers=2),
        acoustic_vae_dim=16, semantic_vae_dim=12))


def vibevoice_call(model, core, audio, ids, cache=None):
    return model(ids, speech_tensors=audio, acoustic_input_mask=ids == AUDIO_TOKEN, cache=cache)


def voxtral_realtime_make(load):
    # Causal encoder over 128 mel bins (fixed by the file) with a sliding
    # window of 12 frames: the chunked path through RotatingKVCache. A decoder
    # as wide as the file's adapter (3072, fixed) but of one layer, with
    # adaptive norms and a 10-token sliding window that decoding wraps (a
    # prompt may fill at most half of it: the file's prefill mask is built
    # after its cache update).
    config = load("config").ModelConfig(
        encoder_args=dict(dim=32, n_layers=2, n_heads=2, head_dim=16, hidden_dim=64, n_kv_heads=1, sliding_window=12),
        decoder=dict(dim=3072, n_layers=1, n_heads=2, n_kv_heads=1, head_dim=16, hidden_dim=32, vocab_size=97,
                     sliding_window=10, ada_rms_norm_t_cond_dim=8))
    return load("voxtral_realtime").Model(config)


def voxtral_realtime_prompt(model, mel, ids, length=5):
    """Each position's input is its audio frame plus its token, as streamed."""
    model._ensure_ada_scales()  # from the loaded weights
    audio = model.encoder(mel)
    return audio, audio[:length] + model.decoder.embed_tokens(ids[0, :length])


def voxtral_realtime_forward(model, core, mel, ids):
    audio, prompt = voxtral_realtime_prompt(model, mel, ids)
    hidden, _ = model.decoder.forward(prompt)
    return model.decoder.logits(hidden), audio


def voxtral_realtime_decode(model, core, xs, pick, steps, load):
    audio, prompt = voxtral_realtime_prompt(model, *xs)
    hidden, cache = model.decoder.forward(prompt)
    out = [model.decoder.logits(hidden[-1])]
    for position in range(len(prompt), len(prompt) + steps - 1):
        token = pick(len(out) - 1, out[-1])
        hidden, cache = model.decoder.forward((audio[position] + model.decoder.embed_token(token))[None],
                                              start_pos=position, cache=cache)
        out.append(model.decoder.logits(hidden[0]))
    pick(len(out) - 1, out[-1])
    return out


def tokens(low, high, n):
    return lambda rng: rng.integers(low, high, (1, n)).astype(np.int32)


MODELS = {
    "whisper": dict(folder="whisper", make=whisper_make, inputs=[features(1, 24, 16), tokens(0, 97, 3)],
                    forward=lambda m, core, mel, tok: m(mel, tok),
                    decode=stepwise(lambda m, xs: (m.encoder(xs[0]), xs[1], None), whisper_step)),
    "moonshine": dict(folder="moonshine", make=moonshine_make, inputs=[features(1, 4000, scale=0.3), tokens(0, 97, 3)],
                      forward=moonshine_forward,
                      decode=stepwise(lambda m, xs: (m.encoder(xs[0]), xs[1], None), moonshine_step)),
    "wav2vec2": dict(folder="wav2vec", make=wav2vec_make, inputs=[features(1, 1600, scale=0.3)],
                     forward=lambda m, core, audio: m(audio)),
    "mms": dict(folder="mms", make=mms_make, inputs=[features(1, 1600, scale=0.3)],
                forward=lambda m, core, audio: m(audio)),
    "sensevoice": dict(folder="sensevoice", make=sensevoice_make, inputs=[features(1, 20, 24)],
                       forward=lambda m, core, feats: m(feats)),
    "lasr_ctc": dict(folder="lasr_ctc", make=lasr_make, inputs=[features(1, 40, 16)],
                     forward=lambda m, core, feats: m(feats)),
    "parakeet_tdt": dict(folder="parakeet", make=parakeet_make("tdt"), inputs=[features(1, 40, 16), tokens(0, 23, 5)],
                         forward=transducer_forward, decode=transducer_decode),
    "parakeet_rnnt": dict(folder="parakeet", make=parakeet_make("rnnt"), inputs=[features(1, 40, 16), tokens(0, 23, 5)],
                          forward=transducer_forward, decode=transducer_decode),
    "parakeet_ctc": dict(folder="parakeet", make=parakeet_make("ctc"), inputs=[features(1, 40, 16)],
                         forward=ctc_forward),
    "granite_speech5_ctc": dict(folder="granite_speech5_ctc", make=granite5_make,
                                inputs=[features(1, 22, 16), padding_mask(22, 19)],
                                forward=lambda m, core, feats, mask: m(feats, mask)),
    "cohere_asr": dict(folder="cohere_asr", make=cohere_make, inputs=[features(9600, scale=0.3), tokens(0, 97, 4)],
                       forward=cohere_forward,
                       decode=stepwise(lambda m, xs: (m._encode_waveforms([xs[0]])[::2], xs[1], m.make_cache()),
                                       cohere_step)),
    "fireredasr2": dict(folder="fireredasr2", make=fireredasr_make, inputs=[features(1, 40, 16)], tables=(".pe",),
                        forward=lambda m, core, feats: m.encoder(feats), decode=fireredasr_decode),
    "granite_speech_nar": dict(folder="granite_speech_nar", make=granite_nar_make,
                               inputs=[features(1, 20, 16), tokens(0, 31, 9)], forward=granite_nar_forward,
                               # its whole transcription: one pass, CTC collapses and editing slots
                               decode=lambda model, core, xs, pick, steps, load: [model._transcribe_tokens(xs[0])]),
    "nemotron_asr": dict(folder="nemotron_asr", make=nemotron_make, inputs=[features(1, 40, 16), tokens(0, 23, 5)],
                         forward=nemotron_forward,
                         decode=lambda *args: transducer_decode(*args, encode=nemotron_streamed)),
    "canary": dict(folder="canary", make=canary_make, inputs=[features(1, 40, 16), tokens(0, 97, 4)],
                   forward=canary_forward,
                   decode=stepwise(lambda m, xs: (m._encode_audio(xs[0])[::2], xs[1], None), canary_step)),
    "qwen3_asr": dict(folder="qwen3_asr", make=qwen3_asr_make, inputs=[features(1, 16, 48), prompt(6)],
                      forward=lambda m, core, mel, ids: m(ids, input_features=mel),
                      decode=lm_decode(lambda m, core, xs, cache: m(xs[1], input_features=xs[0], cache=cache))),
    "qwen3_forced_aligner": dict(folder="qwen3_asr", make=qwen3_aligner_make, inputs=[features(1, 16, 48), prompt(6)],
                                 forward=lambda m, core, mel, ids: m(ids, input_features=mel)),
    "qwen2_audio": dict(folder="qwen2_audio", make=qwen2_audio_make, inputs=[features(1, 16, 32), prompt(8)],
                        **spliced_llm(lambda m: m.language_model.model.embed_tokens)),
    "moss_music": dict(folder="moss_music", make=moss_music_make, inputs=[features(1, 128, 40), prompt(5)],
                       forward=lambda m, core, mel, ids: m(ids, None, *moss_music_prompt(m, core, mel, ids)),
                       decode=lm_decode(lambda m, core, xs, cache: m(xs[1], cache, *moss_music_prompt(m, core, *xs)))),
    "fun_asr_nano": dict(folder="fun_asr_nano", make=fun_asr_make, inputs=[features(1, 12, 24), prompt(6)],
                         **spliced_llm(lambda m: m.llm.model.embed_tokens, fun_asr_audio)),
    "moss_transcribe_diarize": dict(folder="moss_transcribe_diarize", make=moss_diarize_make,
                                    inputs=[features(2, 32, 16), prompt(7)], forward=moss_diarize_call,
                                    decode=lm_decode(lambda m, core, xs, c: moss_diarize_call(m, core, *xs, c))),
    "ming_v3_asr": dict(folder="ming_v3_asr", make=ming_make, inputs=[features(1, 32, 16), prompt(8)],
                        forward=ming_forward,
                        decode=lm_decode(lambda m, core, xs, cache: m(cache=cache, inputs_embeds=ming_prompt(m, *xs)))),
    "higgs_audio_3": dict(folder="higgs_audio_3", make=higgs_make, inputs=[features(1, 16, 32), prompt(4)],
                          **spliced_llm(lambda m: m.model.embed_tokens)),
    "voxtral": dict(folder="voxtral", make=voxtral_make, inputs=[features(1, 32, 16), prompt(4)],
                    forward=lambda m, core, mel, ids: m(ids, input_features=mel),
                    decode=lm_decode(lambda m, core, xs, cache: m(xs[1], input_features=xs[0], cache=cache))),
    "voxtral_realtime": dict(folder="voxtral_realtime", make=voxtral_realtime_make,
                             inputs=[features(128, 96), tokens(0, 97, 5)], steps=8,
                             forward=voxtral_realtime_forward, decode=voxtral_realtime_decode),
    "glmasr": dict(folder="glmasr", make=glmasr_make, inputs=[features(1, 32, 16), prompt(4)],
                   forward=lambda m, core, mel, ids: glmasr_call(m, mel, ids),
                   decode=lm_decode(lambda m, core, xs, cache: glmasr_call(m, *xs, cache))),
    "vibevoice_asr": dict(folder="vibevoice_asr", make=vibevoice_make, inputs=[features(1, 32, scale=0.3), prompt(8)],
                          forward=vibevoice_call,
                          decode=lm_decode(lambda m, core, xs, cache: vibevoice_call(m, core, *xs, cache))),
    **{name: dict(folder="granite_speech", make=granite_make(plus), inputs=[features(1, 20, 16), prompt(4)],
                  **spliced_llm(lambda m: m.language_model.model.embed_tokens))
       for name, plus in [("granite_speech", False), ("granite_speech_plus", True)]},
}


# ---- the checks --------------------------------------------------------------


@pytest.fixture
def models(rng, monkeypatch, request):
    """The spec, and (model, load) of MLX and of Alloy: the models with the
    same fresh random weights."""
    for package, names in STAND_INS.items():
        if importlib.util.find_spec(package) is None:
            monkeypatch.setitem(sys.modules, package, types.SimpleNamespace(**names))
    spec = MODELS[request.param]
    mlx_model, mlx_load = build("mlx", f"{STT}.{spec['folder']}", spec["make"])
    # Fixed sinusoid tables that a file keeps among its parameters keep the
    # file's own values: random ones of 1/sqrt(fan-in) would hide positions.
    own = dict(tree_flatten(mlx_model.parameters()))
    weights = [(k, own[k] if k.endswith(spec.get("tables", ())) else w) for k, w in random_weights(rng, mlx_model)]
    assert weights, f"{request.param}: the model has no parameters"
    mlx_model.load_weights(weights, strict=True)
    alloy_model, alloy_load = build("alloy", f"{STT}.{spec['folder']}", spec["make"])
    alloy_model.load_weights([(k, as_alloy(v)) for k, v in weights], strict=True)
    return spec, (mlx_model, mlx_load), (alloy_model, alloy_load)


@pytest.mark.parametrize("models", sorted(MODELS), indirect=True)
def test_forward_and_gradient_match_mlx(rng, models):
    spec, (mlx_model, _), (alloy_model, _) = models
    mlx_xs, alloy_xs = both([make(rng) for make in spec["inputs"]])
    want = check_outputs(spec["forward"], mlx_model, alloy_model, mlx_xs, alloy_xs)
    cot = rng.standard_normal(want[0].shape).astype(np.float32)
    check_input_gradient(spec["forward"], mlx_model, alloy_model, mlx_xs, alloy_xs, cot)


DECODERS = sorted(name for name, spec in MODELS.items() if "decode" in spec)


@pytest.mark.parametrize("models", DECODERS, indirect=True)
def test_cached_decoding_matches_mlx(rng, models):
    spec, *built = models
    want, got, picks = decode_both(rng, spec, built)
    assert want and len(want) == len(got), f"{len(got)} steps, MLX {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        # A step gives its logits, or its logits and then its new state.
        g, w = arrays_in(g, ax), arrays_in(w, mx)
        assert len(g) == len(w), f"step {i}: {len(g)} arrays, MLX {len(w)}"
        for j, (gj, wj) in enumerate(zip(g, w)):
            what = f"step {i} " + ("logits" if j == 0 else f"array {j}")
            if np.issubdtype(np.array(wj).dtype, np.integer):
                assert wj.size, f"{what}: MLX gave no tokens"
                np.testing.assert_array_equal(np.array(gj), np.array(wj), err_msg=what)
            else:
                close(gj, wj, what)
        picks.check_step(i, w[0])
