"""The guide's kernels (examples/guide, seed 001) through mx.fast.metal_library,
each against its peer in the same run:

- GPU: the same algorithm and launch shape hand-written in CUDA
  (benchmarks/cuda/guide_kernels.cu, launched by CuPy), with both outputs
  compared; and, for information, the state of the art on the problem
  (cuBLAS through mx.matmul, softmax and SDPA through torch).
- CPU: numpy doing the same computation.

Times are per launch: the median over 9 rounds of (a batch of launches, one
wait). Usage: python3 benchmarks/bench_guide.py gpu|cpu [--out table.md]
"""
import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "guide"))

import alloy.core as mx  # noqa: E402
import guide_common as g  # noqa: E402

rows = []


def fmt(v):
    return "n/a" if v is None else (f"{v:.3f} ms" if v >= 0.1 else f"{v * 1e3:.1f} us")


def row(what, ours, peer_name, peer, note=""):
    ratio = ours / peer if (ours and peer) else None
    rows.append((what, ours, peer_name, peer, ratio, note))
    r = f"{ratio:.2f}x" if ratio else "-"
    print(f"{what:40s} alloy {fmt(ours):>10s}  {peer_name} {fmt(peer):>10s}  {r:>6s} {note}", flush=True)


def alloy_ms(make, reps=9, batch=10):
    mx.eval(make())
    times = []
    for _ in range(reps):
        outs = [make() for _ in range(batch)]
        t0 = time.perf_counter()
        mx.eval(outs)
        times.append((time.perf_counter() - t0) * 1e3 / batch)
    return statistics.median(times)


def wall_ms(fn, sync, reps=9, batch=10):
    fn()
    sync()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3 / batch)
    return statistics.median(times)


def launch(lib, name, args, grid, tg, dispatch="threads"):
    return lib.kernel(name)(args=args, grid=grid, threadgroup=tg, dispatch=dispatch)[0]


def problems(rng, quick):
    """(label, library, kernel, args, grid, threadgroup, dispatch, numpy inputs)."""
    n = 1 << (20 if quick else 24)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    M = 512 if quick else 2048
    A = rng.standard_normal((M, M)).astype(np.float32)
    B = rng.standard_normal((M, M)).astype(np.float32)
    T = 1024 if quick else 8192
    mat = rng.standard_normal((T, T)).astype(np.float32)
    N, D = (1024, 64) if quick else (4096, 64)
    Q = (rng.standard_normal((N, D)) * 0.5).astype(np.float16)
    K = (rng.standard_normal((N, D)) * 0.5).astype(np.float16)
    S = 512 if quick else 2048  # matmul_simdgroup: square, so A's page stride N is K
    Ah = rng.standard_normal(S * S).astype(np.float16)
    Bh = rng.standard_normal(S * S).astype(np.float16)
    ah, bh = a.astype(np.float16), b.astype(np.float16)
    return dict(n=n, a=a, b=b, ah=ah, bh=bh, M=M, A=A, B=B, T=T, mat=mat, N=N, D=D, Q=Q, K=K, S=S, Ah=Ah, Bh=Bh)


def cpp_peer(opt):
    """benchmarks/cpp/guide_cpu_peer.cpp built with the flags the JIT gives
    CPU kernels (src/jit/host_compiler.cpp, safe math) at -O`opt` (kernels
    split into regions get -O3, others -O2), or None without g++."""
    import ctypes
    import shutil
    import subprocess
    import tempfile
    cxx = shutil.which("g++")
    if not cxx:
        return None
    so = pathlib.Path(tempfile.mkdtemp()) / f"guide_cpu_peer_O{opt}.so"
    subprocess.run([cxx, "-std=c++20", f"-O{opt}", "-fvect-cost-model=cheap", "-fPIC", "-shared", "-fno-exceptions",
                    "-fno-rtti", "-fno-math-errno", "-march=native", "-o", str(so),
                    str(ROOT / "benchmarks" / "cpp" / "guide_cpu_peer.cpp")], check=True)
    return ctypes.CDLL(str(so))


def cpp_peer_rows(p, ours, n, M):
    """The softmax and tiled-GEMM kernels against the same algorithm written
    as C++ loops on one thread (issue 16: within 2x), with both outputs
    compared: built at -O3, the flags these kernels (split into regions) are
    compiled with, and at -O2 for reference. Alloy runs the kernel on its
    CPU pool (ALLOY_NUM_THREADS=1 for one thread)."""
    for opt in (3, 2):
        cpp_peer_rows_at(p, ours, n, M, opt)


def cpp_peer_rows_at(p, ours, n, M, opt):
    import ctypes
    lib = cpp_peer(opt)
    if lib is None:
        return
    f32p = ctypes.POINTER(ctypes.c_float)
    ptr = lambda a: a.ctypes.data_as(f32p)  # noqa: E731
    a = np.ascontiguousarray(p["a"], np.float32)
    soft = np.empty_like(a)
    A, B = np.ascontiguousarray(p["A"], np.float32), np.ascontiguousarray(p["B"], np.float32)
    C = np.empty((M, M), np.float32)
    peers = {
        "softmax_kernel (tg 32)": (lambda: lib.peer_softmax_tg32(ptr(a), ptr(soft), ctypes.c_uint(n)), soft),
        f"matmul_tiled {M}^3": (lambda: lib.peer_matmul_tiled(ptr(A), ptr(B), ptr(C), ctypes.c_uint(M),
                                                              ctypes.c_uint(M), ctypes.c_uint(M)), C),
    }
    for name, (run, out) in peers.items():
        run()
        got = np.array(ours[name]()).reshape(out.shape)
        diff = float(np.abs(got - out).max())
        t_ours, t_peer, ratio = paired_ms(ours[name], run, reps=9, batch=3)
        row(name, t_ours, f"C++ loops -O{opt}", t_peer,
            f"max|diff|={diff:.1e}; median of 9 paired ratios {ratio:.2f}x")


def paired_ms(make, peer, reps, batch):
    """Alloy's kernel and its C++ peer timed in alternating batches: this
    machine's speed drifts by up to 2x over minutes (docs/benchmarks.md,
    2026-11-29), and a pair a few milliseconds apart sees the same speed.
    Returns each side's median and the median of the pairs' ratios."""
    mx.eval(make())
    peer()
    ours, theirs, ratios = [], [], []
    for _ in range(reps):
        outs = [make() for _ in range(batch)]
        t0 = time.perf_counter()
        mx.eval(outs)
        t1 = time.perf_counter()
        for _ in range(batch):
            peer()
        t2 = time.perf_counter()
        ours.append((t1 - t0) * 1e3 / batch)
        theirs.append((t2 - t1) * 1e3 / batch)
        ratios.append((t1 - t0) / (t2 - t1))
    return statistics.median(ours), statistics.median(theirs), statistics.median(ratios)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("device", choices=["cpu", "gpu"])
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    gpu = args.device == "gpu"
    mx.set_default_device(mx.gpu if gpu else mx.cpu)
    rng = np.random.default_rng(0)
    p = problems(rng, args.quick or not gpu)
    n, M, T, N, D = p["n"], p["M"], p["T"], p["N"], p["D"]
    xa, xb = mx.array(p["a"]), mx.array(p["b"])
    xah, xbh = mx.array(p["ah"]), mx.array(p["bh"])
    R = 1024  # simd_reduce_sum: one threadgroup, the only race-free launch of the page's kernel
    xA, xB, xmat = mx.array(p["A"]), mx.array(p["B"]), mx.array(p["mat"])
    xQ, xK = mx.array(p["Q"]), mx.array(p["K"])
    S, xAh, xBh = p["S"], mx.array(p["Ah"]), mx.array(p["Bh"])
    libs = {name: g.library(name) for name in
            ("vector_add", "add_f32_vec4", "scaled_elu", "memory_spaces_demo", "softmax_kernel", "matmul_tiled",
             "access_patterns", "flash_attention", "matmul_simdgroup_fixed", "binary_op", "simd_reduce_sum",
             "optimised_dot_fixed", "silu_gate_fused_fixed", "add_f16_vec8_fixed")}
    ours = {
        "vector_add": lambda: launch(libs["vector_add"], "vector_add", {"a": xa, "b": xb, "out": ((n,), mx.float32)},
                                     (n, 1, 1), (256, 1, 1)),
        "add_f32_vec4": lambda: launch(libs["add_f32_vec4"], "add_f32_vec4",
                                       {"a": xa, "b": xb, "out": ((n,), mx.float32)}, (n // 4, 1, 1), (256, 1, 1)),
        "vector_add_half": lambda: launch(libs["vector_add"], "vector_add_half",
                                          {"a": xah, "b": xbh, "out": ((n,), mx.float16)}, (n, 1, 1), (256, 1, 1)),
        "binary_add_f32": lambda: launch(libs["binary_op"], "binary_add_f32",
                                         {"a": xa, "b": xb, "out": ((n,), mx.float32)}, (n, 1, 1), (256, 1, 1)),
        "binary_add_f16": lambda: launch(libs["binary_op"], "binary_add_f16",
                                         {"a": xah, "b": xbh, "out": ((n,), mx.float16)}, (n, 1, 1), (256, 1, 1)),
        "binary_mul_f32": lambda: launch(libs["binary_op"], "binary_mul_f32",
                                         {"a": xa, "b": xb, "out": ((n,), mx.float32)}, (n, 1, 1), (256, 1, 1)),
        "scaled_elu_f16": lambda: launch(libs["scaled_elu"], "scaled_elu_f16",
                                         {"x": xah, "out": ((n,), mx.float16), "alpha": 1.0}, (n, 1, 1),
                                         (1024, 1, 1)),
        f"simd_reduce_sum n={R}": lambda: launch(libs["simd_reduce_sum"], "simd_reduce_sum",
                                                 {"input": xa, "output": ((R // 32,), mx.float32)}, (R, 1, 1),
                                                 (R, 1, 1)),
        "optimised_dot": lambda: launch(libs["optimised_dot_fixed"], "optimised_dot",
                                        {"a": xah, "b": xbh, "c": ((n // 8,), mx.float32), "len": n},
                                        (n // 8, 1, 1), (256, 1, 1)),
        "silu_gate_fused": lambda: launch(libs["silu_gate_fused_fixed"], "silu_gate_fused",
                                          {"gate": xah, "up": xbh, "out": ((n,), mx.float16)}, (n // 4, 1, 1),
                                          (256, 1, 1)),
        "add_f16_vec8": lambda: launch(libs["add_f16_vec8_fixed"], "add_f16_vec8",
                                       {"a": xah, "b": xbh, "out": ((n,), mx.float16)}, (n // 8, 1, 1), (256, 1, 1)),
        "scaled_elu_f32": lambda: launch(libs["scaled_elu"], "scaled_elu_f32",
                                         {"x": xa, "out": ((n,), mx.float32), "alpha": 1.0}, (n, 1, 1),
                                         (1024, 1, 1)),
        "memory_spaces_demo": lambda: launch(libs["memory_spaces_demo"], "memory_spaces_demo",
                                             {"global_input": xa, "global_output": ((n,), mx.float32), "scale": 2.0,
                                              "shared_tile": 256 * 4}, (n, 1, 1), (256, 1, 1)),
        "softmax_kernel (tg 32)": lambda: launch(libs["softmax_kernel"], "softmax_kernel",
                                                 {"input": xa, "output": ((n,), mx.float32), "n": n, "shmem": 32 * 4},
                                                 (n, 1, 1), (32, 1, 1)),
        f"matmul_tiled {M}^3": lambda: launch(libs["matmul_tiled"], "matmul_tiled",
                                              {"A": xA, "B": xB, "C": ((M, M), mx.float32), "M": M, "N": M, "K": M,
                                               "tileA": 1024, "tileB": 1024}, (M // 16, M // 16, 1), (16, 16, 1),
                                              "threadgroups"),
        f"column_via_transpose {T}^2": lambda: launch(libs["access_patterns"], "column_via_transpose",
                                                      {"mat": xmat, "out": ((T, T), mx.float32), "N": T,
                                                       "tile": 32 * 33 * 4}, (T // 32, T // 32, 1), (32, 32, 1),
                                                      "threadgroups"),
        f"matmul_simdgroup {S}^3": lambda: launch(libs["matmul_simdgroup_fixed"], "matmul_simdgroup",
                                                  {"A": xAh, "B": xBh, "C": ((S * S,), mx.float32), "M": S, "N": S,
                                                   "K": S}, (S // 8, S // 8, 1), (32, 1, 1), "threadgroups"),
        f"flash_attention N={N} D={D}": lambda: launch(libs["flash_attention"], "flash_attention",
                                                        {"Q": xQ, "K": xK, "V": xK, "Out": ((N, D), mx.float16),
                                                         "N": N, "D": D, "scale": 1.0 / np.sqrt(D),
                                                         "kv_tile": 64 * D * 2}, (N, 1, 1), (64, 1, 1)),
    }
    if gpu:
        import cupy as cp
        mod = cp.RawModule(code=(ROOT / "benchmarks" / "cuda" / "guide_kernels.cu").read_text(),
                           options=("-std=c++17",))
        k = mod.get_function
        ca, cb = cp.asarray(p["a"]), cp.asarray(p["b"])
        cah, cbh = cp.asarray(p["ah"]), cp.asarray(p["bh"])
        outh = cp.empty(n, cp.float16)
        outR, outD = cp.empty(R // 32, cp.float32), cp.empty(n // 8, cp.float32)
        cA, cB, cmat = cp.asarray(p["A"]), cp.asarray(p["B"]), cp.asarray(p["mat"])
        cQ, cK = cp.asarray(p["Q"]), cp.asarray(p["K"])
        out = cp.empty(n, cp.float32)
        outM = cp.empty((M, M), cp.float32)
        outT = cp.empty((T, T), cp.float32)
        outA = cp.empty((N, D), cp.float16)
        cAh, cBh, outS = cp.asarray(p["Ah"]), cp.asarray(p["Bh"]), cp.empty(S * S, cp.float32)
        u, f = np.uint32, np.float32
        blocks = lambda total, b: ((total + b - 1) // b,)  # noqa: E731
        hand = {
            "vector_add": (lambda: k("vector_add")(blocks(n, 256), (256,), (ca, cb, out, u(n))), out),
            "add_f32_vec4": (lambda: k("add_f32_vec4")(blocks(n // 4, 256), (256,), (ca, cb, out, u(n // 4))), out),
            "vector_add_half": (lambda: k("vector_add_half")(blocks(n, 256), (256,), (cah, cbh, outh, u(n))), outh),
            "binary_add_f32": (lambda: k("vector_add")(blocks(n, 256), (256,), (ca, cb, out, u(n))), out),
            "binary_add_f16": (lambda: k("vector_add_half")(blocks(n, 256), (256,), (cah, cbh, outh, u(n))), outh),
            "binary_mul_f32": (lambda: k("binary_mul_f32")(blocks(n, 256), (256,), (ca, cb, out, u(n))), out),
            "scaled_elu_f16": (lambda: k("scaled_elu_f16")(blocks(n, 1024), (1024,), (cah, outh, f(1.0), u(n))),
                               outh),
            f"simd_reduce_sum n={R}": (lambda: k("simd_reduce_sum")((1,), (R,), (ca, outR, u(R))), outR),
            "optimised_dot": (lambda: k("optimised_dot")(blocks(n // 8, 256), (256,), (cah, cbh, outD, u(n // 8))),
                              outD),
            "silu_gate_fused": (lambda: k("silu_gate_fused")(blocks(n // 4, 256), (256,), (cah, cbh, outh, u(n // 4))),
                                outh),
            "add_f16_vec8": (lambda: k("add_f16_vec8")(blocks(n // 8, 256), (256,), (cah, cbh, outh, u(n // 8))),
                             outh),
            "scaled_elu_f32": (lambda: k("scaled_elu_f32")(blocks(n, 1024), (1024,), (ca, out, f(1.0), u(n))), out),
            "memory_spaces_demo": (lambda: k("memory_spaces_demo")(blocks(n, 256), (256,), (ca, out, f(2.0), u(n)),
                                                                   shared_mem=1024), out),
            "softmax_kernel (tg 32)": (lambda: k("softmax_kernel")(blocks(n, 32), (32,), (ca, out, u(n))), out),
            f"matmul_tiled {M}^3": (lambda: k("matmul_tiled")((M // 16, M // 16), (16, 16),
                                                              (cA, cB, outM, u(M), u(M), u(M))), outM),
            f"column_via_transpose {T}^2": (lambda: k("column_via_transpose")((T // 32, T // 32), (32, 32),
                                                                              (cmat, outT, u(T))), outT),
            f"matmul_simdgroup {S}^3": (lambda: k("matmul_simdgroup")((S // 8, S // 8), (32,),
                                                                      (cAh, cBh, outS, u(S), u(S), u(S))), outS),
            f"flash_attention N={N} D={D}": (lambda: k("flash_attention")(blocks(N, 64), (64,),
                                                                          (cQ, cK, outA, u(N), u(D),
                                                                           f(1.0 / np.sqrt(D))),
                                                                          shared_mem=64 * D * 2), outA),
        }
        sync = cp.cuda.runtime.deviceSynchronize
        for name, make in ours.items():
            fn, res = hand[name]
            t_ours = alloy_ms(make)
            t_hand = wall_ms(fn, sync)
            fn()
            sync()
            diff = float(np.max(np.abs(np.array(make()).astype(np.float64) - cp.asnumpy(res).astype(np.float64))))
            row(name, t_ours, "hand CUDA", t_hand, f"max|diff| {diff:.2g}")
        # The state of the art on the same problems, for information.
        import torch
        ta = torch.from_numpy(p["a"]).cuda()
        tA, tB = torch.from_numpy(p["A"]).cuda(), torch.from_numpy(p["B"]).cuda()
        tQ = torch.from_numpy(p["Q"]).cuda()[None, None]
        tK = torch.from_numpy(p["K"]).cuda()[None, None]
        tsync = torch.cuda.synchronize
        row("info: softmax_kernel (tg 32) vs torch.softmax, rows of 32", alloy_ms(ours["softmax_kernel (tg 32)"]),
            "torch", wall_ms(lambda: torch.softmax(ta.view(-1, 32), -1), tsync))
        row(f"info: matmul_tiled {M}^3 vs cuBLAS (mx.matmul)", alloy_ms(ours[f"matmul_tiled {M}^3"]),
            "cuBLAS", alloy_ms(lambda: mx.matmul(xA, xB)))
        row(f"info: matmul_simdgroup {S}^3 vs cuBLAS fp16 (mx.matmul)", alloy_ms(ours[f"matmul_simdgroup {S}^3"]),
            "cuBLAS", alloy_ms(lambda: mx.matmul(xAh.reshape(S, S), xBh.reshape(S, S))))
        row(f"info: flash_attention N={N} D={D} vs torch SDPA", alloy_ms(ours[f"flash_attention N={N} D={D}"]),
            "torch SDPA", wall_ms(lambda: torch.nn.functional.scaled_dot_product_attention(tQ, tK, tK), tsync))
    else:
        a64, b64 = p["a"], p["b"]
        ah, bh = p["ah"], p["bh"]
        numpy = {
            "vector_add": lambda: a64 + b64,
            "add_f32_vec4": lambda: a64 + b64,
            "vector_add_half": lambda: ah + bh,
            "binary_add_f32": lambda: a64 + b64,
            "binary_add_f16": lambda: ah + bh,
            "binary_mul_f32": lambda: a64 * b64,
            "scaled_elu_f16": lambda: np.where(ah > 0, ah, np.expm1(ah.astype(np.float32))).astype(np.float16),
            f"simd_reduce_sum n={R}": lambda: a64[:R].reshape(-1, 32).sum(1),
            "optimised_dot": lambda: np.repeat((ah.astype(np.float32) * bh.astype(np.float32)).reshape(-1, 8).sum(1)
                                               .reshape(-1, 32).sum(1), 32),
            "silu_gate_fused": lambda: (lambda u: ah.astype(np.float32) * u / (1 + np.exp(-u)))(
                bh.astype(np.float32)).astype(np.float16),
            "add_f16_vec8": lambda: ah + bh,
            "scaled_elu_f32": lambda: np.where(a64 > 0, a64, np.expm1(a64)),
            "memory_spaces_demo": lambda: a64 * np.float32(2.0),
            "softmax_kernel (tg 32)": lambda: (lambda e: e / e.sum(1, keepdims=True))(
                np.exp(a64.reshape(-1, 32) - a64.reshape(-1, 32).max(1, keepdims=True))),
            f"matmul_tiled {M}^3": lambda: p["A"] @ p["B"],
            f"column_via_transpose {T}^2": lambda: np.ascontiguousarray(p["mat"].T),
            f"matmul_simdgroup {S}^3": lambda: p["Ah"].reshape(S, S).astype(np.float32) @ p["Bh"].reshape(S, S)
            .astype(np.float32),
            f"flash_attention N={N} D={D}": lambda: (lambda s: (lambda e: (e / e.sum(1, keepdims=True)) @ p["K"]
                                                                 .astype(np.float32))(np.exp(s - s.max(1, keepdims=True))))(
                p["Q"].astype(np.float32) @ p["K"].astype(np.float32).T / np.sqrt(D)),
        }
        for name, make in ours.items():
            row(name, alloy_ms(make, reps=5, batch=3), "numpy", wall_ms(numpy[name], lambda: None, reps=5, batch=3))
        cpp_peer_rows(p, ours, n, M)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write("| kernel | alloy | peer | peer time | ratio | note |\n|---|---|---|---|---|---|\n")
            for what, o, pn, pt, r, note in rows:
                fh.write(f"| {what} | {fmt(o)} | {pn} | {fmt(pt)} | {f'{r:.2f}x' if r else '-'} | {note} |\n")


if __name__ == "__main__":
    main()
