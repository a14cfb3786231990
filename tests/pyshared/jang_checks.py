"""jang's Metal kernels (PyPI `jang`, package jang_tools): the checks both
hosts share, Alloy's own path (tests/python/test_real_mlx_jang.py) and
alloy.mlx on real MLX (tests/mlx_plugin/test_jang.py). The files are loaded
unchanged from the installed package with only their imports pointed at the
framework under test (real_mlx_code.py, kernel_path.py; the package's
__init__, which imports its model zoo, never runs). Each kernel is called
through the package's own Python entry point on fresh random inputs and
compared with a float64 numpy reference written from what the code computes,
and where the package has a pure-MLX reference, with that reference run by
real MLX (mlx.core, CPU) and, on Alloy's suite, by Alloy.

- turboquant/hadamard_kernel.py `hadamard_rotate_metal`: its three kernels
  (`hadamard_shuffle_le1024` for dims whose power-of-2 blocks are all <= 1024,
  `hadamard_butterfly` for one block of 2048/4096, `hadamard_multiblock` for
  the rest up to 4096-blocks) against float64 and rotation.py's pure-MLX
  `hadamard_rotate` (signs from rotation.generate_random_signs).
- turboquant/tq_kernel.py `TurboQuantLinear` / `tq_matmul` (`tq_matmul`):
  weights quantized by the package's own linear.tq_quantize_weight; against
  float64 dequantize + matmul and linear.py's ops layer (unpack, codebook,
  norms, inverse Hadamard, matmul) on real MLX (and Alloy).
- turboquant/gather_tq_kernel.py `gather_tq_matmul` (MoE gather, 20 outputs a
  thread, its three index layouts) and fused_gate_up_kernel.py
  `fused_gate_up_matmul` / `fused_gate_up_swiglu_matmul` (with and without
  DSV4's SwiGLU limit): float64. (linear.py's ops MoE layer,
  TurboQuantSwitchLinear, calls mx.unique(x) without the `size` that MLX
  0.32's unique requires, so it runs on neither framework.)
- turboquant/mpp_dense_kernel.py (dequantize to half + Metal 4 tensor_ops
  matmul2d, `JANGTQ_MPP_DENSE=1`) and mpp_nax_kernel.py (cooperative-tensor
  NAX tiles filled by Apple's lane layout, `JANGTQ_MPP_NAX=1`: plain, grouped
  gather, grouped fused gate/up/SwiGLU), the `_STRICT` switches on so a
  failure is raised rather than falling back: float64 with the operands
  rounded as the kernels round them.
- jangh/kernels.py `h32_rows` (Hadamard-32 by SIMD shuffles) and
  `gather_qmv` (JANGTQ v2 decode, 2/3/4/8-bit bitstreams, single and fused
  gate/up/clamped SwiGLU): float64 of format.py's own `dequant_rows`.
- dsv4/indexed_prefill_attention.py `dsv4_heads16_prefill_attention`,
  dsv4/indexed_decode_attention.py `dsv4_indexed_decode_attention` (split-K
  partial + merge) and dsv4/indexer_scores_kernel.py `fused_indexer_scores`
  (simdgroup 8x8 matrices): each public entry runs the package's own
  self-test (its kernel against its fp32 reference, on the framework under
  test) before the kernel, and is then checked against float64 and the
  package's `_reference` on real MLX.

None of these files asks whether Metal is available: on real MLX they call
mx.fast.metal_kernel unconditionally, which alloy.mlx makes run.

The kernels' outputs are allocated by the package's own calls (no
init_value), so there is nothing of ours to poison; every output element is
compared. Every check also checks which of the file's kernels launched.

Each check takes the framework under test ("alloy" or "mlx"), its `mx`, the
rng, `real` (references(): the package's pure-MLX references as real MLX
runs them) and the case's parameters.
"""
import math
import os

import numpy as np
import pytest

from kernel_path import kernels_launched as launched
from kernel_path import launched_during, load_kernel_path
from real_mlx_code import core_of, load, normal

EPS32 = float(np.finfo(np.float32).eps)
EPS16 = float(np.finfo(np.float16).eps)
EPS_BF16 = 2.0 ** -7

# The NAX kernels fill and store their fragments by Apple's lane layout. The
# CPU follows it; CUDA's cooperative tensors keep the tensor cores' own
# (README, "Known limits"), so on the GPU they are expected to give wrong
# numbers, which the strict xfail records (as test_real_mlx_nax_kernels.py).
apple_lane_layout = pytest.mark.xfail(os.environ.get("ALLOY_TEST_DEVICE", "cpu") == "gpu", strict=True,
                                      reason="CUDA's cooperative tensors use the tensor cores' lane layout, not Apple's")

HAD = "jang_tools.turboquant.hadamard_kernel"
ROT = "jang_tools.turboquant.rotation"
TQ = "jang_tools.turboquant.tq_kernel"
LINEAR = "jang_tools.turboquant.linear"
GATHER = "jang_tools.turboquant.gather_tq_kernel"
GATE_UP = "jang_tools.turboquant.fused_gate_up_kernel"
NAX = "jang_tools.turboquant.mpp_nax_kernel"
JANGH = "jang_tools.jangh.kernels"
JANGH_FORMAT = "jang_tools.jangh.format"
PREFILL = "jang_tools.dsv4.indexed_prefill_attention"
DECODE = "jang_tools.dsv4.indexed_decode_attention"
INDEXER = "jang_tools.dsv4.indexer_scores_kernel"


def references():
    """The package's pure-MLX references as real MLX runs them (a module
    fixture of both suites)."""
    return {name: load(mod, "mlx") for name, mod in (("rot", ROT), ("linear", LINEAR), ("format", JANGH_FORMAT),
                                                    ("prefill", PREFILL), ("decode", DECODE),
                                                    ("indexer", INDEXER))}


# ---- float64 references and bounds -------------------------------------------

def pow2_blocks(dim):
    """dim as a sum of distinct powers of two, largest first (the package's
    block decomposition)."""
    blocks = []
    while dim:
        blocks.append(1 << (dim.bit_length() - 1))
        dim -= blocks[-1]
    return blocks


def hadamard64(x, signs):
    """The randomized Hadamard rotation in float64: per power-of-2 block,
    H (signs * x) / sqrt(block), rows of x independent."""
    x = np.asarray(x, np.float64) * np.asarray(signs, np.float64)
    out, off = [], 0
    for b in pow2_blocks(x.shape[-1]):
        v = x[..., off:off + b].reshape(-1, b)
        h = 1
        while h < b:
            v = v.reshape(v.shape[0], b // (2 * h), 2, h)
            v = np.concatenate([v[:, :, 0] + v[:, :, 1], v[:, :, 0] - v[:, :, 1]], -1).reshape(-1, b)
            h *= 2
        out.append(v.reshape(*x.shape[:-1], b) / math.sqrt(b))
        off += b
    return np.concatenate(out, -1)


def unpack_codes(packed, bits, n):
    """TurboQuant's packing: 32 // bits codes a uint32, lowest bits first."""
    per = 32 // bits
    shifts = np.arange(per, dtype=np.uint32) * bits
    codes = (packed[..., None] >> shifts) & np.uint32((1 << bits) - 1)
    return codes.reshape(*packed.shape[:-1], -1)[..., :n]


def dot_bound(a, b, eps=EPS32):
    """Bound on float32 rounding of the dot products a @ b.T (rows of a and b
    of length n): 8 sqrt(n) eps sum_i |a_i b_i|. Rounding errors of random
    data add as a random walk (sqrt(n) eps relative to the sum of the terms'
    sizes); 8 standard deviations never happen by chance, while a dropped or
    misdecoded term (size ~ the terms themselves) exceeds it many times."""
    n = a.shape[-1]
    return 8 * math.sqrt(n) * eps * (np.abs(a) @ np.abs(b).T)


def as_dtype(mx, a, dtype):
    """`a` rounded to a dtype of `mx` (by the framework's own cast), back in float64."""
    rounded = mx.array(np.asarray(a, np.float32)).astype(getattr(mx, dtype)).astype(mx.float32)
    return np.array(rounded).astype(np.float64)


def mlx_array(a):
    return core_of("mlx").array(a)


def on_real_mlx(call):
    """call() on real MLX's CPU stream."""
    mlx_core = core_of("mlx")
    with mlx_core.stream(mlx_core.cpu):
        return call()


def tq_quantized(real, rng, out_f, in_f, bits, experts=None):
    """Random weights quantized by the package's own quantizer
    (linear.tq_quantize_weight / tq_quantize_experts, seed 42), and the
    float64 weights the codes stand for in the rotated domain:
    codebook[code] * norm."""
    lin = real["linear"]
    if experts is None:
        q = lin.tq_quantize_weight(normal(rng, out_f, in_f), bits=bits, seed=42)
    else:
        q = lin.tq_quantize_experts(normal(rng, experts, out_f, in_f), bits=bits, seed=42)
    codebook = np.array(lin.compute_codebook(in_f, bits), np.float32)
    signs = np.array(lin.generate_random_signs(in_f, seed=42), np.float32)
    codes = unpack_codes(q["packed"], bits, in_f)
    w_rot = codebook[codes].astype(np.float64) * q["norms"].astype(np.float64)[..., None]
    return q["packed"], q["norms"], codebook, signs, w_rot


# ---- Hadamard rotation kernels -----------------------------------------------

HADAMARD_DIMS = {
    # dim: the kernels hadamard_rotate_metal launches for it
    64: {"hadamard_shuffle_le1024"},
    192: {"hadamard_shuffle_le1024"},            # 128 + 64
    1000: {"hadamard_shuffle_le1024"},           # six blocks, 8 the smallest
    1536: {"hadamard_shuffle_le1024"},           # MiniMax's 1024 + 512
    2048: {"hadamard_butterfly"},
    4096: {"hadamard_butterfly"},                # 4 elements a thread
    3072: {"hadamard_multiblock"},               # 2048 + 1024
    2560: {"hadamard_multiblock"},               # 2048 + 512
    6144: {"hadamard_multiblock"},               # GLM's 4096 + 2048 (the 8192-float shmem fix)
}


def check_hadamard_rotate_metal(framework, mx, rng, real, dim):
    had = load_kernel_path(HAD, framework)
    x = normal(rng, 3, dim)
    signs = np.array(real["rot"].generate_random_signs(dim, seed=int(rng.integers(1 << 30))))
    got = np.array(had.hadamard_rotate_metal(mx.array(x), mx.array(signs)))
    assert launched(had) == HADAMARD_DIMS[dim]
    # A 1-D input takes the same kernels, squeezed back.
    got1 = np.array(had.hadamard_rotate_metal(mx.array(x[1]), mx.array(signs)))

    want = hadamard64(x, signs)
    # Float32 butterflies: log2(block) stages, each rounding values of size
    # ~|x| sqrt(2^stage); after the 1/sqrt(block) scale the error is a few
    # eps of the rows' rms. 8 log2(block) eps of the rms bounds it; a wrong
    # sign or a missed stage is off by O(rms).
    rms = np.sqrt((x.astype(np.float64) ** 2).mean(-1, keepdims=True))
    atol = 8 * math.log2(max(pow2_blocks(dim))) * EPS32 * rms
    err = np.abs(got - want)
    assert (err - atol).max() <= 0, f"{err.max():.3g} from float64 at dim {dim}"
    assert (np.abs(got1 - want[1]) - atol[1]).max() <= 0, "1-D input"

    # The package's pure-MLX rotation (a chain of reshapes and adds) on real
    # MLX, and on Alloy in Alloy's suite: both float32, same bound against
    # float64.
    by_mlx = on_real_mlx(lambda: np.array(real["rot"].hadamard_rotate(mlx_array(x), mlx_array(signs))))
    runs = [("rotation.hadamard_rotate on real MLX", by_mlx)]
    if framework == "alloy":
        rot_alloy = load_kernel_path(ROT, "alloy")
        runs.append(("on Alloy", np.array(rot_alloy.hadamard_rotate(mx.array(x), mx.array(signs)))))
    for name, value in runs:
        assert (np.abs(value - want) - atol).max() <= 0, name
    np.testing.assert_allclose(got, by_mlx, rtol=0, atol=2 * atol.max())


# ---- TurboQuant matmuls --------------------------------------------------------

TQ_SHAPES = [(192, 40, 2), (320, 33, 4), (250, 24, 3), (2048, 17, 2), (3072, 9, 4)]
TQ_IDS = [f"i{i}_o{o}_b{b}" for i, o, b in TQ_SHAPES]


def check_tq_matmul_layer(framework, mx, rng, real, in_f, out_f, bits):
    """tq_kernel.TurboQuantLinear (flattens (B, T, in) to rows, rotates x
    with the Hadamard kernel, then `tq_matmul`: one thread an output, codes
    unpacked from uint32) against float64 and linear.py's ops layer."""
    tq = load_kernel_path(TQ, framework)
    packed, norms, codebook, signs, w_rot = tq_quantized(real, rng, out_f, in_f, bits)
    x = normal(rng, 2, 3, in_f)

    layer = tq.TurboQuantLinear(in_f, out_f, bits=bits, seed=42)
    layer.packed, layer.norms = mx.array(packed), mx.array(norms)
    np.testing.assert_array_equal(np.array(layer.codebook), codebook)
    got = np.array(layer(mx.array(x)))
    assert got.shape == (2, 3, out_f)
    assert "tq_matmul" in launched(tq)

    x_rot = hadamard64(x.reshape(6, in_f), signs)
    want = (x_rot @ w_rot.T).reshape(2, 3, out_f)
    bound = 2 * dot_bound(x_rot, w_rot).reshape(2, 3, out_f)  # the rotation's rounding, then the sum's
    assert (np.abs(got - want) - bound).max() <= 0, f"{np.abs(got - want).max():.3g} from float64"

    # linear.py's layer: dequantize (codebook, norms, inverse rotation) and
    # matmul, on real MLX and, in Alloy's suite, on Alloy's ops.
    def ops_layer(lin, core):
        ref = lin.TurboQuantLinear(in_f, out_f, bits=bits, seed=42)
        ref.packed, ref.norms = core.array(packed), core.array(norms)
        return np.array(ref(core.array(x)))

    runs = [("linear.TurboQuantLinear on real MLX", on_real_mlx(lambda: ops_layer(real["linear"], core_of("mlx"))))]
    if framework == "alloy":
        runs.append(("on Alloy", ops_layer(load(LINEAR, "alloy", kernels=False), mx)))
    for name, value in runs:
        assert (np.abs(value - want) - 2 * bound).max() <= 0, name


def gather_reference(x_rows, w_rot_experts, experts):
    """out[d] = w_rot[experts[d]] @ x_rows[d], float64, with its bound."""
    want = np.stack([w_rot_experts[e] @ x for x, e in zip(x_rows, experts)])
    bound = np.stack([2 * dot_bound(x[None], w_rot_experts[e])[0] for x, e in zip(x_rows, experts)])
    return want, bound


# One shape with three SIMD groups of outputs (44 = 20 + 20 + 4); the others
# fit one SIMD group (a threadgroup of 32: Alloy compiles a kernel per
# threadgroup size, and a cold compile of this kernel takes minutes).
GATHER_SHAPES = [(192, 44, 2), (250, 17, 3), (320, 20, 4), (1536, 13, 8)]
GATHER_IDS = [f"i{i}_o{o}_b{b}" for i, o, b in GATHER_SHAPES]


def check_gather_tq_matmul(framework, mx, rng, real, in_f, out_f, bits):
    """gather_tq_matmul in its three layouts (gate/up broadcast over K,
    down 1:1, sorted flat indices): 20 outputs a SIMD group, lanes striding
    the packed words, simd_sum. Output counts not a multiple of 20 and
    rows of fewer than 32 words take the partial paths."""
    gk = load_kernel_path(GATHER, framework)
    E, B, K = 4, 2, 3
    packed, norms, codebook, signs, w_rot = tq_quantized(real, rng, out_f, in_f, bits, experts=E)
    args = [mx.array(a) for a in (packed, norms, codebook, signs)]
    idx = rng.integers(0, E, (B, K)).astype(np.uint32)

    # broadcast: x (B, 1, 1, in), indices (B, K) -> (B, K, 1, out)
    x = normal(rng, B, 1, 1, in_f)
    got = np.array(gk.gather_tq_matmul(mx.array(x), *args[:4], mx.array(idx), bits))
    assert got.shape == (B, K, 1, out_f)
    x_rot = hadamard64(x.reshape(B, in_f), signs)
    want, bound = gather_reference(np.repeat(x_rot, K, 0), w_rot, idx.reshape(-1))
    assert (np.abs(got.reshape(B * K, out_f) - want) - bound).max() <= 0, "broadcast"

    # per row: x (B, K, 1, in), one row per index
    x = normal(rng, B, K, 1, in_f)
    got = np.array(gk.gather_tq_matmul(mx.array(x), *args[:4], mx.array(idx), bits))
    assert got.shape == (B, K, 1, out_f)
    want, bound = gather_reference(hadamard64(x.reshape(B * K, in_f), signs), w_rot, idx.reshape(-1))
    assert (np.abs(got.reshape(B * K, out_f) - want) - bound).max() <= 0, "per row"

    # sorted: x (N, 1, in), flat indices (N,)
    flat = np.sort(rng.integers(0, E, 5)).astype(np.uint32)
    x = normal(rng, 5, 1, in_f)
    got = np.array(gk.gather_tq_matmul(mx.array(x), *args[:4], mx.array(flat), bits, sorted_indices=True))
    assert got.shape == (5, 1, out_f)
    want, bound = gather_reference(hadamard64(x.reshape(5, in_f), signs), w_rot, flat)
    assert (np.abs(got.reshape(5, out_f) - want) - bound).max() <= 0, "sorted"
    assert launched(gk) >= {"gather_tq_matmul"}


def swiglu64(g, u, limit):
    if limit > 0:
        g, u = np.minimum(g, limit), np.clip(u, -limit, limit)
    return g / (1 + np.exp(-g)) * u


FUSED_GATE_UP_SHAPES = [(192, 10, 2), (320, 9, 4), (1536, 8, 3)]
FUSED_GATE_UP_IDS = ["i192_o10_b2", "i320_o9_b4", "i1536_o8_b3"]


def check_fused_gate_up(framework, mx, rng, real, in_f, out_f, bits):
    """fused_gate_up_matmul (gate and up from one pass over x_rot) and
    fused_gate_up_swiglu_matmul (10 outputs a SIMD group, then SiLU(gate) *
    up, with DSV4's limit min(gate, L), clip(up, -L, L) or without). Output
    counts of 8 to 10 keep each kernel at one threadgroup size (256 and 32
    threads) across the cases, so a cold kernel cache compiles each once."""
    in_f = in_f // (32 // bits) * (32 // bits)
    fk = load_kernel_path(GATE_UP, framework)
    E, B, K = 3, 2, 2
    pg, ng, codebook, signs, wg = tq_quantized(real, rng, out_f, in_f, bits, experts=E)
    pu, nu, _, _, wu = tq_quantized(real, rng, out_f, in_f, bits, experts=E)
    idx = rng.integers(0, E, (B, K)).astype(np.uint32)
    x = normal(rng, B, 1, 1, in_f)
    args = [mx.array(a) for a in (x, pg, ng, pu, nu, codebook, signs, idx)]

    x_rot = np.repeat(hadamard64(x.reshape(B, in_f), signs), K, 0)
    g, g_bound = gather_reference(x_rot, wg, idx.reshape(-1))
    u, u_bound = gather_reference(x_rot, wu, idx.reshape(-1))
    gate, up = fk.fused_gate_up_matmul(*args, bits)
    for name, value, want, bound in (("gate", gate, g, g_bound), ("up", up, u, u_bound)):
        value = np.array(value)
        assert value.shape == (B, K, 1, out_f)
        assert (np.abs(value.reshape(B * K, out_f) - want) - bound).max() <= 0, name

    for limit in (0.0, 0.6 * float(np.abs(g).max())):
        act = np.array(fk.fused_gate_up_swiglu_matmul(*args, bits, swiglu_limit=limit)).reshape(B * K, out_f)
        limit_used = round(limit * 1000) / 1000  # the kernel takes the limit in thousandths
        want = swiglu64(g, u, limit_used)
        # The products' bounds carried through SiLU(g) * u (|SiLU'| <= 1.1),
        # and a few eps of the result for the float32 exp and division.
        silu = np.abs(g / (1 + np.exp(-g)))
        bound = 1.1 * g_bound * np.abs(u) + silu * u_bound + 8 * EPS32 * np.abs(want) + 1e-30
        excess = np.abs(act - want) - bound
        assert excess.max() <= 0, f"swiglu limit {limit_used}: {np.abs(act - want).max():.3g} from float64"
    assert launched(fk) >= {"fused_gate_up", "fused_gate_up_swiglu"}


# ---- Metal 4 tensor_ops lanes (opt-in in the package) -------------------------

def with_mpp_header(monkeypatch, tmp_path):
    """mpp_nax_kernel only tries its kernels where the macOS SDK has
    MetalPerformancePrimitives.h (it asks xcrun, or reads $SDKROOT). Alloy
    supplies that header to every kernel, so the SDK the package looks in
    is a folder holding a file at that path."""
    header = tmp_path / "System/Library/Frameworks/MetalPerformancePrimitives.framework/Headers"
    header.mkdir(parents=True)
    (header / "MetalPerformancePrimitives.h").write_text("")
    monkeypatch.setenv("SDKROOT", str(tmp_path))


def rounded_operands(mx, x, signs, w_rot, dtype):
    """x_rot and the weights as the tensor_ops lanes see them: float32 for
    float32 activations (NAX's "float" lane), half for float16."""
    x_rot = hadamard64(as_dtype(mx, x, dtype), signs)
    if dtype == "float16":
        return as_dtype(mx, x_rot, "float16"), as_dtype(mx, w_rot, "float16")
    return x_rot, w_rot


def check_tq_lane(mx, got, x, signs, w_rot, dtype):
    x_rot, w = rounded_operands(mx, x, signs, w_rot, dtype)
    want = x_rot @ w.T
    bound = 2 * dot_bound(x_rot, w)
    if dtype == "float16":
        # x_rot computed in float32 may round to the other neighbouring half
        # than the float64 one does: an ulp of half in a few terms.
        terms = np.abs(x_rot)[:, None, :] * np.abs(w)[None, :, :]
        bound = bound + 4 * EPS16 * terms.max(-1)
        bound = bound + EPS16 * np.abs(want)  # the result returned in float16
    err = np.abs(got - want)
    assert (err - bound).max() <= 0, f"{err.max():.3g} from float64 (largest output {np.abs(want).max():.3g})"


def check_tq_matmul_mpp_dense(framework, mx, rng, real, monkeypatch, dtype):
    """mpp_dense_kernel: a kernel writes the dequantized weights as dense
    half (K, N), then one thread runs tensor_ops::matmul2d over the whole
    product with K read from the operands (k = static_cast<int>(dynamic_extent),
    as Apple's header documents it)."""
    monkeypatch.setenv("JANGTQ_MPP_DENSE", "1")
    monkeypatch.setenv("JANGTQ_MPP_DENSE_STRICT", "1")
    tq = load_kernel_path(TQ, framework)
    in_f, out_f, bits = 192, 40, 2
    packed, norms, codebook, signs, w_rot = tq_quantized(real, rng, out_f, in_f, bits)
    x = normal(rng, 3, in_f)
    got = tq.tq_matmul(mx.array(x).astype(getattr(mx, dtype)), mx.array(packed), mx.array(norms), mx.array(codebook),
                       mx.array(signs), in_f, bits)
    got = np.array(got.astype(mx.float32))
    assert launched(tq) >= {f"jangtq_dequant_dense_half_b{bits}_i{in_f}_o{out_f}",
                            f"jangtq_mpp_dense_matmul_b3_i{in_f}_o{out_f}"}
    # The dense weights are half whatever x is; x_rot is cast to half too.
    x_rot = as_dtype(mx, hadamard64(as_dtype(mx, x, dtype), signs), "float16")
    w = as_dtype(mx, w_rot, "float16")
    want = x_rot @ w.T
    terms = np.abs(x_rot)[:, None, :] * np.abs(w)[None, :, :]
    bound = 2 * dot_bound(x_rot, w) + 4 * EPS16 * terms.max(-1)
    if dtype == "float16":
        bound = bound + EPS16 * np.abs(want)
    assert (np.abs(got - want) - bound).max() <= 0


MPP_NAX_CASES = [("float32", 3), ("float16", 17)]


def check_tq_matmul_mpp_nax(framework, mx, rng, real, monkeypatch, tmp_path, dtype, batch):
    """mpp_nax_kernel.tq_matmul_mpp_nax: a SIMD group's 16x32x16
    cooperative-tensor matmul, its fragments filled and stored by Apple's
    lane layout (JangTQFrag16::get_coord); 17 rows take two M tiles, 40
    outputs two N tiles, both partial."""
    with_mpp_header(monkeypatch, tmp_path)
    monkeypatch.setenv("JANGTQ_MPP_NAX", "1")
    monkeypatch.setenv("JANGTQ_MPP_NAX_STRICT", "1")
    tq = load_kernel_path(TQ, framework)
    in_f, out_f, bits = 320, 40, 4
    packed, norms, codebook, signs, w_rot = tq_quantized(real, rng, out_f, in_f, bits)
    x = normal(rng, batch, in_f)
    got = tq.tq_matmul(mx.array(x).astype(getattr(mx, dtype)), mx.array(packed), mx.array(norms), mx.array(codebook),
                       mx.array(signs), in_f, bits)
    lane = "afloat_wfloat" if dtype == "float32" else "ahalf_whalf"
    assert f"jangtq_mpp_nax_b{batch}_i{in_f}_o{out_f}_q{bits}_{lane}" in launched(tq)
    check_tq_lane(mx, np.array(got.astype(mx.float32)), x, signs, w_rot, dtype)


def check_mpp_nax_grouped_gather_and_fused_swiglu(framework, mx, rng, real, monkeypatch, tmp_path):
    """The grouped NAX lanes of sorted MoE rows (16-row tiles of one expert,
    built by build_sorted_group_tiles): gather_tq_matmul(sorted_indices=True)
    and fused_gate_up_swiglu_matmul on sorted flat indices."""
    with_mpp_header(monkeypatch, tmp_path)
    monkeypatch.setenv("JANGTQ_MPP_NAX", "1")
    monkeypatch.setenv("JANGTQ_MPP_NAX_STRICT", "1")
    gk = load_kernel_path(GATHER, framework)
    fk = load_kernel_path(GATE_UP, framework)
    in_f, out_f, bits, E, N = 256, 40, 2, 3, 21
    pg, ng, codebook, signs, wg = tq_quantized(real, rng, out_f, in_f, bits, experts=E)
    pu, nu, _, _, wu = tq_quantized(real, rng, out_f, in_f, bits, experts=E)
    flat = np.sort(rng.integers(0, E, N)).astype(np.uint32)
    x = normal(rng, N, 1, in_f)
    x_rot = hadamard64(x.reshape(N, in_f), signs)
    g, g_bound = gather_reference(x_rot, wg, flat)
    u, u_bound = gather_reference(x_rot, wu, flat)

    got = np.array(gk.gather_tq_matmul(mx.array(x), mx.array(pg), mx.array(ng), mx.array(codebook), mx.array(signs),
                                       mx.array(flat), bits, sorted_indices=True))
    assert f"jangtq_grouped_gather_mpp_nax_i{in_f}_o{out_f}_q{bits}_afloat_wfloat" in launched(gk), launched(gk)
    assert (np.abs(got.reshape(N, out_f) - g) - g_bound).max() <= 0, "grouped gather"

    limit = 0.5 * float(np.abs(g).max())
    act = np.array(fk.fused_gate_up_swiglu_matmul(mx.array(x), mx.array(pg), mx.array(ng), mx.array(pu), mx.array(nu),
                                                  mx.array(codebook), mx.array(signs), mx.array(flat), bits,
                                                  swiglu_limit=limit)).reshape(N, out_f)
    assert f"jangtq_grouped_fused_gate_up_swiglu_mpp_nax_i{in_f}_o{out_f}_q{bits}_afloat_wfloat" in launched(fk), \
        launched(fk)
    want = swiglu64(g, u, round(limit * 1000) / 1000)
    silu = np.abs(g / (1 + np.exp(-g)))
    bound = 1.1 * g_bound * np.abs(u) + silu * u_bound + 8 * EPS32 * np.abs(want)
    assert (np.abs(act - want) - bound).max() <= 0, "grouped fused gate/up/SwiGLU"


# ---- jangh: JANGTQ v2 decode kernels ------------------------------------------

def load_jangh(framework, real):
    """jangh/kernels.py on its kernel path, loaded once per suite (a module
    fixture): building its header fits the 6- and 8-bit level spacing
    numerically (format.cubic_params, seconds of numpy), so the file shares
    format.py with the real-MLX load, whose cache of the fitted constants it
    is."""
    return load_kernel_path(JANGH, framework, substitutes={JANGH_FORMAT: real["format"]})


def check_jangh_h32_rows(framework, mx, rng, real, jangh):
    jk = jangh
    x = normal(rng, 2, 3, 96)
    got, names = launched_during(jk, lambda: np.array(jk.h32_rows(mx.array(x))))
    assert names == {"jangtq2_h32_float_float"}
    H = np.array([[(-1) ** bin(i & j).count("1") for j in range(32)] for i in range(32)], np.float64) / math.sqrt(32)
    want = (x.astype(np.float64).reshape(2, 3, 3, 32) @ H).reshape(2, 3, 96)
    # Five float32 butterfly stages over 32 values: a few eps of the rms.
    atol = 40 * EPS32 * np.sqrt((x.astype(np.float64) ** 2).mean())
    np.testing.assert_allclose(got, want, rtol=0, atol=atol)
    by_mlx = on_real_mlx(lambda: np.array(real["format"].h32(mlx_array(x))))  # the package's mx.hadamard_transform form
    np.testing.assert_allclose(got, by_mlx, rtol=0, atol=2 * atol)


JANGH_BITS = [2, 3, 4, 8]
JANGH_SHAPES = [(512, 16), (96, 12)]
JANGH_SHAPE_IDS = ["aligned", "guarded"]


def check_jangh_gather_qmv(framework, mx, rng, real, jangh, bits, K, N):
    """gather_qmv: MLX's qmv_fast layout with the weight decode replaced by
    scale[row] * level(code) (2-bit select tree, 3-bit byte triples, 4/8-bit
    nibbles and bytes, the cubic levels baked into the source). Weights
    quantized by format.encode_rows and packed by format.pack_bitstream; the
    reference is float64 of format.dequant_rows. K = 512, N = 16 is the
    aligned kernel, K = 96, N = 12 the bounds-guarded one."""
    jk = jangh
    fmt = real["format"]
    mlx_core = core_of("mlx")
    E, nd = 3, 4

    def quantized():
        q, s = zip(*(fmt.encode_rows(mlx_array(normal(rng, N, K)), bits) for _ in range(E)))
        packed = np.array(fmt.pack_bitstream(mlx_core.stack(q), bits))
        w = np.stack([np.array(fmt.dequant_rows(qe, se, bits)) for qe, se in zip(q, s)]).astype(np.float64)
        return packed, np.stack([np.array(se) for se in s]), w

    (pg, sg, wg), (pu, su, wu) = on_real_mlx(lambda: (quantized(), quantized()))
    idx = rng.integers(0, E, nd).astype(np.uint32)
    x = normal(rng, nd, K)
    got, single = launched_during(jk, lambda: np.array(jk.gather_qmv(mx.array(x), mx.array(pg), mx.array(sg), None,
                                                                       mx.array(idx), bits, x_per_dispatch=True)))
    g, g_bound = gather_reference(x.astype(np.float64), wg, idx)
    assert (np.abs(got - g) - g_bound).max() <= 0, f"single: {np.abs(got - g).max():.3g} from float64"

    # Fused gate/up with the clamped SwiGLU; x shared by pairs of dispatches.
    xs = normal(rng, nd // 2, K)
    limit = 0.5 * float(np.abs(g).max())
    act, fused = launched_during(jk, lambda: np.array(jk.gather_qmv(
        mx.array(xs), mx.array(pg), mx.array(sg), None, mx.array(idx), bits, x_per_dispatch=False,
        packed_u=mx.array(pu), scales_u=mx.array(su), limit=limit)))
    rows = np.repeat(xs.astype(np.float64), 2, 0)
    g, g_bound = gather_reference(rows, wg, idx)
    u, u_bound = gather_reference(rows, wu, idx)
    want = swiglu64(g, u, float(np.float32(limit)))
    silu = np.abs(g / (1 + np.exp(-g)))
    bound = 1.1 * g_bound * np.abs(u) + silu * u_bound + 8 * EPS32 * np.abs(want)
    assert (np.abs(act - want) - bound).max() <= 0, f"fused: {np.abs(act - want).max():.3g} from float64"
    aligned = "al" if K % 512 == 0 else "gd"
    assert single == {f"jangtq2t_qmv_b{bits}_single_float_{aligned}"}
    assert fused == {f"jangtq2t_qmv_b{bits}_fused_float_{aligned}"}



def check_jangh_gather_qmm_sorted(framework, mx, rng, real, jangh, bits):
    """gather_qmm_sorted's steel path (prefill, rows sorted by expert): MLX's
    steel GEMM tiles (steel/gemm/gemm.h, quantized_utils.h, quantized.h, which
    the file reads itself from Path(mx.__file__).parent / "include" and
    inlines into its header) with jang's level decode in the loader; alone
    and as the fused gate/up with the clamped SwiGLU (two launches). The
    reference is float64 of format.dequant_rows."""
    jk = jangh
    fmt = real["format"]
    mlx_core = core_of("mlx")
    E, M, K, N = 3, 37, 128, 40

    def quantized():  # the scales in float16, as jangh's encode stores them (the kernel reads half)
        q, s = zip(*(fmt.encode_rows(mlx_array(normal(rng, N, K)), bits) for _ in range(E)))
        s = [se.astype(mlx_core.float16) for se in s]
        packed = np.array(fmt.pack_bitstream(mlx_core.stack(q), bits))
        w = np.stack([np.array(fmt.dequant_rows(qe, se.astype(mlx_core.float32), bits))
                      for qe, se in zip(q, s)]).astype(np.float64)
        return packed, np.stack([np.array(se) for se in s]), w

    (pg, sg, wg), (pu, su, wu) = on_real_mlx(lambda: (quantized(), quantized()))
    idx = np.sort(rng.integers(0, E, M)).astype(np.uint32)
    x = normal(rng, M, K)
    got, names = launched_during(jk, lambda: np.array(jk.gather_qmm_sorted(
        mx.array(x), mx.array(pg), mx.array(sg), None, mx.array(idx), bits)))
    assert names == {f"jangtq2_qmm_steel_b{bits}_float"}
    g, g_bound = gather_reference(x.astype(np.float64), wg, idx)
    assert (np.abs(got - g) - g_bound).max() <= 0, f"single: {np.abs(got - g).max():.3g} from float64"
    limit = 0.5 * float(np.abs(g).max())
    act = np.array(jk.gather_qmm_sorted(mx.array(x), mx.array(pg), mx.array(sg), None, mx.array(idx), bits,
                                        packed_u=mx.array(pu), scales_u=mx.array(su), limit=limit))
    u, u_bound = gather_reference(x.astype(np.float64), wu, idx)
    want = swiglu64(g, u, float(np.float32(limit)))
    silu = np.abs(g / (1 + np.exp(-g)))
    bound = 1.1 * g_bound * np.abs(u) + silu * u_bound + 8 * EPS32 * np.abs(want)
    assert (np.abs(act - want) - bound).max() <= 0, f"fused: {np.abs(act - want).max():.3g} from float64"

# ---- DSV4 attention and indexer kernels ---------------------------------------

H, D = 64, 512  # baked into the DSV4 kernels


def attention_with_sink64(q, keys, visible, sinks, scale):
    """softmax over [scores of the visible keys, sink] (the sink's value is
    zero) times the keys (K == V: one MQA latent), float64.
    q (H, S, D), keys (n, D), visible (S, n) bool, sinks (H,)."""
    s = np.einsum("hsd,nd->hsn", q, keys) * scale
    s = np.where(visible[None], s, -np.inf)
    m = np.maximum(s.max(-1, keepdims=True), sinks[:, None, None])
    p = np.exp(s - m)
    denom = p.sum(-1, keepdims=True) + np.exp(sinks[:, None, None] - m)
    return np.einsum("hsn,nd->hsd", p, keys) / denom


def check_attention(got, want, dtype):
    """Output rounded to the half type (half an ulp of the result), plus the
    float32 online softmax: scores of ~|q||k| scale rounded by ~sqrt(D) eps,
    exp and rescaling a few eps of the output's size."""
    eps = {"bfloat16": EPS_BF16, "float16": EPS16}[dtype]
    bound = eps * np.abs(want) + 1e-4 * np.abs(want).max()
    err = np.abs(got - want)
    assert (err - bound).max() <= 0, f"{dtype}: {err.max():.3g} from float64 (largest {np.abs(want).max():.3g})"


def dsv4_inputs(mx, rng, dtype, shape_q, rows, pool_rows):
    """q, local KV rows, pool rows in `dtype` (and float64 of the rounded
    values), sinks in float32."""
    q = as_dtype(mx, 0.3 * rng.standard_normal(shape_q), dtype)
    kv = as_dtype(mx, 0.3 * rng.standard_normal((rows, D)), dtype)
    pool = as_dtype(mx, 0.3 * rng.standard_normal((pool_rows, D)), dtype)
    sinks = (0.5 * rng.standard_normal(H)).astype(np.float32)
    cast = getattr(mx, dtype)
    return (q, kv, pool, sinks), [mx.array(a.astype(np.float32)).astype(cast) for a in (q, kv, pool)]


def real_mlx_half_inputs(dtype, *arrays):
    """float64 arrays of `dtype` values as real MLX arrays of that dtype."""
    mlx_core = core_of("mlx")
    return (mlx_array(a.astype(np.float32)).astype(getattr(mlx_core, dtype)) for a in arrays)


def check_dsv4_heads16_prefill_attention(framework, mx, rng, real, monkeypatch):
    """One threadgroup a (token, 16 heads): the local window rows, then the
    selected pool rows that are causally visible ((idx + 1) * ratio <= pos
    + 1; -1 and out-of-range indices skipped), online softmax with the sink
    folded in."""
    monkeypatch.setenv("VMLX_DSV4_HEADS16_PREFILL", "1")
    m = load_kernel_path(PREFILL, framework)
    S, R, P, K = 5, 20, 40, 9
    offset, window, ratio = 30, 12, 4
    scale = D ** -0.5
    for dtype in ("bfloat16", "float16"):
        (q, kv, pool, sinks), (q_a, kv_a, pool_a) = dsv4_inputs(mx, rng, dtype, (1, H, S, D), R, P)
        topk = np.stack([rng.permutation(P)[:K] for _ in range(S)]).astype(np.int32)
        topk[0, 0], topk[1, 1] = -1, P + 3  # skipped by the kernel, matched by nothing in the reference
        out = m.dsv4_heads16_prefill_attention(q_a, kv_a.reshape(1, 1, R, D), pool_a[None], mx.array(topk[None]),
                                               offset=offset, window=window, ratio=ratio, scale=scale,
                                               sinks=mx.array(sinks))
        assert out is not None, f"the kernel declined: {m.dsv4_heads16_status()}"
        assert m.dsv4_heads16_status()["self_test"] == "passed"
        got = np.array(out.astype(mx.float32))[0]

        q_pos = offset + np.arange(S)
        k_pos = offset + S - R + np.arange(R)
        local = (k_pos[None] <= q_pos[:, None]) & (k_pos[None] > q_pos[:, None] - window)
        selected = (topk[:, :, None] == np.arange(P)[None, None]).any(1)
        pooled = selected & ((np.arange(P)[None] + 1) * ratio <= q_pos[:, None] + 1)
        want = attention_with_sink64(q[0], np.concatenate([kv, pool]), np.concatenate([local, pooled], 1),
                                     sinks.astype(np.float64), scale)
        check_attention(got, want, dtype)

        def reference():
            q_m, kv_m, pool_m = real_mlx_half_inputs(dtype, q, kv, pool)
            ref = real["prefill"]._reference(q_m, kv_m, pool_m, mlx_array(topk), mlx_array(sinks),
                                             offset=offset, window=window, ratio=ratio, scale=scale)
            return np.array(ref.astype(core_of("mlx").float32))[0]

        check_attention(on_real_mlx(reference), want, dtype)  # the package's reference agrees with ours
    assert launched(m) == {"vmlx_dsv4_heads16_prefill"}


DECODE_ROWS = [10, 0]
DECODE_IDS = ["window_rows", "no_window_rows"]


def check_dsv4_indexed_decode_attention(framework, mx, rng, real, monkeypatch, rows):
    """Split-K decode: chunks of 256 rows over [window rows, selected pool
    rows] (300 selected: two chunks, the second partial), per-chunk (M, S,
    O) partials, then the merge kernel's log-sum-exp with the sink. Without
    window rows the package passes a placeholder row."""
    monkeypatch.setenv("VMLX_DSV4_INDEXED_DECODE", "1")
    m = load_kernel_path(DECODE, framework)
    P, K = 400, 300
    scale = D ** -0.5
    for dtype in ("bfloat16", "float16"):
        (q, kv, pool, sinks), (q_a, kv_a, pool_a) = dsv4_inputs(mx, rng, dtype, (1, H, 1, D), rows, P)
        topk = rng.permutation(P)[:K].astype(np.int32)
        out = m.dsv4_indexed_decode_attention(q_a, kv_a.reshape(1, 1, rows, D), pool_a[None],
                                              mx.array(topk[None, None]), scale=scale, sinks=mx.array(sinks))
        assert out is not None, f"the kernel declined: {m.dsv4_indexed_decode_status()}"
        assert m.dsv4_indexed_decode_status()["self_test"] == "passed"
        got = np.array(out.astype(mx.float32))[0]
        keys = np.concatenate([kv, pool[topk]])
        want = attention_with_sink64(q[0], keys, np.ones((1, len(keys)), bool), sinks.astype(np.float64), scale)
        check_attention(got, want, dtype)

        def reference():
            q_m, kv_m, pool_m = real_mlx_half_inputs(dtype, q, kv, pool)
            ref = real["decode"]._reference(q_m, kv_m, pool_m, mlx_array(topk), mlx_array(sinks), scale=scale)
            return np.array(ref.astype(core_of("mlx").float32))[0]

        check_attention(on_real_mlx(reference), want, dtype)
    assert launched(m) == {"vmlx_dsv4_indexed_decode_partial", "vmlx_dsv4_indexed_decode_merge"}


def indexer64(q, pool, w, scale):
    """out[t, c] = sum_h relu(scale * q[h, t] . pool[c]) * w[t, h], float64,
    and a bound for the kernel's float32 sums of exact half products."""
    s = np.einsum("htd,cd->htc", q, pool)
    want = (np.maximum(s * scale, 0) * w.T[:, :, None]).sum(0)
    terms = np.einsum("htd,cd->htc", np.abs(q), np.abs(pool)) * scale * np.abs(w).T[:, :, None]
    bound = 8 * math.sqrt(q.shape[-1]) * EPS32 * terms.sum(0) + 4 * EPS32 * np.abs(want)
    return want, bound


def check_dsv4_fused_indexer_scores(framework, mx, rng, real, monkeypatch):
    """fused_indexer_scores: 128 threads a (32 pool rows, 8 tokens) tile,
    the tiles staged as half, per head an 8x8 simdgroup matrix product over
    D / 8 steps (make_filled_simdgroup_matrix<float, 8>, simdgroup_load with
    the pool transposed), relu(scale * s) * w folded in float32. The public
    entry declines below 262144 (tokens x pool rows) of work, so 512 x 512;
    it runs the package's self-test (three shapes) first."""
    monkeypatch.setenv("VMLX_DSV4_INDEXER_KERNEL", "1")
    m = load_kernel_path(INDEXER, framework)
    Hh, L, C, Dh = 1, 512, 512, 128
    q = as_dtype(mx, 0.35 * rng.standard_normal((1, Hh, L, Dh)), "bfloat16")
    pool = as_dtype(mx, 0.35 * rng.standard_normal((1, C, Dh)), "bfloat16")
    w = (0.35 * rng.standard_normal((1, L, Hh))).astype(np.float32)
    scale = Dh ** -0.5
    out = m.fused_indexer_scores(mx.array(q.astype(np.float32)).astype(mx.bfloat16),
                                 mx.array(pool.astype(np.float32)).astype(mx.bfloat16), mx.array(w), scale)
    assert out is not None, f"the kernel declined: {m.fused_indexer_status()}"
    assert m.fused_indexer_status()["self_test"] == "passed"
    assert launched(m) == {"vmlx_dsv4_indexer_scores"}
    got = np.array(out)[0]
    # bfloat16 values have 8 significant bits: exact in half, as the kernel stages them.
    want, bound = indexer64(q[0], pool[0], w[0].astype(np.float64), scale)
    assert (np.abs(got - want) - bound).max() <= 0, f"{np.abs(got - want).max():.3g} from float64"

    def reference():
        q_m, pool_m = real_mlx_half_inputs("bfloat16", q[0], pool[0])
        return np.array(real["indexer"]._reference(q_m, pool_m, mlx_array(w[0]), scale))

    assert (np.abs(on_real_mlx(reference) - want) - bound).max() <= 0, "the package's reference"
