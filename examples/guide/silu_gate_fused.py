"""Driver for silu_gate_fused.metal (the page's "Fused SiLU Gate (Llama MLP)")
and its fix silu_gate_fused_fixed.metal.

As written the kernel is not valid MSL: `uint4 id [[thread_position_in_grid]]`
-- Metal allows uint, uint2, uint3 (and ushort, ushort2, ushort3) for that
attribute, never a 4-vector. Building the verbatim file raises RuntimeError
naming the line. The fix changes `uint4` to `uint3` (one token; `id.x` then
still reads the 1-D position).

What the fixed kernel computes (grid = n/4 threads, 4 halves per thread):
    out = gate * silu(up) = gate * up / (1 + exp(-up)), in float, rounded to half.
Quirks (kept in both files):
  * SiLU is applied to `up`, and `gate` multiplies: Llama's MLP (the
    page's LlamaMLP) is silu(gate) * up, so the fused op is not the one it
    replaces.
  * No bounds check and no length: n must be a multiple of 4 and the grid
    exactly n/4 threads; the half4 loads through pointer casts need the
    buffers 8-byte aligned.

Run: python examples/guide/silu_gate_fused.py [cpu|gpu]
"""
import numpy as np

import alloy.core as mx
import guide_common as g


def run(gate, up, out=None):
    n = gate.size
    assert n % 4 == 0
    k = g.library("silu_gate_fused_fixed").kernel("silu_gate_fused")
    return k(args={"gate": gate, "up": up, "out": out if out is not None else ((n,), mx.float16)},
             grid=(n // 4, 1, 1), threadgroup=(256, 1, 1), dispatch="threads")[0]


def main():
    dev = g.device_from_argv()
    try:
        g.library("silu_gate_fused")
        print("silu_gate_fused.metal (verbatim) built: uint4 was expected to be refused")
        raise SystemExit(1)
    except RuntimeError as e:
        print(f"silu_gate_fused.metal (verbatim) refused, as Apple's compiler does:\n  {e}")
    rng = np.random.default_rng(0)
    n = 4 * 250_001
    gate_np = (2 * rng.standard_normal(n)).astype(np.float16)
    up_np = (2 * rng.standard_normal(n)).astype(np.float16)
    gate, up = mx.array(gate_np), mx.array(up_np)
    got = run(gate, up, out=g.nan_like((n,), mx.float16))
    t = g.median_time(lambda: [run(gate, up)])
    g.report(f"silu_gate_fused (fixed) n={n} [{dev}]", got, g.ref_silu_gate_fused(gate_np, up_np), t, 2e-3, 2e-3)


if __name__ == "__main__":
    main()
