"""Metal 4 tensor kernels (examples/metal4, seed 004) on the GPU against their
peers in the same run (issue 15's speed targets):

- a half matmul2d GEMM (one 128 x 128 tile per threadgroup of four or eight
  SIMD groups, execution_simdgroups<N>, tiles taken 8 tile rows at a time)
  against cuBLAS f16 (torch.matmul);
- the MXFP8 matmul2d GEMM (the same tiling, E4M3 with E8M0 block scales)
  against cuBLASLt FP8 (torch._scaled_mm, E4M3, tensor-wide scales: Hopper has
  no MX block scaling) and cuBLAS bf16;
- the cooperative-tensor flash attention against torch SDPA (flash) at the
  same shape: the seed's kernel (examples/metal4/flash_attention.metal, D 64)
  for information, and the tiled kernel (flash_attention_tiled.metal) at D 64
  and D 128 (the issue's shape).

Each row also gives TFLOP/s and the fraction of the H100 SXM dense peak
(989 TFLOP/s f16/bf16, 1979 FP8). Times: median over 5 rounds of a batch of
launches and one wait. Usage: python3 benchmarks/bench_metal4.py [--out t.md]
[--size 8192] [--seq 4096]
"""
import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "metal4"))

import alloy.core as mx  # noqa: E402
import metal4_common as m4  # noqa: E402

PEAK = {"f16": 989e12, "fp8": 1979e12, "tf32": 494e12}
GEMM = r"""#include <metal_tensor>
#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>
using namespace metal;
using namespace mpp::tensor_ops;
constant int TILE = 128;
using scales_plane = tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>;
using mxfp8_tensor = tensor<device metal_fp8_e4m3_format, dextents<int, 2>, tensor_handle, scales_plane>;

// The tile (column, row) of C that threadgroup tgid computes. Threadgroups
// take the tiles GROUP rows at a time, down each column of the group before
// the next, so the threadgroups that run together read a few panels of A and
// B (shared in L2) rather than every panel of B for each row of tiles.
constant uint GROUP = 8;
inline uint2 tile_of(uint2 tgid, uint2 tiles) {
  const uint id = tgid.y * tiles.x + tgid.x, per_group = GROUP * tiles.x;
  const uint first_row = id / per_group * GROUP, rows = min(tiles.y - first_row, GROUP);
  const uint in_group = id % per_group;
  return uint2(in_group / rows, first_row + in_group % rows);
}

// The tile of C = A B^T that threadgroup tgid computes, A (M x K) and B
// (N x K) row-major (K-major operands); SG SIMD groups share the tile.
template <int SG, bool RELAXED = false, typename AT, typename BT, typename CT>
void tile_gemm(AT A, BT B, CT C, uint2 tgid, uint2 tiles) {
  constexpr auto desc = matmul2d_descriptor(TILE, TILE, dynamic_length_v<int>, false, true, RELAXED);
  matmul2d<desc, execution_simdgroups<SG>> op;
  const uint2 t = tile_of(tgid, tiles);
  op.run(A.slice(0, t.y * TILE), B.slice(0, t.x * TILE), C.slice(t.x * TILE, t.y * TILE));
}

// Half operands.
template <int SG>
kernel void gemm_half(tensor<device const half, dextents<int, 2>> A [[buffer(0)]],
                      tensor<device const half, dextents<int, 2>> B [[buffer(1)]],
                      tensor<device half, dextents<int, 2>> C [[buffer(2)]],
                      uint2 tgid [[threadgroup_position_in_grid]],
                      uint2 tiles [[threadgroups_per_grid]]) {
  tile_gemm<SG>(A, B, C, tgid, tiles);
}

// The same in float: exact (three TF32 MMAs of split operands on the GPU)
// or with relaxed precision (one).
template <int SG, bool RELAXED>
kernel void gemm_float(tensor<device const float, dextents<int, 2>> A [[buffer(0)]],
                       tensor<device const float, dextents<int, 2>> B [[buffer(1)]],
                       tensor<device float, dextents<int, 2>> C [[buffer(2)]],
                       uint2 tgid [[threadgroup_position_in_grid]],
                       uint2 tiles [[threadgroups_per_grid]]) {
  tile_gemm<SG, RELAXED>(A, B, C, tgid, tiles);
}

// MX FP8: exact, or with relaxed precision (on sm_90a each row's block
// scales folded into its codes for the FP8 MMA, cuda_wgmma_requant.h).
template <int SG, bool RELAXED>
kernel void gemm_mxfp8(mxfp8_tensor A [[buffer(0)]],
                       mxfp8_tensor B [[buffer(1)]],
                       tensor<device half, dextents<int, 2>> C [[buffer(2)]],
                       uint2 tgid [[threadgroup_position_in_grid]],
                       uint2 tiles [[threadgroups_per_grid]]) {
  tile_gemm<SG, RELAXED>(A, B, C, tgid, tiles);
}

// MX FP8 (left) beside half (right): on sm_90a the MX side decoded to half
// for the half wgmma (cuda_wgmma_decoded.h).
template <int SG>
kernel void gemm_mxfp8_half(mxfp8_tensor A [[buffer(0)]],
                            tensor<device const half, dextents<int, 2>> B [[buffer(1)]],
                            tensor<device half, dextents<int, 2>> C [[buffer(2)]],
                            uint2 tgid [[threadgroup_position_in_grid]],
                            uint2 tiles [[threadgroups_per_grid]]) {
  tile_gemm<SG>(A, B, C, tgid, tiles);
}
"""
for _sg in (4, 8):
    GEMM += (f'template [[host_name("gemm_half_{_sg}")]] kernel void gemm_half<{_sg}>(tensor<device const half, '
             f'dextents<int, 2>>, tensor<device const half, dextents<int, 2>>, tensor<device half, dextents<int, 2>>, '
             f'uint2, uint2);\n'
             f'template [[host_name("gemm_mxfp8_{_sg}")]] kernel void gemm_mxfp8<{_sg}, false>(mxfp8_tensor, '
             f'mxfp8_tensor, tensor<device half, dextents<int, 2>>, uint2, uint2);\n'
             f'template [[host_name("gemm_mxfp8_relaxed_{_sg}")]] kernel void gemm_mxfp8<{_sg}, true>(mxfp8_tensor, '
             f'mxfp8_tensor, tensor<device half, dextents<int, 2>>, uint2, uint2);\n'
             f'template [[host_name("gemm_mxfp8_half_{_sg}")]] kernel void gemm_mxfp8_half<{_sg}>(mxfp8_tensor, '
             f'tensor<device const half, dextents<int, 2>>, tensor<device half, dextents<int, 2>>, uint2, uint2);\n')
    for _rel in (False, True):
        GEMM += (f'template [[host_name("gemm_float{"_relaxed" if _rel else ""}_{_sg}")]] kernel void '
                 f'gemm_float<{_sg}, {str(_rel).lower()}>(tensor<device const float, dextents<int, 2>>, '
                 f'tensor<device const float, dextents<int, 2>>, tensor<device float, dextents<int, 2>>, uint2, uint2);\n')

rows = []


def fmt(v):
    return "n/a" if v is None else (f"{v:.3f} ms" if v >= 0.1 else f"{v * 1e3:.1f} us")


def row(what, ours, peer_name, peer, flops, peak, note=""):
    ratio = ours / peer if (ours and peer) else None
    tf = flops / (ours * 1e-3) if ours else None
    tf_peer = flops / (peer * 1e-3) if peer else None
    rows.append((what, ours, tf, peer_name, peer, tf_peer, ratio, tf / peak if tf else None, note))
    print(f"{what:34s} alloy {fmt(ours):>10s} {tf / 1e12 if tf else 0:7.1f} TF/s  {peer_name} {fmt(peer):>10s} "
          f"{tf_peer / 1e12 if tf_peer else 0:7.1f} TF/s  alloy/peer time {ratio or 0:.2f}x  "
          f"{100 * tf / peak if tf else 0:.1f}% of peak  {note}", flush=True)


def timed(fn, sync, reps=5, batch=5):
    sync(fn())
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        outs = [fn() for _ in range(batch)]
        sync(outs)
        times.append((time.perf_counter() - t0) * 1e3 / batch)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--fa-configs", type=lambda t: [tuple(int(x) for x in c.split("x")) for c in t.split(",")],
                    default=[(8, 64), (4, 64, 0, 1), (4, 64, 0, 1, 32), (4, 64, 1, 0, 32)], help="tiled attention configs: SIMDGROUPSxBK[xPREFETCH[xQ_STAGED[xROWS]]],...")
    ap.add_argument("--fa-dims", type=lambda t: [int(x) for x in t.split(",")], default=[64, 128],
                    help="head dimensions of the flash attentions")
    ap.add_argument("--skip-gemm", action="store_true")
    ap.add_argument("--skip-fa", action="store_true", help="skip the flash attentions")
    ap.add_argument("--skip-float", action="store_true", help="skip the float GEMMs")
    args = ap.parse_args()
    import torch

    mx.set_default_device(mx.gpu)
    tsync = lambda _: torch.cuda.synchronize()  # noqa: E731
    alloy_sync = lambda outs: mx.eval(outs)  # noqa: E731
    rng = np.random.default_rng(0)
    n = args.size
    flops = 2.0 * n ** 3
    lib = mx.fast.metal_library(GEMM)

    if not args.skip_gemm:
        # ---- half GEMM
        a = rng.standard_normal((n, n)).astype(np.float16)
        b = rng.standard_normal((n, n)).astype(np.float16)
        xa, xb = mx.array(a), mx.array(b)

        def gemm(name, sg, a_arg, b_arg, want, out=mx.float16):
            """One launch of a GEMM kernel with `sg` SIMD groups, and the max
            relative error of its leading block against `want` (that block, float64)."""
            rows = want.shape[0]
            launch = lambda: lib.kernel(f"{name}_{sg}")(  # noqa: E731
                args={"A": a_arg, "B": b_arg, "C": ((n, n), out)}, grid=(n // 128, n // 128, 1),
                threadgroup=(32 * sg, 1, 1), dispatch="threadgroups")[0]
            got = np.array(launch()[:rows, :rows]).astype(np.float64)
            return launch, float(np.max(np.abs(got - want)) / np.max(np.abs(want)))

        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        want = (ta[:256].double() @ tb[:256].double().T).cpu().numpy()
        cublas = timed(lambda: ta @ tb.T, tsync)
        for sg in (4, 8):
            half, err = gemm("gemm_half", sg, xa, xb, want)
            row(f"half matmul2d GEMM {n}^3, {sg} SIMD groups", timed(half, alloy_sync), "cuBLAS f16", cublas, flops,
                PEAK["f16"], f"max rel err {err:.1e}")

        # ---- float GEMM: exact against cuBLAS SGEMM, relaxed against cuBLAS on TF32
        if not args.skip_float:
            fa32, fb32 = a.astype(np.float32), b.astype(np.float32)
            xa32, xb32 = mx.array(fa32), mx.array(fb32)
            ta32, tb32 = ta.float(), tb.float()
            torch.backends.cuda.matmul.allow_tf32 = False
            sgemm = timed(lambda: ta32 @ tb32.T, tsync)
            torch.backends.cuda.matmul.allow_tf32 = True
            tf32 = timed(lambda: ta32 @ tb32.T, tsync)
            torch.backends.cuda.matmul.allow_tf32 = False
            for sg in (4, 8):
                exact, err = gemm("gemm_float", sg, xa32, xb32, want, mx.float32)
                row(f"float matmul2d GEMM {n}^3, {sg} SIMD groups", timed(exact, alloy_sync), "cuBLAS f32", sgemm,
                    flops, PEAK["tf32"], f"max rel err {err:.1e}")
                relaxed, err = gemm("gemm_float_relaxed", sg, xa32, xb32, want, mx.float32)
                row(f"float matmul2d GEMM {n}^3, relaxed, {sg} SG", timed(relaxed, alloy_sync), "cuBLAS TF32", tf32,
                    flops, PEAK["tf32"], f"max rel err {err:.1e}")
            del xa32, xb32, ta32, tb32

        # ---- MXFP8 GEMM
        codes_a, scales_a = m4.random_mxfp8(rng, n, n)
        codes_b, scales_b = m4.random_mxfp8(rng, n, n)
        qa = (mx.array(codes_a), mx.array(scales_a))
        qb = (mx.array(codes_b), mx.array(scales_b))
        want = m4.dequantize(codes_a[:64], scales_a[:64]) @ m4.dequantize(codes_b[:64], scales_b[:64]).T
        t8a = torch.from_numpy(codes_a).cuda().view(torch.float8_e4m3fn)
        t8b = torch.from_numpy(codes_b).cuda().view(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda")
        peer = timed(lambda: torch._scaled_mm(t8a, t8b.T, scale_a=one, scale_b=one, out_dtype=torch.float16), tsync)
        tba, tbb = ta.bfloat16(), tb.bfloat16()
        bf16 = timed(lambda: tba @ tbb.T, tsync)
        for sg in (4, 8):
            mxfp8, err = gemm("gemm_mxfp8", sg, qa, qb, want)
            t_ours = timed(mxfp8, alloy_sync)
            row(f"MXFP8 matmul2d GEMM {n}^3, {sg} SIMD groups", t_ours, "cuBLASLt FP8", peer, flops, PEAK["fp8"],
                f"max rel err {err:.1e}")
            row(f"MXFP8 matmul2d GEMM {n}^3, {sg} SIMD groups (info)", t_ours, "cuBLAS bf16", bf16, flops, PEAK["fp8"])
        for sg in (4, 8):
            relaxed, err = gemm("gemm_mxfp8_relaxed", sg, qa, qb, want)
            row(f"MXFP8 matmul2d GEMM {n}^3, relaxed precision, {sg} SIMD groups", timed(relaxed, alloy_sync),
                "cuBLASLt FP8", peer, flops, PEAK["fp8"], f"max rel err {err:.1e}")
        # The same on MXFP8 quantized from normal data (Alloy's mx.quantize,
        # mode mxfp8): codes near the top of each block's range and block
        # scales within an octave or two along a row, as quantized weights
        # and activations are (the data above draws every code and spreads
        # the scales over 12 octaves).
        codes_a, scales_a = m4.mxfp8_from_float(rng.standard_normal((n, n)).astype(np.float32))
        codes_b, scales_b = m4.mxfp8_from_float(rng.standard_normal((n, n)).astype(np.float32))
        qa = (mx.array(codes_a), mx.array(scales_a))
        qb = (mx.array(codes_b), mx.array(scales_b))
        want = m4.dequantize(codes_a[:64], scales_a[:64]) @ m4.dequantize(codes_b[:64], scales_b[:64]).T
        for name, what in (("gemm_mxfp8", "exact"), ("gemm_mxfp8_relaxed", "relaxed precision")):
            kernel, err = gemm(name, 8, qa, qb, want)
            row(f"MXFP8 matmul2d GEMM {n}^3, quantized normal data, {what}, 8 SIMD groups", timed(kernel, alloy_sync),
                "cuBLASLt FP8", peer, flops, PEAK["fp8"], f"max rel err {err:.1e}")
        if not args.skip_float:
            # MX FP8 x half (info: cuBLAS has no such pair; its f16 GEMM for scale). On
            # sm_90a the MX side is decoded to half for the half wgmma.
            want = m4.dequantize(codes_a[:64], scales_a[:64]) @ b[:64].astype(np.float64).T
            for sg in (4, 8):
                mixed, err = gemm("gemm_mxfp8_half", sg, qa, xb, want)
                row(f"MXFP8 x half matmul2d GEMM {n}^3, {sg} SIMD groups (info)", timed(mixed, alloy_sync),
                    "cuBLAS f16", cublas, flops, PEAK["f16"], f"max rel err {err:.1e}")

    # ---- flash attention: the seed's kernel (D 64, info) and the tiled one
    import attention_driver as fa
    B, H, S = 4, 32, args.seq
    for D in () if args.skip_fa else args.fa_dims:
        q, k, v = (rng.standard_normal((B * H, S, D)).astype(np.float16) for _ in range(3))
        xq, xk, xv = mx.array(q), mx.array(k), mx.array(v)
        scale = 1.0 / np.sqrt(D)
        tq, tk, tv = (torch.from_numpy(x).cuda().view(B, H, S, D) for x in (q, k, v))
        sdpa = lambda: torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, scale=scale)  # noqa: E731
        t_sdpa = timed(sdpa, tsync)
        flops_fa = 4.0 * B * H * S * S * D
        want = fa.reference(q[:1], k[:1], v[:1], scale)[0, :256]
        runs = [(f"seed flash attention (info) B{B} H{H} S{S} D{D}", lambda: fa.run(xq, xk, xv, scale))] if D == fa.D \
            else []
        for nsimd, bk, *rest in args.fa_configs:
            pre = rest[0] if rest else 1  # prefetch the next K/V block (default on)
            qsh = rest[1] if len(rest) > 1 else 0  # Q in threadgroup memory (default off)
            q_rows = rest[2] if len(rest) > 2 else 16  # query rows per SIMD group
            runs.append((f"tiled flash attention B{B} H{H} S{S} D{D}, {nsimd} SG, BK {bk}"
                         + ("" if pre else ", no prefetch") + (", Q staged" if qsh else "")
                         + ("" if q_rows == 16 else f", {q_rows} rows a SG"),
                         lambda nsimd=nsimd, bk=bk, pre=pre, qsh=qsh, q_rows=q_rows: fa.run_tiled(
                             xq, xk, xv, scale, nsimd=nsimd, bk=bk, prefetch=pre, q_shared=qsh, rows=q_rows)))
        for what, fn in runs:
            got = np.array(fn()[0, :256]).astype(np.float64)
            err = float(np.max(np.abs(got - want)))
            row(what, timed(fn, alloy_sync, reps=3, batch=2), "torch SDPA", t_sdpa, flops_fa, PEAK["f16"],
                f"max abs err {err:.1e}")

    if args.out:
        lines = ["| workload | alloy | TFLOP/s | peer | peer time | peer TFLOP/s | alloy/peer time | % of peak | note |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for what, o, tf, pn, p, tfp, r, frac, note in rows:
            lines.append(f"| {what} | {fmt(o)} | {tf / 1e12:.1f} | {pn} | {fmt(p)} | {tfp / 1e12:.1f} | "
                         f"{r:.2f}x | {100 * frac:.1f}% | {note} |")
        pathlib.Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
