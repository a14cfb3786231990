#!/usr/bin/env bash
# On the GPU machine (through the device tool), from the repo root, after
# scripts/gpu_prepare.sh filled .gpu/, .whl/ and .whl-extra/ here (and a
# first call staged .whl-extra/ in /tmp/whl-extra); carry [".gpu", ".whl"]:
#   builds the Python extension against the prebuilt liballoy, runs the C++
#   tests, the whole pytest suite on mx.gpu, and the GPU benchmarks, then
#   prints a short table. Logs go to $OUT when set. STEPS="cpp_jit pytest_gpu ..."
#   runs only the named steps (the build always runs); PYTEST_ARGS narrows pytest;
#   BUILD_TARGETS="core" builds only those targets (alloy.core alone, for a
#   short call with little device time left).
#   The alloy.mlx steps on MLX's CUDA backend need mlx-cuda-13 in /tmp/mlxsite,
#   put there by the two calls ../shared/tools/mlx_cuda_wheel.sh prints.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="${OUT:-/tmp/alloy-gpu-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
export ALLOY_CACHE_DIR=/tmp/alloy-cache
export LD_LIBRARY_PATH="$root/.gpu/lib:${LD_LIBRARY_PATH:-}"

# .whl-extra/'s real-code wheels, staged by an earlier call (gpu_prepare.sh), or carried.
extra=$(ls /tmp/whl-extra/*.whl 2>/dev/null || ls .whl-extra/*.whl 2>/dev/null || true)
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl $extra >/dev/null 2>&1
[ -d .whl/src ] && cp -r .whl/src/. /tmp/site/  # source-only packages (gpu_prepare.sh)
export PYTHONPATH=/tmp/site

declare -A status
step() {  # step NAME LOGFILE COMMAND...
  local name=$1 log=$2; shift 2
  local t0=$(date +%s)
  "$@" >"$out/$log" 2>&1
  local rc=$?
  status[$name]="rc=$rc $(( $(date +%s) - t0 ))s $(grep -E '(passed|failed|PASSED|FAILED|error)' "$out/$log" | tail -1 | cut -c1-90)"
  return $rc
}

step build build.log bash -c "cmake -S . -B /tmp/build -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DALLOY_PREBUILT_LIB=$root/.gpu/lib/liballoy.so -DPython_EXECUTABLE=$(command -v python3) \
  -Dnanobind_DIR=\$(python3 -m nanobind --cmake_dir) -DALLOY_FMT_INCLUDE_DIR=$root/.gpu/include \
  && cmake --build /tmp/build -j16 ${BUILD_TARGETS:+--target $BUILD_TARGETS}"
mkdir -p /tmp/pkg/alloy
cp -r python/alloy/. /tmp/pkg/alloy/
cp /tmp/build/python/core.*.so /tmp/pkg/alloy/ && cp -L .gpu/lib/liballoy.so.0 /tmp/pkg/alloy/
# The op kernels compiled ahead of time, beside liballoy as in the wheel.
cp .gpu/lib/alloy_kernels.aot /tmp/pkg/alloy/
cp /tmp/build/plugin_mlx/*.so /tmp/pkg/alloy/mlx/ 2>/dev/null
export PYTHONPATH=/tmp/pkg:/tmp/site

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/device.txt"
all_steps="cpp_jit cpp_core cpp_msl pytest_gpu cold guide metal4 extension bench bench_guide bench_metal4 bench_faults fusion host load mlx_plugin mlx_plugin_gpu mlx_plugin_bench"
steps=" ${STEPS:-$all_steps} "
want() { [[ "$steps" == *" $1 "* ]]; }
want cpp_jit && step cpp_jit jit.log .gpu/alloy_jit_tests
want cpp_core && step cpp_core core.log env ALLOY_TEST_DEVICE=gpu .gpu/alloy_core_tests
want cpp_msl && step cpp_msl msl.log .gpu/alloy_msl_tests
# Every op kernel the suite compiles at run time because the AOT archive
# lacks it goes to aot_misses.log (none is the goal). Eight processes share
# the GPU: the suite takes under 4 minutes, and each process's kernels wait
# behind the others', which is how work queued late gets tested
# (tests/python/test_gpu_buffer_reuse.py).
# COLUMNS: the summary's FAILED lines keep their messages (the call's output
# is often all that comes back of a failed run).
want pytest_gpu && step pytest_gpu pytest_gpu.log env ALLOY_TEST_DEVICE=gpu ALLOY_AOT_LOG="$out/aot_misses.log" \
  COLUMNS=240 python3 -m pytest -q -p no:cacheprovider ${PYTEST_ARGS:--n 8 tests/python}
# First use in fresh processes with empty caches: AOT kernels against NVRTC and torch.
want cold && step cold cold.log python3 benchmarks/bench_cold_start.py --out "$out/cold.md"
# The guide's kernels through metal_library (examples/guide), each checked and timed.
guide_all() {
  local rc=0
  for f in examples/guide/*.py; do
    [ "$(basename "$f")" = guide_common.py ] && continue
    python3 "$f" gpu || rc=1
  done
  echo "guide drivers: $([ $rc = 0 ] && echo passed || echo failed)"
  return $rc
}
want guide && step guide guide.log guide_all
# The WWDC26 Metal 4 tensor kernels (examples/metal4), each checked and timed.
metal4_all() {
  python3 examples/metal4/mxfp8_matmul.py gpu && python3 examples/metal4/attention_driver.py gpu 4 1000
}
want metal4 && step metal4 metal4.log metal4_all
# The guide's ScaledELU C++ extension (examples/extensions) and metal-cpp host
# program (examples/cpp), built against the
# installed Alloy that carry ["build/install"] brings (make test-example makes it).
extension_check() {
  [ -d build/install ] || { echo "build/install missing: carry it"; return 1; }
  cmake -S examples/extensions/scaled_elu -B /tmp/ext_scaled_elu -G Ninja -DCMAKE_PREFIX_PATH="$root/build/install" \
    -DPython_EXECUTABLE="$(command -v python3)" && cmake --build /tmp/ext_scaled_elu &&
    SCALED_ELU_MODULE_DIR=/tmp/ext_scaled_elu python3 -m pytest -q -p no:cacheprovider -v examples/extensions/scaled_elu &&
    cmake -S examples/cpp -B /tmp/example_cpp -G Ninja -DCMAKE_PREFIX_PATH="$root/build/install" &&
    cmake --build /tmp/example_cpp && /tmp/example_cpp/metal_exp && /tmp/example_cpp/metal_cpp_vector_add
}
want extension && step extension extension.log extension_check
want bench && step bench bench.log python3 benchmarks/bench_gpu.py --out "$out/bench.md"
want bench_guide && step bench_guide bench_guide.log python3 benchmarks/bench_guide.py gpu --out "$out/bench_guide.md"
want bench_metal4 && step bench_metal4 bench_metal4.log python3 benchmarks/bench_metal4.py --out "$out/bench_metal4.md" ${BENCH_METAL4_ARGS:-}
want bench_faults && step bench_faults bench_faults.log python3 benchmarks/bench_fault_costs.py gpu --out "$out/bench_faults.md"
# mx.compile's fused chains against the uncompiled ops and a device copy.
want fusion && step fusion fusion.log python3 benchmarks/bench_compile_fusion.py --device gpu
want host && step host host.log python3 benchmarks/host_cost_gpu.py
want host && step host_cpp host_cpp.log .gpu/alloy_host_cost
want host && ALLOY_EVAL_PROFILE=1 python3 benchmarks/host_cost_gpu.py > "$out/host_profile.log" 2>&1
# alloy.mlx: on MLX's CPU backend (the mlx-cpu wheel), then on its CUDA
# backend (mlx-cuda-13, which shadows it from /tmp/mlxsite).
want mlx_plugin && step mlx_plugin mlx_plugin.log python3 -m pytest -q -p no:cacheprovider tests/mlx_plugin
if [ -d /tmp/mlxsite/mlx ]; then
  want mlx_plugin_gpu && step mlx_plugin_gpu mlx_plugin_gpu.log env PYTHONPATH=/tmp/mlxsite:$PYTHONPATH \
    ALLOY_TEST_DEVICE=gpu python3 -m pytest -q -p no:cacheprovider tests/mlx_plugin
  # Every kernel launched directly on MLX's stream (the path of large ones),
  # and every kernel as a node of MLX's graphs.
  want mlx_plugin_gpu && step mlx_plugin_gpu_direct mlx_plugin_gpu_direct.log env PYTHONPATH=/tmp/mlxsite:$PYTHONPATH \
    ALLOY_TEST_DEVICE=gpu ALLOY_MLX_COMMIT_THREADS=1 python3 -m pytest -q -p no:cacheprovider tests/mlx_plugin
  want mlx_plugin_gpu && step mlx_plugin_gpu_graph mlx_plugin_gpu_graph.log env PYTHONPATH=/tmp/mlxsite:$PYTHONPATH \
    ALLOY_TEST_DEVICE=gpu ALLOY_MLX_COMMIT_THREADS=1 ALLOY_MLX_LAUNCH=graph python3 -m pytest -q -p no:cacheprovider tests/mlx_plugin
  want mlx_plugin_bench && step mlx_plugin_bench mlx_plugin_bench.log env PYTHONPATH=/tmp/mlxsite:$PYTHONPATH \
    python3 benchmarks/bench_mlx_plugin.py --out "$out/mlx_plugin_bench.md"
  # The same with large kernels as one-node graphs (the former default), for comparison.
  want mlx_plugin_bench && step mlx_plugin_bench_graph mlx_plugin_bench_graph.log env PYTHONPATH=/tmp/mlxsite:$PYTHONPATH \
    ALLOY_MLX_LAUNCH=graph python3 benchmarks/bench_mlx_plugin.py --out "$out/mlx_plugin_bench_graph.md"
fi
# First compile, then five disk-cache loads in fresh processes, each with its
# breakdown and the host time per stage.
load_probe() {
  local cache=/tmp/alloy-load-probe-$$
  rm -rf "$cache"
  echo "compile: $(ALLOY_CACHE_DIR=$cache python3 benchmarks/compile_probe.py --breakdown 2>&1 | tr '\n' ' ')"
  for i in 1 2 3 4 5; do
    echo "load: $(ALLOY_CACHE_DIR=$cache python3 benchmarks/compile_probe.py --breakdown 2>&1 | tr '\n' ' ')"
  done
  ALLOY_CACHE_DIR=$cache ALLOY_EVAL_PROFILE=1 python3 benchmarks/compile_probe.py 2>&1
  rm -rf "$cache"
}
want load && step load load.log load_probe

echo
echo "== alloy gpu_check on $(cat "$out/device.txt") =="
for k in build $all_steps mlx_plugin_gpu_direct mlx_plugin_gpu_graph mlx_plugin_bench_graph; do
  printf '%-11s %s\n' "$k" "${status[$k]:-not run}"; done
echo
[ -f "$out/bench.md" ] && cat "$out/bench.md"
[ -f "$out/bench_faults.md" ] && { echo; echo "cost of bounds checks and the cancellation poll:"; cat "$out/bench_faults.md"; }
[ -f "$out/fusion.log" ] && { echo; echo "mx.compile fusion:"; grep -E '^(\||device-to-device)' "$out/fusion.log"; }
want pytest_gpu && { echo; echo "op kernels compiled at run time (not in the AOT archive): $(sort -u "$out/aot_misses.log" 2>/dev/null | wc -l)"; sort -u "$out/aot_misses.log" 2>/dev/null | head -20; }
[ -f "$out/cold.md" ] && { echo; echo "cold start:"; cat "$out/cold.md"; }
want host && { echo; echo "host cost of a tiny call (us):"; grep '^|' "$out/host.log"; grep '^|' "$out/host_cpp.log"; grep -A30 "eval profile" "$out/host_profile.log"; }
want load && { echo; echo "compile and disk-cache load (ms):"; cat "$out/load.log"; }
[ -f "$out/mlx_plugin_bench.md" ] && { echo; echo "alloy.mlx on mlx-cuda:"; cat "$out/mlx_plugin_bench.md"; }
[ -f "$out/mlx_plugin_bench_graph.md" ] && { echo; echo "alloy.mlx on mlx-cuda, ALLOY_MLX_LAUNCH=graph:"; cat "$out/mlx_plugin_bench_graph.md"; }
grep -E "^(FAILED|ERROR)" "$out/pytest_gpu.log" "$out/mlx_plugin.log" "$out/mlx_plugin_gpu"*.log 2>/dev/null | head -40
exit 0
