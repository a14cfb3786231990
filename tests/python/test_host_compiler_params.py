"""Kernels split into regions compile with GCC's tuning parameters under
the name the host compiler knows: GCC 13 renamed `max-unswitch-level` to
`max-unswitch-depth` (a GPU server with a newer GCC refused every region
kernel before), and clang takes no `--param` at all. Two stand-in compilers
wrap this machine's own: one that knows only the new name, one that refuses
any `--param`. Each compiles a kernel with a barrier and a SIMD-group sum,
which runs as regions and gives numpy's numbers; so does clang++ itself
(it refuses GCC's `-fvect-cost-model=`; clang 14 takes `--param` and
ignores it with a warning; and it has no `__builtin_aligned_alloc`). A second process finds
the kernel in the cache without asking the compiler about its parameters
(the cache key hashes the flags as asked for, with the compiler's identity)."""
import os
import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest

PROGRAM = r"""
import sys
import numpy as np
import alloy.core as mx
x = np.random.default_rng(int(sys.argv[1])).standard_normal(256).astype(np.float32)
k = mx.fast.metal_kernel(name="params_probe", input_names=["x"], output_names=["y"], source='''
    uint t = thread_position_in_threadgroup.x;
    threadgroup float shared[64];
    shared[t] = x[thread_position_in_grid.x] * 2;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    y[thread_position_in_grid.x] = simd_sum(shared[63 - t]);
''')
y = k(inputs=[mx.array(x)], grid=(256, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(256,)],
      output_dtypes=[mx.float32], init_value=float("nan"), verbose=True, stream=mx.cpu)[0]
print("RESULT", " ".join(repr(float(v)) for v in np.array(y)))
"""

# A compiler that knows only GCC 13's name for the parameter (and passes it
# on to the real one under the name that one knows).
NEW_NAME = r"""#!/bin/sh
echo "$*" >> "$(dirname "$0")/args.log"
args=""
for a in "$@"; do
  case "$a" in
    --param=max-unswitch-level=*) echo "unrecognized command-line option '$a'" >&2; exit 1;;
    --param=max-unswitch-depth=*) a="--param=REAL_NAME=${a#--param=max-unswitch-depth=}";;
  esac
  args="$args '$a'"
done
eval exec "'REAL'" $args
"""
# A compiler that takes no --param (as clang).
NO_PARAMS = r"""#!/bin/sh
echo "$*" >> "$(dirname "$0")/args.log"
for a in "$@"; do
  case "$a" in --param=*) echo "unknown argument: '$a'" >&2; exit 1;; esac
done
exec 'REAL' "$@"
"""


def expected(seed):
    """PROGRAM's output in float64: each thread's SIMD group's sum of the
    reversed, doubled inputs of its threadgroup."""
    x = np.random.default_rng(seed).standard_normal(256).astype(np.float64) * 2
    return np.array([x[g * 64:(g + 1) * 64][::-1][(t // 32) * 32:(t // 32) * 32 + 32].sum()
                     for g in range(4) for t in range(64)])


def run_through(tmp_path, rng, script):
    """PROGRAM in a fresh process through the stand-in compiler `script`
    (a shell script; args.log beside it): checks the numbers; returns the
    seed, the process and the compile lines the stand-in saw."""
    wrapper = tmp_path / "c++"
    wrapper.write_text(script)
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    seed = int(rng.integers(1 << 30))
    env = dict(os.environ, ALLOY_CXX=str(wrapper), ALLOY_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("ALLOY_CHECK_CUDA", None)
    r = subprocess.run([sys.executable, "-c", PROGRAM, str(seed)], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Threads run as regions." in r.stdout
    got = np.array([float(v) for v in r.stdout.split("RESULT", 1)[1].split()], dtype=np.float32)
    np.testing.assert_allclose(got, expected(seed), rtol=1e-5, atol=1e-5)
    compiles = [line for line in (tmp_path / "args.log").read_text().splitlines() if "-shared" in line]
    assert compiles, "the kernel was not compiled by the stand-in compiler"
    return seed, env, r, compiles


@pytest.mark.parametrize("script, wanted", [(NEW_NAME, "--param=max-unswitch-depth=4"), (NO_PARAMS, None)])
def test_region_kernels_compile_with_the_compilers_own_parameters(tmp_path, rng, script, wanted):
    real = shutil.which("g++")
    if real is None:
        pytest.skip("needs g++ to wrap")  # every machine that builds Alloy has it
    # The real compiler's own name for the parameter (GCC 12's or 13's).
    old_name = subprocess.run([real, "--param=max-unswitch-level=4", "-fsyntax-only", "-x", "c++", "/dev/null"],
                              capture_output=True).returncode == 0
    script = script.replace("REAL_NAME", "max-unswitch-level" if old_name else "max-unswitch-depth")
    seed, env, r, compiles = run_through(tmp_path, rng, script.replace("REAL", real))
    for line in compiles:
        if wanted:
            assert wanted in line and "max-unswitch-level" not in line
        else:
            assert "--param" not in line
    (tmp_path / "args.log").write_text("")
    again = subprocess.run([sys.executable, "-c", PROGRAM, str(seed)], capture_output=True, text=True, env=env,
                           timeout=600)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert again.stdout.split("RESULT", 1)[1] == r.stdout.split("RESULT", 1)[1]
    calls = (tmp_path / "args.log").read_text().splitlines()
    assert not [c for c in calls if "-shared" in c or "--param" in c], calls


LOGGING = r"""#!/bin/sh
echo "$*" >> "$(dirname "$0")/args.log"
exec 'REAL' "$@"
"""


def clang_with_float16(tmp_path):
    """The installed clang++ (newest first) and whether it has _Float16 for
    this CPU: clang before 15 has it on x86 only with AVX512-FP16."""
    names = [f"clang++-{v}" for v in range(20, 14, -1)] + ["clang++"]
    found = [shutil.which(n) for n in names if shutil.which(n)]
    if not found:
        pytest.skip("needs clang++ (the Makefile's packages install it)")
    probe = tmp_path / "half.cpp"
    probe.write_text("_Float16 twice(_Float16 h) { return h + h; }\n")
    for real in found:
        r = subprocess.run([real, "-std=c++20", "-march=native", "-fsyntax-only", str(probe)], capture_output=True)
        if r.returncode == 0:
            return real, True
    return found[0], False


def test_region_kernels_compile_with_clang(tmp_path, rng):
    real, has_half = clang_with_float16(tmp_path)
    if not has_half:
        # Every kernel fails to compile there (Metal's half is _Float16): the
        # error names the compiler and the fix instead of only clang's dump.
        wrapper = tmp_path / "c++"
        wrapper.write_text(LOGGING.replace("REAL", real))
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
        env = dict(os.environ, ALLOY_CXX=str(wrapper), ALLOY_CACHE_DIR=str(tmp_path / "cache"))
        r = subprocess.run([sys.executable, "-c", PROGRAM, "1"], capture_output=True, text=True, env=env, timeout=600)
        assert r.returncode != 0
        assert "has no _Float16 (Metal's half) for this CPU" in r.stderr, r.stderr[-3000:]
        assert "Set ALLOY_CXX to g++ (12 or later) or clang++ 15 or later" in r.stderr
        return
    _, _, _, compiles = run_through(tmp_path, rng, LOGGING.replace("REAL", real))
    assert not [c for c in compiles if "-fvect-cost-model" in c], compiles
