#!/usr/bin/env bash
# On the GPU machine (through the device tool), from the repo root, after
# scripts/gpu_prepare.sh filled .gpu/ and .whl/ here; carry [".gpu", ".whl"]:
#   runs a subset of the GPU pytest suite and the C++ GPU tests under
#   compute-sanitizer, memcheck (out-of-bounds and misaligned accesses,
#   invalid frees, API errors) then racecheck (shared-memory hazards), and
#   prints one line per run with the errors each reported.
#
#   TOOLS="memcheck racecheck"       which tools (default both)
#   PYTEST_ARGS="tests/python/..."   the pytest subset (default: the custom-kernel suites)
#   GTEST_FILTER=...                 the C++ subset (default: every core test, on the GPU)
#   PRINT_LIMIT=50                   errors printed per run
#
# Sanitized runs are 10-100x slower than plain ones: keep the subsets small
# (one call to the device tool runs at most 10 minutes). Logs go to $OUT.
# Exits 1 when any run reports an error (--error-exitcode=1) or fails.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root" || exit 2
out="${OUT:-/tmp/alloy-gpu-out}"
mkdir -p "$out"

# The tree as gpu_check.sh builds it: the Python extension against the
# prebuilt liballoy in /tmp/build, the package in /tmp/pkg, the wheels in
# /tmp/site. STEPS=none runs its build alone.
if ! ls /tmp/pkg/alloy/core.*.so >/dev/null 2>&1; then
  STEPS=none OUT="$out" bash scripts/gpu_check.sh >"$out/sanitize_build.log" 2>&1
  ls /tmp/pkg/alloy/core.*.so >/dev/null 2>&1 || { echo "gpu_sanitize: build failed:"; tail -30 "$out/build.log"; exit 2; }
fi
export PYTHONUNBUFFERED=1
export ALLOY_CACHE_DIR=/tmp/alloy-cache
export LD_LIBRARY_PATH="$root/.gpu/lib:${LD_LIBRARY_PATH:-}"
export PYTHONPATH=/tmp/pkg:/tmp/site
export ALLOY_TEST_DEVICE=gpu

cs=$(command -v compute-sanitizer || find /usr/local/cuda*/bin -name compute-sanitizer 2>/dev/null | head -1)
[ -n "$cs" ] || { echo "gpu_sanitize: compute-sanitizer not found (CUDA toolkit bin/)"; exit 2; }

tools=${TOOLS:-memcheck racecheck}
pytest_args=${PYTEST_ARGS:-tests/python/test_metal_kernel.py tests/python/test_metal_library.py tests/python/test_cuda_kernel.py tests/python/test_simd_divergence.py}
limit=${PRINT_LIMIT:-50}

declare -a summary
rc_all=0
sanitize() {  # sanitize TOOL NAME COMMAND...
  local tool=$1 name=$2; shift 2
  local log="$out/sanitize_${tool}_${name}.log" t0 rc=0
  t0=$(date +%s)
  rm -f "$out/sanitize_${tool}_${name}".*.sanitizer
  # --target-processes all: pytest's own subprocesses (fresh-process tests)
  # too, each with its own report (%p: the process id).
  "$cs" --tool "$tool" --error-exitcode=1 --print-limit="$limit" --target-processes all \
        --log-file "$out/sanitize_${tool}_${name}.%p.sanitizer" "$@" >"$log" 2>&1 || rc=$?
  # "ERROR SUMMARY: N errors" (memcheck) / "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)".
  local errors
  errors=$(cat "$out/sanitize_${tool}_${name}".*.sanitizer 2>/dev/null |
    sed -nE 's/.*ERROR SUMMARY: ([0-9]+) error.*/\1/p; s/.*RACECHECK SUMMARY: .*\(([0-9]+) error.*/\1/p' |
    awk '{n += $1} END {print n + 0}')
  summary+=("$(printf '%-10s %-7s rc=%-3s %5ss %4s errors | %s' "$tool" "$name" "$rc" "$(( $(date +%s) - t0 ))" \
    "$errors" "$(grep -E '(passed|failed|PASSED|FAILED)' "$log" | tail -1 | cut -c1-70)")")
  [ "$rc" -eq 0 ] || rc_all=1
}

for tool in $tools; do
  extra=()
  # racecheck: shared-memory races between a block's threads; report hazards, not advice.
  [ "$tool" = racecheck ] && extra=(--racecheck-report hazard)
  # pytest-timeout's 600 s per test (pyproject) is the plain run's; sanitized runs need longer.
  # shellcheck disable=SC2086
  sanitize "$tool" pytest "${extra[@]}" python3 -m pytest -q -p no:cacheprovider --timeout=3000 -x $pytest_args
  sanitize "$tool" core "${extra[@]}" .gpu/alloy_core_tests --gtest_filter="${GTEST_FILTER:-*}"
  sanitize "$tool" jit "${extra[@]}" .gpu/alloy_jit_tests
done

echo
echo "== alloy gpu_sanitize on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) =="
printf '%s\n' "${summary[@]}"
# The first reports, with their kernels and addresses, from each failing run.
for f in "$out"/sanitize_*.sanitizer; do
  [ -f "$f" ] || continue
  grep -qE '^=+ (Invalid|Race|Error|Program hit|Uninitialized|Misaligned)' "$f" || continue
  echo; echo "-- $(basename "$f" .sanitizer)"
  grep -E -A6 '^=+ (Invalid|Race|Error|Program hit|Uninitialized|Misaligned)' "$f" | head -40
done
exit $rc_all
