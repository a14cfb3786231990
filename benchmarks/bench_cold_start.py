"""First use on a fresh process with an empty kernel cache: the issue-17
program (mx.ones, exp*2+1, sum, softmax(random.normal), a gather, a matmul on
the GPU), timed from before `import` to its last result on the host.

Rows, each the median of --runs fresh processes:
  alloy, AOT kernels      built-in ops load their cubins from alloy_kernels.aot
                          (ALLOY_AOT=require: a missing one would be an error)
  alloy, NVRTC            ALLOY_AOT=0: every op kernel compiled on first use
  torch                   PyTorch's same program, import included
The AOT row also checks that libnvrtc was never loaded into the process.

  python benchmarks/bench_cold_start.py [--runs 5] [--out cold.md]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ALLOY_PROGRAM = r"""
import time, json
t0 = time.perf_counter()
phases = {}
def mark(name):
    phases[name] = time.perf_counter() - t0 - sum(phases.values())
import alloy.core as mx
mark("import")
mx.set_default_device(mx.gpu)
a = mx.ones((64,), dtype=mx.float16)
mx.eval(a)
mark("ones (context)")
mx.random.seed(0)
x = mx.random.normal((512, 1024))
mx.eval(x)
mark("random.normal")
y = mx.exp(x) * 2 + 1
mx.eval(y)
mark("exp*2+1")
s = mx.sum(y)
mx.eval(s)
mark("sum")
p = mx.softmax(x, axis=-1)
mx.eval(p)
mark("softmax")
idx = mx.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=mx.int32)
g = mx.take(x, idx, axis=0)
mx.eval(g)
mark("take")
m = x @ x.T
mx.eval(m)
mark("matmul")
checks = [float(a.sum().item()), float(s.item()), float(p.sum().item()), float(g.sum().item()), float(m[0, 0].item())]
mark("results to host")
total = time.perf_counter() - t0
maps = open("/proc/self/maps").read()
print(json.dumps({"import": phases["import"], "first_op": phases["import"] + phases["ones (context)"], "total": total,
                  "phases": phases, "nvrtc_loaded": "libnvrtc" in maps, "checks": checks}))
"""

TORCH_PROGRAM = r"""
import time, json
t0 = time.perf_counter()
import torch
t_import = time.perf_counter() - t0
a = torch.ones((64,), dtype=torch.float16, device="cuda")
torch.cuda.synchronize()
t_first = time.perf_counter() - t0
x = torch.randn((512, 1024), device="cuda")
y = torch.exp(x) * 2 + 1
s = torch.sum(y)
p = torch.softmax(x, dim=-1)
idx = torch.tensor([3, 1, 4, 1, 5, 9, 2, 6], dtype=torch.int32, device="cuda")
g = torch.index_select(x, 0, idx)
m = x @ x.T
checks = [float(a.sum()), float(s), float(p.sum()), float(g.sum()), float(m[0, 0])]
total = time.perf_counter() - t0
print(json.dumps({"import": t_import, "first_op": t_first, "total": total, "nvrtc_loaded": None, "checks": checks}))
"""


def run(program, env_extra):
    cache = tempfile.mkdtemp(prefix="alloy-cold-")
    env = dict(os.environ, ALLOY_CACHE_DIR=cache, **env_extra)
    try:
        r = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if r.returncode != 0:
        raise RuntimeError(f"cold-start program failed ({env_extra}):\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out")
    ap.add_argument("--rows", default="all", choices=["all", "aot"],
                    help="aot: only the AOT row (a machine without NVRTC)")
    args = ap.parse_args()
    rows = [("alloy, AOT kernels", ALLOY_PROGRAM, {"ALLOY_AOT": "require"}),
            ("alloy, NVRTC (ALLOY_AOT=0)", ALLOY_PROGRAM, {"ALLOY_AOT": "0"})]
    if args.rows == "aot":
        rows = rows[:1]
    else:
        try:
            import torch  # noqa: F401

            rows.append(("torch", TORCH_PROGRAM, {}))
        except ImportError:
            print("torch not installed: no torch row", file=sys.stderr)
    lines = ["| program (fresh process, empty cache) | import ms | first op ms | total ms | libnvrtc loaded |",
             "|---|---:|---:|---:|---|"]
    failed = False
    alloy_checks = []
    breakdown = []
    for name, prog, env in rows:
        results = [run(prog, env) for _ in range(args.runs)]
        if name.startswith("alloy"):
            alloy_checks.append((name, results[0]["checks"]))
        med = {k: statistics.median(r[k] for r in results) * 1e3 for k in ("import", "first_op", "total")}
        loaded = {r["nvrtc_loaded"] for r in results}
        lines.append(f"| {name} | {med['import']:.0f} | {med['first_op']:.0f} | {med['total']:.0f} | "
                     f"{'/'.join(str(x) for x in loaded)} |")
        if "phases" in results[0]:
            phases = {k: statistics.median(r["phases"][k] for r in results) * 1e3 for k in results[0]["phases"]}
            breakdown.append(f"{name}: " + ", ".join(f"{k} {v:.0f}" for k, v in phases.items()))
        if name.startswith("alloy, AOT") and True in loaded:
            print("FAILED: the AOT run loaded libnvrtc", file=sys.stderr)
            failed = True
    # The AOT cubins and NVRTC's compile the same source: the same numbers.
    if len(alloy_checks) == 2:
        (n0, c0), (n1, c1) = alloy_checks
        if any(abs(u - v) > 1e-6 * max(1.0, abs(u)) for u, v in zip(c0, c1)):
            print(f"FAILED: {n0} gave {c0}, {n1} gave {c1}", file=sys.stderr)
            failed = True
    text = "\n".join(lines) + "\n\nmedian ms per step:\n" + "\n".join(breakdown)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
