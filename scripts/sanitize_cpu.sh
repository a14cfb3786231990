#!/usr/bin/env bash
# The C++ test suites (ctest: alloy_msl_tests, alloy_jit_tests,
# alloy_core_tests) under sanitizers, each in its own build folder:
#   asan  build/asan  -fsanitize=address,undefined (every report fatal)
#   tsan  build/tsan  -fsanitize=thread
#
#   scripts/sanitize_cpu.sh [asan|tsan|both] [ctest args...]
#   JOBS=1 scripts/sanitize_cpu.sh asan -R MslFuzz    # build with one job, run a subset
#   SKIP_BUILD=1 scripts/sanitize_cpu.sh asan         # run the tests of an existing build
#   TARGETS=alloy_jit_tests scripts/sanitize_cpu.sh tsan  # build and run one binary's tests
#   scripts/sanitize_cpu.sh asan-python [pytest args]  # the Python suite on an ASan+UBSan build
#   scripts/sanitize_cpu.sh tsan-python [pytest args]  # the Python suite on a TSan build
#
# asan-python builds liballoy and the extension in build/asan-py (same flags
# as asan), gathers the package in build/asan-py/pkg, and runs pytest from
# .venv (`make python` made it) with libasan and libubsan preloaded. Leaks
# are not checked there (CPython's own allocations would drown them), and
# ASan lets Alloy's own SIGSEGV handler turn faults inside kernels into
# exceptions (tests/python/test_kernel_faults.py). Default: tests/python.
# tsan-python does the same in build/tsan-py with libtsan preloaded; races are
# reported only where an instrumented frame (Alloy) makes the access:
# CPython and the kernels the JIT compiles are not instrumented, but their
# locks and threads go through TSan's interceptors, so what they order is
# ordered.
#
# No Python extension and no ahead-of-time GPU kernels: the sanitizers watch
# the library and its CPU paths (kernels the JIT compiles at run time are
# plain g++ objects, not instrumented). Logs: build/<kind>/ctest.log.
# Exits nonzero when a build fails or any test fails (a sanitizer report
# fails its test).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

which=${1:-asan}
shift || true
jobs=${JOBS:-$(nproc)}
targets=${TARGETS:-alloy_msl_tests alloy_jit_tests alloy_core_tests}
export CCACHE_DIR=${CCACHE_DIR:-$PWD/build/ccache}
# Every UBSan report fails the test that made it, with the stack; leaks are
# reported at exit. No suppressions.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=0:second_deadlock_stack=1}
# Kernels compiled during the run go to a private cache, not the user's.
export ALLOY_CACHE_DIR=${ALLOY_CACHE_DIR:-$PWD/build/sanitize-cache}

run_kind() {  # run_kind asan|tsan [ctest args...]
  local kind=$1; shift
  local dir=build/$kind flags
  case $kind in
    asan) flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined" ;;
    tsan) flags="-fsanitize=thread" ;;
    *) echo "sanitize_cpu: unknown kind '$kind' (asan, tsan or both)" >&2; return 2 ;;
  esac
  flags="$flags -fno-omit-frame-pointer -g"
  if [ -z "${SKIP_BUILD:-}" ]; then
    echo "sanitize_cpu: building $dir ($flags)"
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DALLOY_BUILD_TESTS=ON -DALLOY_BUILD_PYTHON=OFF \
          "-DALLOY_AOT_ARCHS=" "-DALLOY_AOT_PTX=" "-DCMAKE_CXX_FLAGS=$flags" \
          "-DCMAKE_EXE_LINKER_FLAGS=$flags" "-DCMAKE_SHARED_LINKER_FLAGS=$flags" >/dev/null || return 1
    # shellcheck disable=SC2086
    cmake --build "$dir" -j"$jobs" --target $targets || return 1
  fi
  # gtest_discover_tests names a binary that was not built *_NOT_BUILT.
  [ -n "${TARGETS:-}" ] && set -- -E NOT_BUILT "$@"
  echo "sanitize_cpu: ctest in $dir (log: $dir/ctest.log)"
  local rc=0
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "$@") >"$dir/ctest.log" 2>&1 || rc=$?
  tail -n 3 "$dir/ctest.log"
  # What the sanitizers said, whichever test said it.
  local reports
  reports=$(grep -cE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|WARNING: ThreadSanitizer' "$dir/ctest.log")
  echo "sanitize_cpu: $kind: $reports sanitizer report(s)"
  grep -E -A12 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|WARNING: ThreadSanitizer' "$dir/ctest.log" |
    head -80
  [ "$rc" -eq 0 ] && [ "$reports" -eq 0 ]
}

run_python() {  # run_python asan|tsan [pytest args...]
  local kind=$1; shift
  local dir=build/$kind-py flags preload opts pattern extra_path=""
  case $kind in
    asan)
      flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
      preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
      opts="ASAN_OPTIONS=detect_leaks=0:allow_user_segv_handler=1:handle_segv=0:detect_stack_use_after_return=0"
      pattern='ERROR: AddressSanitizer|runtime error:' ;;
    tsan)
      flags="-fsanitize=thread"
      preload=""  # linked into the launcher below
      opts="TSAN_OPTIONS=halt_on_error=0:second_deadlock_stack=1:ignore_noninstrumented_modules=1:handle_segv=0"
      pattern='WARNING: ThreadSanitizer|ERROR: ThreadSanitizer|FATAL: ThreadSanitizer' ;;
  esac
  flags="$flags -fno-omit-frame-pointer -g"
  local py=$PWD/.venv/bin/python
  [ -x "$py" ] || { echo "sanitize_cpu: $kind-python needs .venv (make python)" >&2; return 2; }
  if [ -z "${SKIP_BUILD:-}" ]; then
    echo "sanitize_cpu: building $dir ($flags)"
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DALLOY_BUILD_TESTS=OFF -DALLOY_BUILD_PYTHON=ON \
          "-DPython_EXECUTABLE=$py" "-Dnanobind_DIR=$($py -m nanobind --cmake_dir)" \
          "-DALLOY_AOT_ARCHS=" "-DALLOY_AOT_PTX=" "-DCMAKE_CXX_FLAGS=$flags" \
          "-DCMAKE_EXE_LINKER_FLAGS=$flags" "-DCMAKE_SHARED_LINKER_FLAGS=$flags" >/dev/null || return 1
    cmake --build "$dir" -j"$jobs" --target alloy core || return 1
  fi
  rm -rf "$dir/pkg" && mkdir -p "$dir/pkg/alloy"
  cp -r python/alloy/. "$dir/pkg/alloy/"
  cp "$dir"/python/core.*.so "$dir/pkg/alloy/" && cp -L "$dir/liballoy.so.0" "$dir/pkg/alloy/"
  [ $# -eq 0 ] && set -- tests/python
  local launcher=("$py")
  if [ "$kind" = tsan ]; then
    # libtsan must be loaded first, but preloaded (LD_PRELOAD) it also enters
    # every child process, and the JIT's compiler (run through /bin/sh)
    # crashes under it. So the interpreter is a small launcher of the same
    # Python linked with -fsanitize=thread: libtsan loads first in pytest's
    # process alone; the packages of .venv come through PYTHONPATH.
    local pyc site
    pyc="$($py -c 'import sysconfig; print(sysconfig.get_config_var("BINDIR"))')/python3-config"
    site=$($py -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    printf '#include <Python.h>\nint main(int argc, char** argv) { return Py_BytesMain(argc, argv); }\n' >"$dir/launcher.c"
    # shellcheck disable=SC2046
    gcc -fsanitize=thread -O1 "$dir/launcher.c" $("$pyc" --includes) $("$pyc" --embed --ldflags) -o "$dir/tsan-python" ||
      return 1
    launcher=("$PWD/$dir/tsan-python")
    extra_path=":$site"
    # TSan holds an asynchronous signal until its thread runs instrumented
    # code; a CPU kernel spinning in the JIT's (uninstrumented) code never
    # does, so the signal that stops a runaway kernel (timeout=, SIGALRM,
    # SIGINT: jit/cpu_faults.h) never lands. Those four tests stop kernels
    # that way and are left out here; the other builds run them.
    set -- -k "not (past_its_timeout or kernel_timeout_sets_a_default or signal_stops_an_endless or stopped_kernel_inside_grad)" "$@"
  fi
  echo "sanitize_cpu: pytest under $kind (log: $dir/pytest.log)"
  local rc=0
  # --capture=sys: pytest captures Python's prints only, so a sanitizer's
  # report (written to fd 2) reaches the log.
  env ${preload:+LD_PRELOAD="$preload"} "$opts" UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      PYTHONPATH="$PWD/$dir/pkg$extra_path" "${launcher[@]}" -m pytest -q -p no:cacheprovider --capture=sys "$@" >"$dir/pytest.log" 2>&1 || rc=$?
  tail -n 3 "$dir/pytest.log"
  local reports
  reports=$(grep -cE "$pattern" "$dir/pytest.log")
  echo "sanitize_cpu: $kind-python: $reports sanitizer report(s)"
  grep -E -A24 "$pattern" "$dir/pytest.log" | head -120
  [ "$rc" -eq 0 ] && [ "$reports" -eq 0 ]
}

status=0
case $which in
  asan-python | tsan-python) run_python "${which%-python}" "$@" || status=1 ;;
  both) run_kind asan "$@" || status=1; run_kind tsan "$@" || status=1 ;;
  *) run_kind "$which" "$@" || status=1 ;;
esac
exit $status
