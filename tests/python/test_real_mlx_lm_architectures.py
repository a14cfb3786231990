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
the one shared tiny configuration and the settings of its own in
OVERRIDES (tests/pyshared/mlx_lm_tiny_configs.py: layer patterns, nested
text configurations, RoPE or MoE dicts).
The other four: bitnet and muse_spark call Metal kernels whatever the
device (their kernels are tested in test_real_mlx_fused_kernels.py; real
MLX cannot run them here), olmo needs the ai2-olmo package, and
prism_hadamard_qwen35 loads only 2-bit Hadamard-packed checkpoints.
"""
import numpy as np
import pytest
from mlx_lm_tiny_configs import OVERRIDES, TINY, tiny_args
from real_mlx_code import FRAMEWORKS, Loader, as_alloy

import mlx.core as mx
from mlx.utils import tree_flatten

import alloy.core as ax

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


def build(framework, name):
    loader = Loader(FRAMEWORKS[framework], kernels=False)
    module = loader.load("mlx_lm.models." + name)
    cache = loader.load("mlx_lm.models.cache")
    return module.Model(tiny_args(name, module)), cache


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

    # A gradient can jump where an input crosses a kink (gemma3n's
    # activation sparsity cuts each token's units at mean + 1.645 std, and
    # the cutoff's own gradient reaches every unit of the token): a unit
    # within float32 rounding of its cutoff lands on either side, and MLX's
    # float32 can differ from Alloy's by a quarter of the gradient's largest
    # (seed 952429830 with OpenBLAS's Sandybridge kernels). Where Alloy's
    # float32 differs from MLX's, it must then match MLX's float64 run of
    # the same step, which lands on one side too.
    def mlx_float64():
        model, _ = build("mlx", name)
        model.load_weights([(k, v.astype(mx.float64)) for k, v in weights], strict=True)
        with mx.stream(mx.cpu):
            _, grads = train_step(mx, mnn, mopt, model, tokens)
        return {"gradient": dict(tree_flatten(grads)), "updated weight": dict(tree_flatten(model.parameters()))}

    def error(got, want):
        want = np.array(want.astype(mx.float32))
        return np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-6)

    exact = None
    for what, want_tree, got_tree in (("gradient", want_grads, got_grads),
                                      ("updated weight", mlx_model.parameters(), alloy_model.parameters())):
        want, got = dict(tree_flatten(want_tree)), dict(alloy_flatten(got_tree))
        assert want.keys() == got.keys(), f"{name}: {what}s of {sorted(set(want) ^ set(got))} on one side only"
        for k in want:
            g = np.array(got[k].astype(ax.float32))
            err = error(g, want[k])
            if err < 1e-3:
                continue
            try:
                exact = exact or mlx_float64()
            except Exception as e:  # noqa: BLE001 - an op MLX lacks in float64 leaves the first verdict
                raise AssertionError(f"{name}: {what} {k} differs from MLX's by {err:.2e} of its largest; "
                                     f"no float64 arbiter ({type(e).__name__}: {e})") from e
            err64 = error(g, exact[what][k])
            assert err64 < 1e-3, (f"{name}: {what} {k} differs from MLX's by {err:.2e} of its largest, "
                                  f"and from MLX's float64 step by {err64:.2e}")


# mlx-lm's samplers (sample_utils.py, its compiled top-k/top-p/min-p/XTC
# filters and categorical draw, with mx.random.state carried through
# mx.compile): after the same seed, Alloy draws MLX's tokens. The draw
# compares a float32 uniform with a float32 cumulative sum of the weights,
# and the two frameworks sum in different orders (each within a few ulp of
# the exact sum), so a uniform landing within rounding of a category's edge
# can pick the neighbour (about one draw in 10^4). Such a draw is told apart
# from a wrong one by drawing again from float64 logits, where both
# frameworks must agree and pick one of the two float32 tokens; at most one
# draw of a test may be settled that way.
SAMPLERS = [dict(temp=0.7), dict(temp=1.0, top_p=0.9), dict(temp=0.8, min_p=0.05), dict(temp=0.9, top_k=20),
            dict(temp=1.0, xtc_probability=0.5, xtc_threshold=0.05, xtc_special_tokens=[0]),
            dict(temp=0.6, top_p=0.95, top_k=40, min_p=0.02), dict(temp=0.0)]


@pytest.mark.parametrize("settings", SAMPLERS, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()))
def test_sampler_draws_mlx_tokens(rng, settings):
    samplers = {fw: Loader(FRAMEWORKS[fw], kernels=False).load("mlx_lm.sample_utils").make_sampler(**settings)
                for fw in ("mlx", "alloy")}

    def draw(logits, seed, dtype):
        drawn = {}
        for fw, core in (("mlx", mx), ("alloy", ax)):
            core.random.seed(seed)
            logprobs = core.array(logits, dtype=getattr(core, dtype))
            logprobs = logprobs - core.logsumexp(logprobs, axis=-1, keepdims=True)
            drawn[fw] = [samplers[fw](logprobs).item() for _ in range(4)]
        return drawn

    settled_by_rounding = []
    for trial in range(5):
        logits = (rng.standard_normal((1, 500)) * 3).astype(np.float32)
        seed = int(rng.integers(2**31))
        drawn = draw(logits, seed, "float32")
        if drawn["alloy"] == drawn["mlx"]:
            continue
        exact = draw(logits, seed, "float64")
        assert exact["alloy"] == exact["mlx"], f"trial {trial}, seed {seed}: float64 draws differ"
        for i, (got, want, true) in enumerate(zip(drawn["alloy"], drawn["mlx"], exact["mlx"])):
            if got != want:
                assert true in (got, want), f"trial {trial}, seed {seed}, draw {i}: {got} and {want}, exact {true}"
                settled_by_rounding.append((trial, i, got, want))
    assert len(settled_by_rounding) <= 1, f"float32 draws differ from MLX's: {settled_by_rounding}"


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
