"""Public MLX code that calls Metal kernels, run unchanged on Alloy.

Each test loads a file of an installed package (mlx-lm, mlx-audio) from its
installed source with only its imports pointed at Alloy (see real_mlx_code.py),
then runs the same entry point three times on the same fresh random inputs:

- on Alloy, with the file choosing its `mx.fast.metal_kernel` path;
- on Alloy, with the file choosing its own pure-ops fallback;
- on real MLX (CPU, no Metal), the unmodified file, which takes its fallback.

The kernel path must agree with both fallbacks within float tolerance (the
kernels sum in a different order than the ops do, so they agree to rounding).
"""
import sys
import types

import numpy as np
import pytest

from real_mlx_code import ATOL, RTOL, assert_agree, load, normal, run_three, to_numpy

import alloy.core as ax

# --- mlx_lm/models/gated_delta.py: Qwen3-Next gated delta rule -------------

GATED_DELTA_CASES = {
    # Dk == 128, scalar gate, no mask: the packed kernel gated_delta_step_packed_btree.
    "packed": dict(Dk=128, vector_gate=False, masked=False),
    # Dk == 64: the generic simd_sum kernel gated_delta_step.
    "generic": dict(Dk=64, vector_gate=False, masked=False),
    "masked": dict(Dk=64, vector_gate=False, masked=True),  # gated_delta_step_mask
    "vector_gate": dict(Dk=64, vector_gate=True, masked=False),  # gated_delta_step_vec
    "vector_gate_masked": dict(Dk=32, vector_gate=True, masked=True),  # ..._vec_mask
}


# mlx-lm's file, and the copy mlx-audio vendors from mlx-lm 0.31.3 (older kernels).
GATED_DELTA_FILES = ["mlx_lm.models.gated_delta", "mlx_audio.lm.models.gated_delta"]
SSM_FILES = ["mlx_lm.models.ssm", "mlx_audio.lm.models.ssm"]


@pytest.mark.parametrize("module", GATED_DELTA_FILES)
@pytest.mark.parametrize("case", list(GATED_DELTA_CASES))
def test_gated_delta_update(rng, case, module):
    Dk = GATED_DELTA_CASES[case]["Dk"]
    vector_gate = GATED_DELTA_CASES[case]["vector_gate"]
    masked = GATED_DELTA_CASES[case]["masked"]
    B, T, Hk, Hv, Dv = 2, 5, 2, 4, 16
    gate = (B, T, Hv, Dk) if vector_gate else (B, T, Hv)
    inputs = [
        normal(rng, B, T, Hk, Dk, scale=Dk**-0.5),  # q (as normalize_qk leaves it)
        normal(rng, B, T, Hk, Dk, scale=Dk**-0.5),  # k
        normal(rng, B, T, Hv, Dv),  # v
        normal(rng, *gate),  # a
        normal(rng, B, T, Hv),  # b
        normal(rng, *gate[2:], scale=0.5),  # A_log
        normal(rng, *gate[2:], scale=0.5),  # dt_bias
        normal(rng, B, Hv, Dv, Dk),  # state
    ]
    mask = rng.random((B, T)) < 0.7 if masked else None
    if masked:
        mask[:, 0] = True  # at least one step taken per sequence
        inputs.append(mask)

    def call(m, xs):
        return m.gated_delta_update(*xs)

    results = run_three(module, call, inputs)
    # Where the mask is off, the kernel writes y = 0 while the file's ops
    # fallback still returns the step's output (it only keeps the old state),
    # so y is compared where the mask is on; the state everywhere.
    select = {"y": mask} if masked else None
    assert_agree(results, ["y", "state"], select=select)


def test_gated_delta_packed_matches_its_comparators(rng):
    """The file's own contract: the packed kernel is bitwise equal to the
    explicit-tree comparator (same butterfly of simd_shuffle_xor), and agrees
    with the unpacked simd_sum kernel to rounding."""
    B, T, Hk, Hv, Dk, Dv = 1, 4, 1, 2, 128, 16
    m = load("mlx_lm.models.gated_delta", "alloy", kernels=True)
    q = ax.array(normal(rng, B, T, Hk, Dk, scale=Dk**-0.5))
    k = ax.array(normal(rng, B, T, Hk, Dk, scale=Dk**-0.5))
    v = ax.array(normal(rng, B, T, Hv, Dv))
    g = ax.array(rng.uniform(0.5, 1.0, (B, T, Hv)).astype(np.float32))
    beta = ax.array(rng.uniform(0.0, 1.0, (B, T, Hv)).astype(np.float32))
    state = ax.array(normal(rng, B, Hv, Dv, Dk))
    packed = to_numpy(m.gated_delta_kernel(q, k, v, g, beta, state))
    xtree = to_numpy(m.gated_delta_kernel_xtree(q, k, v, g, beta, state))
    unpacked = to_numpy(m.gated_delta_kernel_unpacked(q, k, v, g, beta, state))
    for name, p, x, u in zip(["y", "state"], packed, xtree, unpacked):
        np.testing.assert_array_equal(p, x, err_msg=f"{name}: packed vs xtree")
        np.testing.assert_allclose(p, u, rtol=RTOL, atol=ATOL, err_msg=f"{name}: packed vs unpacked")


# --- mlx_lm/models/ssm.py: Mamba-2 SSM decode step (ssm_kernel) -------------


@pytest.mark.parametrize("module", SSM_FILES)
def test_ssm_update(rng, module):
    n, h, d, g, ds = 2, 4, 16, 2, 64
    inputs = [
        normal(rng, n, 1, h, d),  # hidden_states
        normal(rng, h, scale=0.5),  # A_log
        normal(rng, n, 1, g, ds),  # B
        normal(rng, n, 1, g, ds),  # C
        normal(rng, h),  # D
        normal(rng, n, 1, h),  # dt
        normal(rng, h, scale=0.5),  # dt_bias
        normal(rng, n, h, d, ds),  # state
    ]

    def call(m, xs):
        # One token with a state: the kernel's case (ssm_attn otherwise).
        return m.ssm_update(*xs)

    assert_agree(run_three(module, call, inputs), ["y", "state"])


# --- mlx_lm/models/rwkv7.py: RWKV-7 time mixing (wkv7_kernel) -------------

RWKV_ARGS = dict(
    model_type="rwkv7", vocab_size=16, hidden_size=64, intermediate_size=128,
    norm_eps=1e-5, head_dim=32, num_hidden_layers=2, a_low_rank_dim=8,
    v_low_rank_dim=8, gate_low_rank_dim=8, decay_low_rank_dim=8,
)


# mlx-lm's file, and mlx-vlm's RWKV-7 language model (its own copy; the
# layer's arguments class is ModelConfig there).
@pytest.mark.parametrize("module,args_class", [("mlx_lm.models.rwkv7", "ModelArgs"),
                                               ("mlx_vlm.models.rwkv7.language", "ModelConfig")])
def test_rwkv7_wkv7(rng, module, args_class):
    """Rwkv7TimeMixing._wkv7, the layer's own dispatch between wkv7_kernel and
    its _wkv7_step_ops loop, on a layer built from the file's ModelArgs.
    (The layer's full __call__ stops on Alloy at l2_norm's mx.linalg.norm:
    alloy.core has no linalg namespace.)"""
    B, T = 2, 4
    H, D = RWKV_ARGS["hidden_size"] // RWKV_ARGS["head_dim"], RWKV_ARGS["head_dim"]
    r, k, v = (normal(rng, B, T, H, D, scale=D**-0.5) for _ in range(3))
    w = rng.uniform(0.6, 1.0, (B, T, H, D)).astype(np.float32)  # decays, as exp(-0.6 * sigmoid)
    kk = normal(rng, B, T, H, D)
    kk /= np.linalg.norm(kk, axis=-1, keepdims=True)  # a = -kk, b = kk * iclr, kk of unit norm
    iclr = rng.uniform(0.0, 1.0, (B, T, H, D)).astype(np.float32)
    state = normal(rng, B, H, D, D, scale=0.5)
    inputs = [r, w, k, v, -kk, kk * iclr, state]

    def call(m, xs):
        layer = m.Rwkv7TimeMixing(getattr(m, args_class)(**RWKV_ARGS), layer_idx=1)
        y, state = layer._wkv7(*xs)
        # The ops loop leaves y as (B, T, H, D, 1); __call__ reshapes it to
        # (B, T, H, D), the kernel's shape, before use.
        return y.reshape(B, T, H, D), state

    assert_agree(run_three(module, call, inputs), ["y", "state"], rtol=5e-4, atol=5e-5)


# --- mlx_lm/models/deepseek_v41.py: Sinkhorn normalisation (one thread a matrix)


@pytest.mark.parametrize("hc,iters", [(4, 3), (5, 1)])
def test_deepseek_v41_sinkhorn(rng, hc, iters):
    """_sinkhorn's kernel (the whole loop in one launch) against its ops loop."""
    comb = rng.uniform(0.05, 1.0, (3, 7, hc, hc)).astype(np.float32)  # 21 matrices: a partial threadgroup
    eps = np.array([1e-6], np.float32)

    def call(m, xs):
        return [m._sinkhorn(xs[0], iters=iters, eps=xs[1])]

    assert_agree(run_three("mlx_lm.models.deepseek_v41", call, [comb, eps]), ["comb"])


# --- mlx_lm/models/kimi_k3.py: attention-residual mix (attnres_mix) --------


@pytest.mark.parametrize("blocks,D", [(3, 200), (1, 1024)])
def test_kimi_k3_attn_res_mix(rng, blocks, D):
    """_attn_res_mix over earlier blocks' outputs: the kernel (512 threads a
    row, a threadgroup reduction, softmax in thread 0) against the file's
    compiled ops combine."""
    B, L = 2, 3
    raws = [normal(rng, B, L, D) for _ in range(blocks)]
    partial = normal(rng, B, L, D)
    w_eff = normal(rng, D, scale=D**-0.5)

    def call(m, xs):
        held = m.ResidualBlocks(1e-6)
        for r in xs[:blocks]:
            held.append(r)
        return [m._attn_res_mix(held, xs[blocks], xs[blocks + 1], 1e-6)]

    assert_agree(run_three("mlx_lm.models.kimi_k3", call, raws + [partial, w_eff]), ["out"])


# --- mlx_lm/tuner/losses.py: KL / JS divergence kernels with custom vjp ----


def _losses_utils(core):
    # losses.py imports can_run_metal from mlx_lm/utils.py, which imports
    # transformers and more; this stands in for that one function, asking the
    # module's own `mx` the same question the original asks.
    stub = types.SimpleNamespace(
        can_run_metal=lambda: core.default_device() == core.gpu and core.metal.is_available()
    )
    return {"mlx_lm.utils": stub}


@pytest.mark.parametrize("loss", ["kl_div_loss", "js_div_loss"])
def test_tuner_divergence_losses(rng, loss):
    # V = 5000: one full block of 4096 per threadgroup and a masked tail.
    rows, V = 3, 5000
    logits_q = normal(rng, rows, V, scale=2.0)
    logits_p = normal(rng, rows, V, scale=2.0)

    def call(m, xs):
        core = m.mx
        fn = getattr(m, loss)
        value = fn(*xs)
        # The gradient through the file's custom_function vjp (kernel path)
        # or through autodiff of its ops (fallback).
        grad = core.grad(lambda q, p: fn(q, p).sum())(*xs)
        return value, grad

    results = run_three("mlx_lm.tuner.losses", call, [logits_q, logits_p], _losses_utils)
    assert_agree(results, ["loss", "grad_q"], rtol=1e-4, atol=1e-6)


# --- mlx_audio/sts/models/mossformer2_se/depthwise_conv1d_kernel.py ----------


@pytest.mark.parametrize("kernel_size", [3, 7])
def test_mossformer2_depthwise_conv1d(rng, kernel_size):
    B, L, C = 2, 37, 24
    x = normal(rng, B, L, C)
    w = normal(rng, C, kernel_size, 1)

    def call(m, xs):
        return [m.depthwise_conv1d(*xs, padding=(kernel_size - 1) // 2, groups=C)]

    results = run_three("mlx_audio.sts.models.mossformer2_se.depthwise_conv1d_kernel", call, [x, w])
    assert_agree(results, ["out"])


# --- mlx_audio/sts/models/mossformer2_se/flash_attention_kernels.py ---------


def test_mossformer2_relu_squared_attention(rng):
    """simple_kernel (the fused ReLU^2 kernel between two matmuls) against the
    file's standard ops, which it falls back to without Metal."""
    B, G, L, D = 2, 3, 19, 16  # 2 * 3 * 19 * 19 scores: a partial threadgroup
    q, k, v = (normal(rng, B, G, L, D) for _ in range(3))

    def call(m, xs):
        return [m.FlashAttentionImplementations.simple_kernel(*xs)]

    results = run_three("mlx_audio.sts.models.mossformer2_se.flash_attention_kernels", call, [q, k, v])
    assert_agree(results, ["out"])


def test_mossformer2_fused_qk_relu_squared(rng):
    """fused_kernel (Q K^T, scale and ReLU^2 in one kernel of 16 x 16 groups
    over a grid that is not a multiple of them) has no fallback: against
    float64 numpy."""
    B, G, L, D = 2, 2, 21, 8
    q, k, v = (normal(rng, B, G, L, D) for _ in range(3))
    m = load("mlx_audio.sts.models.mossformer2_se.flash_attention_kernels", "alloy", kernels=True)
    out = np.array(m.FlashAttentionImplementations.fused_kernel(ax.array(q), ax.array(k), ax.array(v)))
    s = np.einsum("bgld,bgmd->bglm", q.astype(np.float64), k) / L
    want = np.maximum(s, 0) ** 2 @ v
    np.testing.assert_allclose(out, want, rtol=RTOL, atol=ATOL)


# --- mlx_audio/stt/models/phonon/packed.py: base-5 code unpacking -----------


def test_phonon_unpack_base5_codes(rng):
    """Ten base-5 symbols per 24-bit payload, unpacked into two planes of
    2-bit codes: the kernel and the file's ops fallback agree bit for bit."""
    out_features, in_features = 5, 160
    groups = (in_features + 9) // 10
    symbols = rng.integers(0, 5, (out_features, groups, 10))
    payload = (symbols * 5 ** np.arange(10)).sum(-1)
    packed = np.stack([(payload >> (8 * i)) & 0xFF for i in range(3)], -1).reshape(out_features, -1).astype(np.uint8)

    def call(m, xs):
        return list(m.unpack_base5_codes(xs[0], in_features))

    results = run_three("mlx_audio.stt.models.phonon.packed", call, [packed])
    assert_agree(results, ["base_q", "residual_q"], rtol=0, atol=0)
    assert results["kernel"][0].dtype == np.uint32


# --- mlx_audio/codec/models/encodec/encodec.py: the LSTM step kernel --------


@pytest.fixture
def no_hub(monkeypatch):
    """encodec.py imports huggingface_hub for its weight download, which these
    tests neither need nor install: a stand-in that refuses to download."""
    def snapshot_download(*args, **kwargs):
        raise RuntimeError("no downloads in these tests")

    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(snapshot_download=snapshot_download))


def test_encodec_lstm(rng, no_hub):
    """EnCodec's LSTM (lstm_custom each step when Metal is there, lstm_fallback
    otherwise) over a sequence of one batch row, from the file's LSTM module
    with random weights."""
    T, In, H = 6, 12, 40
    x = normal(rng, 1, T, In)
    wx, wh, bias = normal(rng, 4 * H, In, scale=0.3), normal(rng, 4 * H, H, scale=0.3), normal(rng, 4 * H)

    def call(m, xs):
        layer = m.LSTM(In, H)
        layer.Wx, layer.Wh, layer.bias = xs[1], xs[2], xs[3]
        return [layer(xs[0])]

    results = run_three("mlx_audio.codec.models.encodec.encodec", call, [x, wx, wh, bias])
    assert_agree(results, ["hidden"])


@pytest.mark.parametrize("checked", [True, False])
def test_encodec_lstm_two_batch_rows_is_reported(rng, no_hub, monkeypatch, checked):
    """The file's kernel counts the batch row twice (elem = b * 4H + y, y over
    all B * H), so with two rows it reads and writes past its arrays, which
    goes unnoticed on Apple GPUs. On Alloy's CPU the call raises naming the kernel:
    bounds-checked, the first access out of bounds; unchecked, the write past
    the hidden state's end (it used to crash the process later)."""
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "1" if checked else "0")
    m = load("mlx_audio.codec.models.encodec.encodec", "alloy", kernels=True)
    T, In, H = 3, 8, 40
    layer = m.LSTM(In, H)
    layer.Wx, layer.Wh = ax.array(normal(rng, 4 * H, In)), ax.array(normal(rng, 4 * H, H))
    kept = normal(rng, 5)
    before = ax.array(kept) * 2
    ax.eval(before)
    want = r"out-of-bounds (read|write)" if checked else r"wrote past the end of output 'hidden_state'"
    # On the CPU (the GPU's writes past a buffer are not caught this way).
    with ax.stream(ax.cpu), pytest.raises(RuntimeError, match=r"kernel 'lstm': " + want):
        ax.eval(layer(ax.array(normal(rng, 2, T, In))))
    np.testing.assert_array_equal(np.array(before + 0), kept * 2)  # earlier arrays intact, new work runs
