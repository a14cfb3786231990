#!/usr/bin/env bash
# Builds the library and the Python extension into BUILD_DIR and stages an
# importable package at BUILD_DIR/pkg, so several people can test their own
# builds side by side:   scripts/dev_build.sh build-me && PYTHONPATH=build-me/pkg python -c "import alloy.core"
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:?usage: dev_build.sh BUILD_DIR [targets...]}"
shift || true
[[ "$build" = /* ]] || build="$root/$build"
py="${PYTHON:-$root/.venv/bin/python}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DALLOY_BUILD_PYTHON=ON \
      -DALLOY_BUILD_TESTS=ON -DPython_EXECUTABLE="$py" >/dev/null
cmake --build "$build" -j"${JOBS:-2}" --target core "$@"
mkdir -p "$build/pkg/alloy"
for f in "$root"/python/alloy/*; do ln -sfn "$f" "$build/pkg/alloy/$(basename "$f")"; done
ln -sfn "$build"/python/core.*.so "$build/pkg/alloy/"
for f in "$build"/liballoy.so*; do ln -sfn "$f" "$build/pkg/alloy/$(basename "$f")"; done
echo "staged: PYTHONPATH=$build/pkg"
