"""natten-mlx 0.3.3 (neighborhood attention, 1D/2D/3D) run unchanged: the
checks both hosts share, Alloy's own path (tests/python/test_real_mlx_natten.py)
and alloy.mlx on real MLX (tests/mlx_plugin/test_natten_mlx.py).

The package's Metal backend (`natten_mlx/_core/fast_metal.py`, about a
hundred kernels: fused forward in scalar, float4 and SIMD-group forms, causal
forms, the split QK and AV kernels, their backward kernels, variable-length
forms) is run as its users call it, through `natten_mlx.functional`, and
compared with a float64 numpy reference written here from NATTEN's
definition, and with the package's own pure-MLX backend (`_core/pure.py`).

Two things of the file are changed by the tests, both to make a failure
visible: `_with_fallback` / `_with_grad_fallback` (which catch any exception
of the Metal path and quietly return the pure backend's answer, and mark
the Metal path broken for the rest of the process) call the Metal path
alone, and each test checks which kernels ran.

NATTEN's neighbourhood, per axis of length L, kernel k (odd), dilation d:
the positions are split into d groups by position mod d; in its group of
length Lg a query at group index j attends to the k group members starting
at clamp(j - k // 2, 0, Lg - k). Causal: the k positions q - (k-1)d .. q
(step d) that are >= 0. Stride s: queries at 0, s, 2s, ... only. Several
axes: the product of each axis' neighbours, the first axis outermost.
"""
import numpy as np

import real_mlx_code


def axis_neighbours(length, k, d, causal, stride):
    """(query positions, neighbour positions [Nq, k], valid [Nq, k]) of one axis."""
    qpos = np.arange(0, length, stride)
    steps = np.arange(k)
    if causal:
        raw = qpos[:, None] - (k - 1 - steps[None, :]) * d
        return qpos, np.clip(raw, 0, length - 1), raw >= 0
    group, j = qpos % d, qpos // d
    group_len = (length - group + d - 1) // d
    start = np.minimum(np.maximum(j - k // 2, 0), np.maximum(group_len - k, 0))
    member = start[:, None] + steps[None, :]
    valid = member < group_len[:, None]
    return qpos, np.clip(group[:, None] + d * member, 0, length - 1), valid


def neighbours(spatial, kernel, stride, dilation, causal):
    """Linear query indices [Nq], neighbour indices [Nq, K], valid [Nq, K] and
    the output's spatial shape, over all axes (first axis outermost)."""
    qlin, nlin, valid = np.zeros(1, np.int64), np.zeros((1, 1), np.int64), np.ones((1, 1), bool)
    out_shape = []
    for size, k, s, d, c in zip(spatial, kernel, stride, dilation, causal):
        q, n, v = axis_neighbours(size, k, d, c, s)
        out_shape.append(len(q))
        qlin = (qlin[:, None] * size + q[None, :]).reshape(-1)
        nlin = (nlin[:, None, :, None] * size + n[None, :, None, :]).reshape(len(qlin), -1)
        valid = (valid[:, None, :, None] & v[None, :, None, :]).reshape(len(qlin), -1)
    return qlin, nlin, valid, tuple(out_shape)


def _flat(x, spatial):
    x = np.asarray(x, np.float64)
    return x.reshape(x.shape[0], int(np.prod(spatial)), x.shape[-2], x.shape[-1])


def na_reference64(q, k, v, kernel, stride, dilation, causal, scale, cotangent=None):
    """Neighbourhood attention in float64: the output [B, *out_spatial, H, D],
    its logits [B, *out_spatial, H, K] (scaled, -inf where not a neighbour),
    and, given a cotangent of the output, the gradients of q, k and v.
    Key/value heads fewer than the query's are shared by consecutive query
    heads (GQA), as natten's functional API repeats them."""
    spatial = q.shape[1:-2]
    qlin, nlin, valid, out_shape = neighbours(spatial, kernel, stride, dilation, causal)
    rep = q.shape[-2] // k.shape[-2]
    qf = _flat(q, spatial)[:, qlin]  # [B, Nq, H, D]
    kf = np.repeat(_flat(k, spatial), rep, axis=2)
    vf = np.repeat(_flat(v, spatial), rep, axis=2)
    kn, vn = kf[:, nlin], vf[:, nlin]  # [B, Nq, K, H, D]
    logits = np.einsum("bqhd,bqkhd->bqhk", qf, kn) * scale
    logits = np.where(valid[None, :, None, :], logits, -np.inf)
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = np.einsum("bqhk,bqkhd->bqhd", p, vn)
    B, H, D = q.shape[0], q.shape[-2], v.shape[-1]
    result = {
        "out": out.reshape(B, *out_shape, H, D),
        "logits": logits.reshape(B, *out_shape, H, -1),
        "attn": p.reshape(B, *out_shape, H, -1),
    }
    if cotangent is None:
        return result
    go = np.asarray(cotangent, np.float64).reshape(B, -1, H, D)
    dp = np.einsum("bqhd,bqkhd->bqhk", go, vn)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    dq = np.zeros_like(_flat(q, spatial))
    dq[:, qlin] = scale * np.einsum("bqhk,bqkhd->bqhd", ds, kn)
    dk, dv = np.zeros_like(kf), np.zeros_like(vf)
    np.add.at(dk, (slice(None), nlin), scale * ds.transpose(0, 1, 3, 2)[..., None] * qf[:, :, None])
    np.add.at(dv, (slice(None), nlin), p.transpose(0, 1, 3, 2)[..., None] * go[:, :, None])
    # GQA: a shared key/value head gathers the gradients of its query heads.
    Hk = k.shape[-2]
    dk = dk.reshape(B, -1, Hk, rep, k.shape[-1]).sum(3)
    dv = dv.reshape(B, -1, Hk, rep, D).sum(3)
    result.update(dq=dq.reshape(q.shape), dk=dk.reshape(k.shape), dv=dv.reshape(v.shape))
    return result


# (name, spatial, kernel, stride, dilation, causal, heads (q, kv), head dim):
# which fast_metal kernels each takes is decided by the file (head dim a
# multiple of 4: float4 forms; 32..128 by 32: SIMD-group forms; causal: the
# causal forms; stride/dilation in the kernels' parameters).
CASES = {
    "1d_vec4": ((40,), (7,), (1,), (1,), (False,), (2, 2), 16),
    "1d_scalar_stride_dilation": ((33,), (5,), (2,), (3,), (False,), (2, 2), 10),
    "1d_causal": ((40,), (7,), (1,), (2,), (True,), (2, 2), 16),
    "1d_simd": ((48,), (9,), (1,), (1,), (False,), (2, 2), 32),
    "1d_gqa": ((24,), (5,), (1,), (1,), (False,), (4, 2), 8),
    "2d_vec4": ((12, 12), (5, 5), (1, 1), (1, 1), (False, False), (2, 2), 16),
    "2d_scalar_stride_dilation": ((13, 11), (3, 3), (2, 1), (2, 3), (False, False), (1, 1), 6),
    "2d_causal_rows": ((10, 12), (5, 5), (1, 1), (1, 1), (True, False), (2, 2), 16),
    "2d_simd": ((12, 10), (3, 3), (1, 1), (1, 1), (False, False), (2, 2), 64),
    "3d_vec4": ((6, 6, 6), (3, 3, 3), (1, 1, 1), (1, 1, 1), (False, False, False), (2, 2), 16),
    "3d_scalar_stride_dilation": ((7, 6, 8), (3, 3, 3), (1, 2, 1), (2, 1, 2), (False, False, False), (1, 1), 6),
    "3d_causal_depth": ((6, 6, 6), (3, 3, 3), (1, 1, 1), (1, 1, 1), (True, False, False), (2, 2), 8),
    "3d_simd": ((5, 6, 5), (3, 3, 3), (1, 1, 1), (1, 1, 1), (False, False, False), (1, 1), 32),
}

# Which cases each kind of test runs (both hosts run the same).
LOW_PRECISION_CASES = ["1d_vec4", "2d_causal_rows", "3d_vec4"]
GRADIENT_CASES = ["1d_scalar_stride_dilation", "1d_causal", "1d_simd", "1d_gqa", "2d_vec4",
                  "2d_scalar_stride_dilation", "2d_simd", "3d_causal_depth", "3d_simd"]
SPLIT_CASES = ["1d_vec4", "2d_scalar_stride_dilation", "3d_vec4"]
# The scalar-path cases have head dims that are not multiples of 4: the
# package's `weighted_add` (backward) loads `*((device const float4*)(src +
# d4 * 4))` from rows of `dim` floats, every other one 8 bytes off 16, which
# CUDA's vector loads alone would fault on (test_metal_kernel_vector_casts.py).
# extras.allin1: (rank, kernel, dilation, head dim)
ALLIN1_CASES = [(1, 5, 2, 12), (1, 7, 1, 16), (2, 3, 1, 12), (2, 5, 2, 8)]
ALLIN1_BACKWARD_CASES = [(1, 5, 2, 12), (1, 3, 1, 16), (2, 3, 1, 12), (2, 5, 2, 8)]


def assert_launched(launched, start, part=""):
    """The launches since `start` were natten's kernels, one of them named
    with `part`: the Metal path ran, not the pure backend."""
    names = launched[start:]
    assert names and all("natten" in n for n in names), names
    assert any(part in n for n in names), (part, names)


# Relative tolerance of each dtype's rounded output (natten computes half
# and bfloat16 inputs in float32 and rounds the result).
TOLERANCE = {"float32": 2e-5, "float16": 2e-3, "bfloat16": 1.6e-2}


def _inputs(rng, mx, case, dtype):
    spatial, _, _, _, _, (hq, hkv), dim = case
    B = 2
    arrays = [rng.standard_normal((B, *spatial, h, dim)).astype(np.float32) for h in (hq, hkv, hkv)]
    xs = [mx.array(a).astype(getattr(mx, dtype)) for a in arrays]
    # The reference reads the inputs as rounded to the dtype.
    rounded = [np.array(x.astype(mx.float32)) for x in xs]
    return xs, rounded


def _functional(F, rank):
    return getattr(F, f"na{rank}d")


def _close(got, want, rtol, what):
    got = np.asarray(got, np.float64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert np.all(np.isfinite(got)), f"{what}: non-finite values"
    err = np.abs(got - want).max() / max(1.0, np.abs(want).max())
    assert err <= rtol, f"{what}: max error {err:.3g} (relative to max |ref|) > {rtol}"


def forward_matches(F, ops, mx, rng, name, dtype):
    """na{1,2,3}d on the Metal backend against float64 and the pure backend;
    returns the inputs, the call's arguments and the output (float32)."""
    case = CASES[name]
    spatial, kernel, stride, dilation, causal, _, dim = case
    (q, k, v), (qn, kn, vn) = _inputs(rng, mx, case, dtype)
    scale = dim ** -0.5
    fn = _functional(F, len(spatial))
    args = dict(kernel_size=kernel, stride=stride, dilation=dilation, is_causal=causal)
    ops.set_backend("fast_metal")
    out = fn(q, k, v, **args)
    mx.eval(out)
    ref = na_reference64(qn, kn, vn, kernel, stride, dilation, causal, scale)
    assert out.dtype == q.dtype
    _close(np.array(out.astype(mx.float32)), ref["out"], TOLERANCE[dtype], f"{name} {dtype} forward")
    ops.set_backend("pure")
    pure = fn(q, k, v, **args)
    ops.set_backend("fast_metal")
    got = np.array(out.astype(mx.float32))
    _close(got, np.array(pure.astype(mx.float32)).astype(np.float64), 2 * TOLERANCE[dtype],
           f"{name} {dtype} forward against the pure backend")
    return (q, k, v), args, got


def gradients_match(F, ops, mx, rng, name):
    """mx.grad through na{1,2,3}d (the package's custom VJPs: its backward
    kernels) against the float64 gradients."""
    case = CASES[name]
    spatial, kernel, stride, dilation, causal, _, dim = case
    (q, k, v), (qn, kn, vn) = _inputs(rng, mx, case, "float32")
    scale = dim ** -0.5
    fn = _functional(F, len(spatial))
    ref_shape = na_reference64(qn, kn, vn, kernel, stride, dilation, causal, scale)["out"].shape
    cot_np = rng.standard_normal(ref_shape).astype(np.float32)
    cot = mx.array(cot_np)
    ops.set_backend("fast_metal")

    def loss(q, k, v):
        o = fn(q, k, v, kernel_size=kernel, stride=stride, dilation=dilation, is_causal=causal)
        return mx.sum(o * cot)

    grads = mx.grad(loss, argnums=(0, 1, 2))(q, k, v)
    mx.eval(grads)
    ref = na_reference64(qn, kn, vn, kernel, stride, dilation, causal, scale, cotangent=cot_np)
    for g, key in zip(grads, ("dq", "dk", "dv")):
        _close(np.array(g), ref[key], 5e-5, f"{name} {key}")


def split_ops_match(F, ops, mx, rng, name):
    """The split path: na{r}d_qk (logits), softmax, na{r}d_av, and gradients
    through both, against float64."""
    case = CASES[name]
    spatial, kernel, stride, dilation, causal, _, dim = case
    rank = len(spatial)
    (q, k, v), (qn, kn, vn) = _inputs(rng, mx, case, "float32")
    scale = dim ** -0.5
    qk, av = getattr(F, f"na{rank}d_qk"), getattr(F, f"na{rank}d_av")
    ops.set_backend("fast_metal")
    kw = dict(stride=stride, is_causal=causal)
    ref0 = na_reference64(qn, kn, vn, kernel, stride, dilation, causal, scale)
    cot_np = rng.standard_normal(ref0["out"].shape).astype(np.float32)
    cot = mx.array(cot_np)

    def loss(q, k, v):
        attn = mx.softmax(qk(q, k, kernel, dilation, scale=scale, **kw), axis=-1)
        return mx.sum(av(attn, v, kernel, dilation, **kw) * cot)

    logits = qk(q, k, kernel, dilation, scale=scale, **kw)
    out = av(mx.softmax(logits, axis=-1), v, kernel, dilation, **kw)
    grads = mx.grad(loss, argnums=(0, 1, 2))(q, k, v)
    mx.eval(logits, out, grads)
    ref = na_reference64(qn, kn, vn, kernel, stride, dilation, causal, scale, cotangent=cot_np)
    finite = np.isfinite(ref["logits"])
    _close(np.array(logits)[finite], ref["logits"][finite], 2e-5, f"{name} logits")
    _close(np.array(out), ref["out"], 2e-5, f"{name} av")
    for g, key in zip(grads, ("dq", "dk", "dv")):
        _close(np.array(g), ref[key], 5e-5, f"{name} split {key}")


def varlen_1d_matches(F, ops, mx, rng):
    """na1d_varlen: each batch element attends within its own length; the
    rest of its rows are zero."""
    B, L, H, D, kernel = 3, 30, 2, 16, 5
    lens = [30, 17, 9]
    arrays = [rng.standard_normal((B, L, H, D)).astype(np.float32) for _ in range(3)]
    q, k, v = (mx.array(a) for a in arrays)
    ops.set_backend("fast_metal")
    out = F.na1d_varlen(q, k, v, mx.array(lens, dtype=mx.int32), kernel)
    mx.eval(out)
    got = np.array(out)
    for b, n in enumerate(lens):
        ref = na_reference64(*(a[b:b + 1, :n] for a in arrays), (kernel,), (1,), (1,), (False,), D ** -0.5)["out"]
        _close(got[b:b + 1, :n], ref, 2e-5, f"varlen row {b}")
        assert np.all(got[b, n:] == 0), f"varlen row {b}: positions past its length are not zero"


def force_metal_path(fast_metal):
    """The file's fallbacks call only the Metal path, so that any error of it
    raises instead of turning into the pure backend's answer."""
    fast_metal._with_fallback = lambda fn, fallback: fn()
    fast_metal._with_grad_fallback = lambda fn, fallback: fn()
    fast_metal._KERNEL_BUILD_FAILED = False



def prepare(functional):
    """natten's functional module (loaded by real_mlx_code.load) made ready
    for the checks: (F, ops, launched), `launched` the list of the Metal
    kernels' names in launch order."""
    loaded = functional.__port_loader__.loaded
    fast_metal, ops = loaded["natten_mlx._core.fast_metal"], loaded["natten_mlx._core.ops"]
    force_metal_path(fast_metal)
    fast_metal.mx = real_mlx_code.CountingCore(fast_metal.mx)
    return functional, ops, fast_metal.mx.counter["order"]


# ---- extras/allin1: NATTEN's classic QK+RPB and AV ops (DiNAT models) -------

def prepare_allin1(allin1):
    """natten's extras.allin1 package (loaded by real_mlx_code.load): (module,
    launched). Its __init__ falls back to pure MLX when its Metal module fails
    to import; the checks need the Metal functions."""
    assert allin1._metal_1d_qkrpb is not None and allin1._metal_2d_av is not None, "allin1's Metal module did not load"
    fm = allin1.__port_loader__.loaded["natten_mlx.extras.allin1.functional_metal"]
    fm.mx = real_mlx_code.CountingCore(fm.mx)
    return allin1, fm.mx.counter["order"]


def rpb_ops_match(allin1, mx, rng, rank, kernel, dilation, dim):
    """na{1,2}d_qk_rpb (scaled q.k of each neighbour plus the relative
    position bias rpb[h, (n - i) / dilation + kernel - 1] per axis) and
    na{1,2}d_av_fused against float64."""
    B, H = 2, 3
    spatial = (4 * kernel * dilation,) if rank == 1 else (2 * kernel * dilation + 1, 2 * kernel * dilation - 1)
    q, k, v = (rng.standard_normal((B, *spatial, H, dim)).astype(np.float32) for _ in range(3))
    rpb = rng.standard_normal((H,) + (2 * kernel - 1,) * rank).astype(np.float32)
    scale = dim ** -0.5
    qk, av = getattr(allin1, f"na{rank}d_qk_rpb"), getattr(allin1, f"na{rank}d_av_fused")
    logits = qk(mx.array(q), mx.array(k), mx.array(rpb), kernel, dilation, scale=scale)
    attn = mx.softmax(logits, axis=-1)
    out = av(attn, mx.array(v), kernel, dilation)
    mx.eval(logits, out)
    ks, dil = (kernel,) * rank, (dilation,) * rank
    ref = na_reference64(q, k, v, ks, (1,) * rank, dil, (False,) * rank, scale)
    # The bias of each (query, neighbour) pair, from the per-axis offsets.
    qlin, nlin, _, _ = neighbours(spatial, ks, (1,) * rank, dil, (False,) * rank)
    qc = np.stack(np.unravel_index(qlin, spatial), -1)[:, None, :]  # [Nq, 1, rank]
    nc_ = np.stack(np.unravel_index(nlin, spatial), -1)  # [Nq, K, rank]
    rel = (nc_ - qc) // dilation + kernel - 1
    bias = rpb[(slice(None),) + tuple(rel[..., a] for a in range(rank))]  # [H, Nq, K]
    want = ref["logits"].reshape(B, -1, H, ref["logits"].shape[-1]) + bias.transpose(1, 0, 2)[None]
    _close(np.array(logits).reshape(want.shape), want, 2e-5, f"allin1 {rank}d qk_rpb k={kernel} d={dilation}")
    attn64 = np.array(attn, np.float64).reshape(B, -1, H, want.shape[-1])
    vf = _flat(v, spatial)[:, nlin]  # [B, Nq, K, H, D]
    out_want = np.einsum("bqhk,bqkhd->bqhd", attn64, vf).reshape(B, *spatial, H, dim)
    _close(np.array(out), out_want, 2e-5, f"allin1 {rank}d av k={kernel} d={dilation}")


def rpb_backward_matches(fm, mx, rng, rank, kernel, dilation, dim):
    """functional_metal's natten{1,2}dqkrpb_backward (dq, dk, d_rpb from
    d_attn) and natten{1,2}dav_backward (d_attn, d_value from d_out), which
    take heads-first arrays [B, H, *spatial, X], against float64."""
    B, H = 2, 3
    spatial = (4 * kernel * dilation,) if rank == 1 else (2 * kernel * dilation + 1, 2 * kernel * dilation - 1)
    ks, dil = (kernel,) * rank, (dilation,) * rank
    qlin, nlin, _, _ = neighbours(spatial, ks, (1,) * rank, dil, (False,) * rank)
    N, K = len(qlin), nlin.shape[1]
    q, k, v = (rng.standard_normal((B, N, H, dim)) for _ in range(3))
    rpb = rng.standard_normal((H,) + (2 * kernel - 1,) * rank)
    d_attn, d_out = rng.standard_normal((B, N, H, K)), rng.standard_normal((B, N, H, dim))
    attn = np.exp(rng.standard_normal((B, N, H, K)))
    attn /= attn.sum(-1, keepdims=True)
    q, k, v, rpb, d_attn, d_out, attn = (np.float32(a).astype(np.float64) for a in (q, k, v, rpb, d_attn, d_out, attn))

    def heads_first(a):
        return mx.array(np.ascontiguousarray(np.moveaxis(a.reshape(B, *spatial, H, -1), -2, 1)).astype(np.float32))

    def back(a):  # heads-first result -> [B, N, H, X]
        return np.moveaxis(np.array(a, np.float64), 1, -2).reshape(B, N, H, -1)

    dq, dk, drpb = getattr(fm, f"natten{rank}dqkrpb_backward")(
        heads_first(d_attn), heads_first(q), heads_first(k), mx.array(rpb.astype(np.float32)), kernel, dilation)
    da, dv = getattr(fm, f"natten{rank}dav_backward")(heads_first(d_out), heads_first(attn), heads_first(v),
                                                      kernel, dilation)
    mx.eval(dq, dk, drpb, da, dv)
    kn, vn = k[:, nlin], v[:, nlin]  # [B, N, K, H, D]
    dq_ref = np.einsum("bnhk,bnkhd->bnhd", d_attn, kn)
    dk_ref, dv_ref = np.zeros_like(k), np.zeros_like(v)
    np.add.at(dk_ref, (slice(None), nlin), d_attn.transpose(0, 1, 3, 2)[..., None] * q[:, :, None])
    np.add.at(dv_ref, (slice(None), nlin), attn.transpose(0, 1, 3, 2)[..., None] * d_out[:, :, None])
    da_ref = np.einsum("bnhd,bnkhd->bnhk", d_out, vn)
    qc = np.stack(np.unravel_index(qlin, spatial), -1)[:, None, :]
    rel = (np.stack(np.unravel_index(nlin, spatial), -1) - qc) // dilation + kernel - 1  # [N, K, rank]
    drpb_ref = np.zeros_like(rpb)
    index = (np.arange(H)[None, :, None],) + tuple(rel[:, None, :, a] for a in range(rank))
    np.add.at(drpb_ref, index, d_attn.sum(0))
    label = f"allin1 {rank}d backward k={kernel} d={dilation}"
    _close(back(dq), dq_ref, 2e-5, f"{label} dq")
    _close(back(dk), dk_ref, 2e-5, f"{label} dk")
    _close(np.array(drpb, np.float64), drpb_ref, 2e-5, f"{label} d_rpb")
    _close(back(da), da_ref, 2e-5, f"{label} d_attn")
    _close(back(dv), dv_ref, 2e-5, f"{label} d_value")
