"""Real MLX kernels nobody here wrote, on the CPU: how their threads run
(issue 16, item 5). Each kernel, loaded unchanged from its installed package
(tests/pyshared/real_mlx_code.py), is timed with its threads split into
regions (ALLOY_CPU_SYNC=auto, what Alloy picks), as coroutines (what it ran
as before regions took SIMD-group calls in loops and branches every thread
takes, `auto` values across them and calls under branches that differ
between threads), and, as peers, the file's own ops path on Alloy and on real MLX's
CPU backend, in the same process on the same data.

  python benchmarks/bench_cpu_real_kernels.py [--reps 7] [--only norm_add_norm]
"""
import argparse
import os
import pathlib
import sys
import types

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "pyshared"))
from real_mlx_code import core_of, load  # noqa: E402

from timing import median_ms  # noqa: E402


def losses_utils(core):
    # mlx_lm/utils.py imports transformers: its one helper the file needs.
    return {"mlx_lm.utils": types.SimpleNamespace(
        can_run_metal=lambda: core.default_device() == core.gpu and core.metal.is_available())}


def kl_grad(m, core, arrays):
    q, p = arrays
    return core.grad(lambda a, b: m.kl_div_loss(a, b).sum())(q, p)


def bitlinear(m, core, arrays):
    x, w, s = arrays
    layer = m.BitLinear(x.shape[-1], w.shape[0] * 4, bias=False)
    layer.weight, layer.weight_scale = w, s
    return layer(x)


def norm_add_norm(m, core, arrays):
    branch, stream, alpha, beta, w = arrays
    norm = m.nn.RMSNorm(branch.shape[-1], eps=1e-6)
    norm.weight = w
    return m.norm_add_norm(branch, stream, alpha=alpha, beta=beta, post_weight=w, post_eps=1e-5, next_norm=norm)


def qwen21_prologue(m, core, arrays):
    # mflux's attention splits one Q/K/V projection: the kernel reads strided
    # views of it. Without the kernel, the file's composed ops (its RMSNorm
    # modules and _apply_rope), as its _project runs them.
    qkv, nq, nk, cos, sin = arrays
    H, D = 16, 128
    q, k, _ = core.split(qkv, 3, axis=-1)
    out = m.fused_qk_norm_rope(q, k, nq, nk, cos, sin, H, D)
    if out is not None:
        return out
    a = m.Qwen21Attention(dim=H * D, num_heads=H, head_dim=D)
    a.norm_q.weight, a.norm_k.weight = nq, nk
    shape = (*q.shape[:-1], H, D)
    return [core.transpose(m.Qwen21Attention._apply_rope(norm(core.reshape(t, shape)), cos, sin), (0, 2, 1, 3))
            for t, norm in ((q, a.norm_q), (k, a.norm_k))]


def gated_delta(m, core, arrays):
    return m.gated_delta_update(*arrays)


def gated_delta_inputs(masked):
    # Qwen3-Next's shapes but Dk = 64 (the generic simd_sum kernel; 128 takes
    # the packed one), a 32-token chunk.
    B, T, Hk, Hv, Dk, Dv = 1, 32, 8, 16, 64, 64

    def make(r):
        n = lambda *s, scale=1.0: (r.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
        xs = [n(B, T, Hk, Dk, scale=Dk**-0.5), n(B, T, Hk, Dk, scale=Dk**-0.5), n(B, T, Hv, Dv), n(B, T, Hv),
              n(B, T, Hv), n(Hv, scale=0.5), n(Hv, scale=0.5), n(B, Hv, Dv, Dk)]
        if masked:
            mask = r.random((B, T)) < 0.7
            mask[:, 0] = True
            xs.append(mask)
        return xs
    return make


CASES = [
    # (label, module, call, make inputs, substitutes, has an ops path)
    ("mlx-lm KL loss + grad, 8 x 32000", "mlx_lm.tuner.losses", kl_grad,
     lambda r: [r.standard_normal((8, 32000)).astype(np.float32) * 2,
                r.standard_normal((8, 32000)).astype(np.float32) * 2], losses_utils, True),
    ("mlx-lm BitLinear, 16 tokens, 2048 -> 2048", "mlx_lm.models.bitlinear_layers", bitlinear,
     lambda r: [r.standard_normal((16, 2048)).astype(np.float32),
                r.integers(0, 256, (512, 2048)).astype(np.uint8), np.array([1.5], np.float32)], None, False),
    # Its group sums are in a helper of the header (block_sum_once), written out
    # in the body for regions; `coroutines` runs it on fibers, as it ran before.
    ("mlx-lm norm_add_norm, 16 tokens, D 4096", "mlx_lm.kernels.norm_add_norm", norm_add_norm,
     lambda r: [r.standard_normal((16, 4096)).astype(np.float32) for _ in range(2)] +
               [r.standard_normal(4096).astype(np.float32) for _ in range(3)], None, False),
    # Its group sum is a SIMD-group call under `blocks == 1 ? sq : simd_sum(sq)`
    # with a constant `blocks`, which regions now take (coroutines before).
    ("mflux Qwen-Image 2.1 Q/K norm + RoPE, 256 tokens, 16 heads of 128",
     "mflux.models.qwen21.model.qwen21_transformer.qwen21_attention", qwen21_prologue,
     lambda r: [r.standard_normal((1, 256, 3 * 2048)).astype(np.float32),
                r.standard_normal(128).astype(np.float32), r.standard_normal(128).astype(np.float32),
                np.cos(r.uniform(0, 6, (256, 64))).astype(np.float32),
                np.sin(r.uniform(0, 6, (256, 64))).astype(np.float32)], None, True),
    # Its indices and row pointers are `auto` values living across SIMD-group calls.
    ("mlx-lm gated delta, 32 tokens, Hv 16, Dk = Dv = 64", "mlx_lm.models.gated_delta", gated_delta,
     gated_delta_inputs(False), None, True),
    # ...and with a mask: the calls sit under an `if` that differs between threads.
    ("mlx-lm gated delta with a mask, the same shapes", "mlx_lm.models.gated_delta", gated_delta,
     gated_delta_inputs(True), None, True),
]


def to(core, arrays):
    return [core.array(a) for a in arrays]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--only", default="", help="only the cases whose label holds this text")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    ax, mlx = core_of("alloy"), core_of("mlx")
    rows = []
    for label, name, call, make, subs, has_ops in CASES:
        if args.only not in label:
            continue
        data = make(rng)
        times = {}
        for mode in ("auto", "coroutines"):
            os.environ["ALLOY_CPU_SYNC"] = mode
            m = load(name, "alloy", kernels=True, substitutes=subs)
            a = to(ax, data)
            times[mode] = median_ms(lambda: ax.eval(call(m, ax, a)), args.reps)
        os.environ.pop("ALLOY_CPU_SYNC")
        if has_ops:
            m = load(name, "alloy", kernels=False, substitutes=subs)
            a = to(ax, data)
            times["alloy ops"] = median_ms(lambda: ax.eval(call(m, ax, a)), args.reps)
            m = load(name, "mlx", kernels=False, substitutes=subs)
            with mlx.stream(mlx.cpu):
                a = to(mlx, data)
                times["mlx ops"] = median_ms(lambda: mlx.eval(call(m, mlx, a)), args.reps)
        rows.append((label, times))
    print("| kernel | regions (auto) | coroutines | coroutines / regions | Alloy ops path | MLX CPU ops path |"
          " MLX ops / regions |")
    print("|---|---|---|---|---|---|---|")
    for label, t in rows:
        ops = f"{t['alloy ops']:.2f} ms" if "alloy ops" in t else "(none)"
        mops = f"{t['mlx ops']:.2f} ms" if "mlx ops" in t else "(none)"
        ratio = f"{t['mlx ops'] / t['auto']:.2f}x" if "mlx ops" in t else ""
        print(f"| {label} | {t['auto']:.2f} ms | {t['coroutines']:.2f} ms | {t['coroutines'] / t['auto']:.2f}x |"
              f" {ops} | {mops} | {ratio} |")


if __name__ == "__main__":
    main()
