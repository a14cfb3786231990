"""The GPU timeline of the seed's grid_sample forward, ten calls per eval,
through Alloy's own metal_kernel, through alloy.mlx on MLX's CUDA backend,
and through MLX's own cuda_kernel with the hand-written CUDA (issue 11):
which kernels, memsets and copies each eval puts on the GPU, how long each
runs and how long the GPU waits between them.

The device machine has no Nsight Systems; PyTorch's profiler (CUPTI) records
every CUDA activity of the process, whichever library launched it, so it
sees MLX's and Alloy's kernels alike. Needs torch, mlx-cuda and alloy.mlx:

  python3 scripts/probes/plugin_timeline.py [--evals 5]
"""
import argparse
import pathlib
import statistics
import sys
import time
from collections import defaultdict

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import torch  # noqa: E402  (its profiler only; nothing runs through torch)

import alloy.core as ax  # noqa: E402
from plugin_kernel_profile import forward_paths  # noqa: E402

PER_EVAL = 10
SPLIT_US = 25.0


def gpu_activities(fn, evals):
    """Runs fn `evals` times under the profiler; returns the GPU activities
    of each eval as (start_us, end_us, name), sorted. An eval's activities
    are told apart by the GPU's idle time between evals (the host builds the
    next calls meanwhile), longer than SPLIT_US."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        for i in range(evals):
            with torch.profiler.record_function(f"eval{i}"):
                fn()
    names = {f"eval{i}" for i in range(evals)}
    # The GPU side of each record_function range shows up as a CUDA event
    # of the same name: not an activity.
    gpu = sorted((e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                 if e.device_type == torch.autograd.DeviceType.CUDA and e.name not in names)
    per_eval = [[]]
    for a in gpu:
        if per_eval[-1] and a[0] - per_eval[-1][-1][1] > SPLIT_US:
            per_eval.append([])
        per_eval[-1].append(a)
    return per_eval


def wall_per_eval(fn, evals):
    times = []
    for _ in range(evals):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def report(label, per_eval, wall_us):
    durations = defaultdict(list)
    gaps, spans, counts = [], [], []
    for acts in per_eval[1:]:  # the first eval warms the profiler
        counts.append(len(acts))
        spans.append(acts[-1][1] - acts[0][0])
        for s, e, name in acts:
            durations[name[:70]].append(e - s)
        for (s0, e0, _), (s1, _, _) in zip(acts, acts[1:]):
            gaps.append(s1 - e0)
    span = statistics.median(spans) if spans else 0.0
    print(f"== {label}: {len(per_eval)} evals seen, {statistics.median(counts) if counts else 0} GPU activities an eval; "
          f"wall {wall_us:.1f} us an eval (unprofiled), GPU busy span {span:.1f}, "
          f"the rest {wall_us - span:.1f} us (host before the first kernel and after the last)")
    for name, d in sorted(durations.items(), key=lambda kv: -sum(kv[1])):
        print(f"   {len(d):4d} x {statistics.median(d):8.2f} us (min {min(d):7.2f}, max {max(d):7.2f})  {name}")
    if len(gaps) > 1:
        q = statistics.quantiles(gaps, n=10)
        print(f"   gaps between activities: median {statistics.median(gaps):.2f} us, "
              f"p10 {q[0]:.2f}, p90 {q[-1]:.2f}, max {max(gaps):.2f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--evals", type=int, default=6)
    args = parser.parse_args()
    builds = forward_paths(PER_EVAL)
    runs = {label: (lambda b=b, e=e: e(b())) for label, (b, e) in builds.items()}
    for fn in runs.values():
        for _ in range(4):
            fn()
    ax.fast._wait_for_specialized_kernels()
    print("specialized builds:", ax.fast._specialized_kernels_built())
    for label, fn in runs.items():
        for _ in range(3):
            fn()
        report(label, gpu_activities(fn, args.evals), wall_per_eval(fn, 20))
        build, evaluate = builds[label]
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            arrays = build()
            times.append((time.perf_counter() - t0) * 1e6)
            evaluate(arrays)
        print(f"   building the {PER_EVAL} calls alone (host): {statistics.median(times):.1f} us")


if __name__ == "__main__":
    main()
