#!/usr/bin/env bash
# Fuzzes the MSL front end with libFuzzer (ASan + UBSan) for SECONDS
# (default 60): builds tests/fuzz in build/fuzz with clang, makes the seed
# corpus from the repository's kernels, runs, prints executions and coverage,
# and exits nonzero on any crash, timeout, leak or sanitizer report.
#
#   scripts/fuzz_msl.sh [SECONDS] [extra libFuzzer flags...]
#   JOBS=1 scripts/fuzz_msl.sh 3600          # build with one job
#   scripts/fuzz_msl.sh 3600 -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1
#                                            # keep going past findings (each saved)
#
# Inputs found that reach new code accumulate in build/fuzz/corpus (kept
# between runs); crash artifacts go to build/fuzz/artifacts. Replay one with
#   build/fuzz/tests/fuzz/alloy_msl_fuzz build/fuzz/artifacts/crash-...
# and minimise it with -minimize_crash=1 -runs=100000 (see docs/design/faults.md).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_TO_RUN=${1:-60}
shift || true
# FUZZ_BUILD: another build folder, for a long run that later rebuilds must not disturb.
BUILD=${FUZZ_BUILD:-build/fuzz}
FUZZER=$BUILD/tests/fuzz/alloy_msl_fuzz
export CCACHE_DIR=${CCACHE_DIR:-$PWD/build/ccache}

CXX_FUZZ=${CXX_FUZZ:-$(command -v clang++ || true)}
if [ -z "$CXX_FUZZ" ]; then
  echo "fuzz_msl: clang++ not found (the Debian package clang provides it and libFuzzer)" >&2
  exit 2
fi

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER="$CXX_FUZZ" -DALLOY_FUZZ=ON \
      -DALLOY_BUILD_TESTS=OFF -DALLOY_BUILD_PYTHON=OFF >/dev/null
cmake --build "$BUILD" -j"${JOBS:-$(nproc)}" --target alloy_msl_fuzz

# The seed corpus is remade every run (the repository's kernels change); what
# the fuzzer finds goes to the separate working corpus.
rm -rf "$BUILD/seeds"
python3 scripts/fuzz_corpus.py "$BUILD/seeds"
mkdir -p "$BUILD/corpus" "$BUILD/artifacts"

LOG=$BUILD/fuzz.log
before=$(find "$BUILD/artifacts" -type f | wc -l)
echo "fuzz_msl: running $SECONDS_TO_RUN s (log: $LOG)"
status=0
# Not -jobs/-workers: one process, so a run leaves the other core alone.
"$FUZZER" "$BUILD/corpus" "$BUILD/seeds" \
  -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 \
  -dict=tests/fuzz/msl.dict -print_final_stats=1 \
  -artifact_prefix="$BUILD/artifacts/" "$@" >"$LOG" 2>&1 || status=$?

# libFuzzer's last status line ("#N DONE cov: C ft: F corp: ...") and final stats.
last=$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$LOG" | tail -1 || true)
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$LOG" | tail -1)
# -fork=N prints no final stats; its status lines count executions.
if [ -z "$execs" ]; then
  execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$last")
  took=$(sed -n 's/.* time: \([0-9]*\)s.*/\1/p' <<<"$last")
  [ -n "$execs" ] && [ "${took:-0}" -gt 0 ] && rate=$(( execs / took ))
fi
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$LOG" | tail -1)
rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$LOG" | tail -1)
cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
corp=$(sed -n 's/.* corp: \([^ ]*\).*/\1/p' <<<"$last")
after=$(find "$BUILD/artifacts" -type f | wc -l)
seed=$(sed -n 's/^INFO: Seed: //p' "$LOG" | head -1)
echo "fuzz_msl: executions ${execs:-?} (${rate:-?}/s), cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}," \
     "peak rss ${rss:-?} MB, seed ${seed:-?} (-seed=N repeats the run)"

if [ "$status" -ne 0 ] || [ "$after" -gt "$before" ] ||
   grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|msl_fuzz: undocumented' "$LOG"; then
  echo "fuzz_msl: FAILED (libFuzzer exit $status)" >&2
  grep -E -A25 'ERROR: |runtime error:|msl_fuzz: ' "$LOG" | head -60 >&2
  # -fork runs keep no child's report in the log: replay each new artifact.
  find "$BUILD/artifacts" -type f -newer "$BUILD/seeds" | head -5 | while read -r a; do
    echo "fuzz_msl: artifact $a" >&2
    timeout 60 "$FUZZER" -timeout=10 -rss_limit_mb=4096 "$a" 2>&1 |
      grep -E -A8 'ERROR: |runtime error:|msl_fuzz: ' | head -12 >&2
  done
  exit 1
fi
echo "fuzz_msl: no crash, timeout, leak or sanitizer report"
