#!/usr/bin/env bash
# On the development machine: build liballoy and the C++ test binaries, and
# gather them with the shared libraries the GPU machine lacks into .gpu/, and
# the Python wheels it lacks into .whl/ and .whl-extra/ (all git-ignored).
# Then, on the GPU machine, a call that stages .whl-extra/ and one that runs
# scripts/gpu_check.sh with carry [".gpu", ".whl"] (printed at the end).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${BUILD_DIR:-build/gpu-prep}"  # BUILD_DIR=build/cpp reuses make's tree (same options)
# The op kernels compiled ahead of time for the device machine's sm_90 (H100
# and H200), as CI builds them.
cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DALLOY_BUILD_TESTS=ON "-DALLOY_AOT_ARCHS=${AOT_ARCHS:-90}" \
      "-DALLOY_AOT_PTX=${AOT_PTX:-}" >/dev/null
cmake --build $build -j"${JOBS:-2}" --target alloy alloy_jit_tests alloy_core_tests alloy_msl_tests alloy_host_cost \
      alloy_aot_kernels
rm -rf .gpu && mkdir -p .gpu/lib
cp -L $build/liballoy.so.0 .gpu/lib/ && ln -sf liballoy.so.0 .gpu/lib/liballoy.so
cp $build/alloy_kernels.aot .gpu/lib/
cp $build/alloy_jit_tests $build/alloy_core_tests $build/alloy_msl_tests $build/alloy_host_cost .gpu/
# Symbols are not needed there, and the device tool carries 64 MiB in all
# (the working tree included): stripped, liballoy is about a quarter smaller.
strip --strip-unneeded .gpu/lib/liballoy.so.0
strip .gpu/alloy_jit_tests .gpu/alloy_core_tests .gpu/alloy_msl_tests .gpu/alloy_host_cost
cp -L /lib/x86_64-linux-gnu/libboost_context.so.1.74.0 .gpu/lib/
# MLX's CUDA headers (alloy.mlx's GPU half) include fmt, header-only here.
mkdir -p .gpu/include && cp -r /usr/include/fmt .gpu/include/
mkdir -p .whl
py=.venv/bin/python
nb=$($py -c "import nanobind; print(nanobind.__version__)")
$py -m pip download -q --no-deps -d .whl "nanobind==$nb" pytest pytest-timeout pytest-xdist execnet pluggy iniconfig packaging einops
$py -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl ml_dtypes
# Real MLX (CPU build) is the differential tests' oracle there too,
# safetensors the I/O tests' reference, Pillow what mlx-vlm's models import.
$py -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_35_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    -d .whl "mlx==0.32.4" "mlx-cpu==0.32.4" safetensors pillow
# Public MLX code the real-code tests load (pure Python).
$py -m pip download -q --no-deps -d .whl -r tests/real_mlx_code_requirements.txt
# mlx-mfa's Python files (an sdist that builds only on macOS): gpu_check copies them.
rm -rf .whl/src && mkdir -p .whl/src && scripts/install_mlx_mfa_sources.sh .whl/src
# The device tool refuses more than 64 MiB in one call (these, the tracked
# files and the untracked ones git does not ignore). The real-code wheels
# (tests/real_mlx_code_requirements.txt, all of Pillow's and rapid-mlx's
# size) go to .whl-extra/: a first call copies them to /tmp/whl-extra on the
# device machine, where gpu_check.sh installs them too. The machine keeps
# /tmp only while it stays warm (30 s idle), so make the second call at once.
rm -rf .whl-extra && mkdir -p .whl-extra
for w in .whl/*.whl; do
  case "$(basename "$w")" in
    nanobind-*|pytest*|execnet-*|pluggy-*|iniconfig-*|packaging-*|einops-*|ml_dtypes-*|mlx-*|mlx_cpu-*|safetensors-*) ;;
    *) mv "$w" .whl-extra/ ;;
  esac
done
du -sh .gpu .whl .whl-extra
mib() { echo $(( ($(du -cb "$@" | tail -1 | cut -f1) + $(git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)) / 1048576 )); }
cat <<TXT
carry: .gpu + .whl $(mib .gpu .whl) MiB, .whl-extra $(mib .whl-extra) MiB (the device tool takes 64 MiB a call)
Device call 1 (carry [".whl-extra"]):  mkdir -p /tmp/whl-extra && cp .whl-extra/*.whl /tmp/whl-extra/
Device call 2, right after (carry [".gpu", ".whl"]):  STEPS="..." OUT=\$OUT bash scripts/gpu_check.sh
A run that needs no real-code wheels makes call 2 alone (their tests then fail as "not installed").
TXT
