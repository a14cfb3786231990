"""mhc-mlx 0.6.3 (manifold-constrained hyper-connections: n residual streams
mixed by a Sinkhorn-projected matrix around one RMSNorm'd aggregate), checked
the same way on Alloy (tests/python/test_real_mlx_mhc.py) and on real MLX with
alloy.mlx (tests/mlx_plugin/test_mhc_mlx.py): the package's `MHCLayer` on its
Metal path against the same layer on its reference ops and float64 numpy,
forward and gradients, its files loaded unchanged (real_mlx_code.py).

The layer swallows a failing kernel: it warns and falls back to its reference
ops. Here that warning is an error, and every kernel the Metal path builds is
counted, so a test cannot pass on the fallback.

Two bugs of the package's own kernels decide the shapes and options used:

- Its reductions over a threadgroup (`while (active > 1) { stride = active / 2;
  ...; if (active odd && lane == 0) buf[0] += buf[active - 1]; ...; active =
  stride + (active & 1); }`) count an element twice whenever `active` is odd
  and above 1: lane 0 folds the odd element in, and the next round still
  counts the slot it came from. A threadgroup of 100 or 96 threads (C = 100:
  Metal's partial threadgroup, `threads_per_threadgroup` 100) gets RMS sums
  too large on Metal as on Alloy, so C here keeps every threadgroup a power
  of two.
- `fused_backward=True` runs `mhc_backward_fused_dx`, whose threads read
  `reduce_buf[0]` (the first sum) and then write `reduce_buf[lane]` (the
  second) with no barrier between: lane 0 may overwrite the sum before other
  threads read it. A GPU usually reads first by timing; Alloy's CPU runs each
  thread to the next barrier, so every thread after lane 0 reads lane 0's
  partial, and dx comes out wrong (NaN where it is negative). With a barrier
  added the kernel matches; the default, `fused_backward=False`, is used.
  `ALLOY_RACE_CHECK=1` names the race (test_real_mlx_mhc.py).
"""
import warnings

import numpy as np

# name: (B, n, C, dtype, the forward's mix kernel), as mhc_forward_fused_metal picks.
SHAPES = {
    # B * C <= 2048: one fully fused kernel; n == 4 has a scalar fast path.
    "fused_n4": (2, 4, 512, "float32", "mhc_fused"),
    # n = 32 in the fully fused kernel's float4 path (its `device float4*` casts).
    "fused_n32": (1, 32, 256, "float32", "mhc_fused"),
    # Aggregate, RMS reduce and the column mix/add kernel; float4 casts.
    "col_n8": (3, 8, 1024, "float32", "stream_mix_add_rms_col"),
    "col_n16": (4, 16, 768, "float32", "stream_mix_add_rms_col"),
    # The bfloat16 column kernel and the float16 mix/add kernel.
    "col_bf16": (3, 8, 1024, "bfloat16", "stream_mix_add_rms_col_bf16"),
    "mix_f16": (3, 8, 1024, "float16", "stream_mix_add_rms_fp16"),
}

# Every shape's other kernels: Sinkhorn both ways and the split backward.
COMMON_KERNELS = {"sinkhorn_knopp", "sinkhorn_knopp_backward", "mhc_backward_prep_tile", "mhc_backward_rms_reduce",
                  "mhc_backward_dx_col", "mhc_backward_dM", "mhc_backward_dH_pre", "mhc_backward_dH_post",
                  "mhc_backward_drms"}

ITERS, EPS = 20, 1e-5


def sigmoid64(v):
    return 1.0 / (1.0 + np.exp(-v))


def sinkhorn64(h_res, iters=ITERS, eps=EPS):
    """The package's Sinkhorn in float64: rows, then columns, `iters` times,
    from exp of the row-shifted logits."""
    p = np.exp(h_res - h_res.max(1, keepdims=True))
    for _ in range(iters):
        r = p.sum(1)
        p = p * np.where(r > eps, 1.0 / r, 1.0)[:, None]
        c = p.sum(0)
        p = p * np.where(c > eps, 1.0 / c, 0.0)[None, :]
    return p


def mhc_forward64(x, h_pre, h_post, h_res, w, eps=EPS):
    """out[b, i] = sum_j M[i, j] x[b, j] + 2 sigmoid(h_post[i]) rmsnorm(sum_j sigmoid(h_pre[j]) x[b, j]) * w."""
    a, b = sigmoid64(h_pre), 2.0 * sigmoid64(h_post)
    y = np.einsum("i,bic->bc", a, x)
    yn = y / np.sqrt((y * y).mean(-1, keepdims=True) + eps) * w
    return np.einsum("ij,bjc->bic", sinkhorn64(h_res), x) + b[None, :, None] * yn[:, None, :]


def random_params(rng, n, C):
    """Logits spread enough that Sinkhorn, the sigmoids and the norm all matter."""
    return [rng.standard_normal(n), rng.standard_normal(n), 2.0 * rng.standard_normal((n, n)),
            1.0 + 0.2 * rng.standard_normal(C)]


def count_kernels(metal_module):
    """Wraps the module's kernel factory: returns a dict name -> launches."""
    counts = {}
    make = metal_module._make_kernel

    def counted(*, name, **kwargs):
        kernel = make(name=name, **kwargs)
        def launch(*args, **kw):
            counts[name] = counts.get(name, 0) + 1
            return kernel(*args, **kw)

        return launch

    metal_module._make_kernel = counted
    return counts


def run_layer(layer_module, mx, rng_inputs, use_metal, dtype):
    """The layer's output and the gradients of <out, cotangent> with respect
    to x and its four parameters, as float64 numpy."""
    x, cot, params = rng_inputs
    n, C = x.shape[1], x.shape[2]
    dt = getattr(mx, dtype)
    layer = layer_module.MHCLayer(n, C, use_metal=use_metal, threads_per_group=256, identity_init=False)
    names = ["H_pre_raw", "H_post_raw", "H_res_raw", "rms_weight"]

    def loss(xv, *ps):
        for name, p in zip(names, ps):
            setattr(layer, name, p)
        out = layer(xv, return_dtype=dt)
        return (out.astype(mx.float32) * mx.array(cot)).sum(), out

    args = [mx.array(x.astype(np.float32)).astype(dt)] + [mx.array(p.astype(np.float32)) for p in params]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the layer's fallback on a failing kernel
        (_, out), grads = mx.value_and_grad(loss, argnums=(0, 1, 2, 3, 4))(*args)
        mx.eval(out, grads)
    to64 = lambda a: np.array(a.astype(mx.float32)).astype(np.float64)
    return to64(out), [to64(g) for g in grads]


# Tolerances: float32 kernels sum in their own order; half types round the
# inputs and the output (the float64 reference reads the rounded inputs).
TOL = {"float32": 2e-4, "bfloat16": 4e-2, "float16": 4e-3}


def rounded(mx, v, dtype):
    return np.array(mx.array(v.astype(np.float32)).astype(getattr(mx, dtype)).astype(mx.float32)).astype(np.float64)


def check_layer(layer_module, metal_module, mx, rng, shape, reference_runs=()):
    """The Metal path against float64 numpy (forward), against the reference
    path of the same layer (forward and gradients), and against each layer in
    `reference_runs` (callables taking the same inputs and returning the same)."""
    B, n, C, dtype, mix_kernel = shape
    x = rng.standard_normal((B, n, C))
    cot = rng.standard_normal((B, n, C))
    params = random_params(rng, n, C)
    inputs = (x, cot, params)
    counts = count_kernels(metal_module)
    out, grads = run_layer(layer_module, mx, inputs, True, dtype)
    assert COMMON_KERNELS | {mix_kernel} <= set(counts), f"kernels launched: {sorted(counts)}"

    tol = TOL[dtype]
    want = mhc_forward64(rounded(mx, x, dtype), *params)
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol, err_msg="forward vs float64")
    runs = [("reference ops", lambda: run_layer(layer_module, mx, inputs, False, dtype))]
    runs += [(name, lambda f=f: f(inputs, dtype)) for name, f in reference_runs]
    for name, run in runs:
        ref_out, ref_grads = run()
        np.testing.assert_allclose(out, ref_out, rtol=tol, atol=tol, err_msg=f"forward vs {name}")
        for g_name, got, ref in zip(["x", "H_pre_raw", "H_post_raw", "H_res_raw", "rms_weight"], grads, ref_grads):
            scale = np.abs(ref).max() + 1e-6
            np.testing.assert_allclose(got / scale, ref / scale, atol=tol * 10,
                                       err_msg=f"gradient of {g_name} vs {name}")
    return counts
