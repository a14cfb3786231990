"""Where CUDA comes from (issue 17): NVIDIA's pip wheels in site-packages are
used before CUDA_HOME and the toolkit's usual places, for the library and the
headers alike. A wheel-shaped folder is built from this machine's toolkit
(links to its NVRTC and headers), so the test needs no download; each case
runs in a fresh process, since the locations are read once per process."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

import alloy.core as mx

PATHS = mx._msl.cuda_paths()

KERNEL = """
uint i = thread_position_in_grid.x;
bfloat b = bfloat(inp[i]);
out[i] = simd_sum(float(b) + float(half(inp[i])));
"""


def run(code, env_changes):
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH", "ALLOY_CUDA_HOME",
                                                             "ALLOY_PYTHON_SITE_DIRS", "ALLOY_NVRTC_LIBRARY")}
    env.update(env_changes)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def wheel_site(tmp_path):
    """site-packages/nvidia/cu13/{lib,include} made of links into the toolkit."""
    if not PATHS["nvrtc_available"] or not PATHS["nvrtc_library"].startswith("/"):
        pytest.fail(f"this test needs NVRTC from a toolkit folder: {PATHS}")
    lib_dir = pathlib.Path(os.path.realpath(PATHS["nvrtc_library"])).parent
    site = tmp_path / "site-packages"
    wheel_lib = site / "nvidia" / "cu13" / "lib"
    wheel_lib.mkdir(parents=True)
    for f in lib_dir.iterdir():
        if f.name.startswith(("libnvrtc.so", "libnvrtc-builtins.so")):
            (wheel_lib / f.name).symlink_to(f)
    (site / "nvidia" / "cu13" / "include").symlink_to(PATHS["include_dirs"][0])
    return site


def test_wheels_come_before_the_toolkit(tmp_path):
    site = wheel_site(tmp_path)
    out = run("import json, alloy.core as mx; print(json.dumps(mx._msl.cuda_paths()))",
              {"ALLOY_PYTHON_SITE_DIRS": str(site), "CUDA_HOME": "/usr/local/cuda"})
    paths = json.loads(out)
    assert paths["nvrtc_available"], paths
    assert paths["nvrtc_library"].startswith(str(site / "nvidia" / "cu13" / "lib")), paths
    assert paths["include_dirs"][0] == str(site / "nvidia" / "cu13" / "include"), paths


def test_a_kernel_compiles_with_the_wheel_nvrtc_and_headers(tmp_path):
    site = wheel_site(tmp_path)
    kernel = tmp_path / "k.metal"
    kernel.write_text(KERNEL)
    env = {"ALLOY_PYTHON_SITE_DIRS": str(site), "ALLOY_CACHE_DIR": str(tmp_path / "cache")}
    out = run("import runpy, sys\n"
              f"sys.argv = ['alloy.msl', {str(kernel)!r}, '--input', 'inp:float', '--output', 'out:float',"
              " '--target', 'cuda']\n"
              "runpy.run_module('alloy.msl', run_name='__main__')", env)
    assert "compiled for sm_90" in out, out


def test_an_explicit_toolkit_outranks_the_wheels(tmp_path):
    site = wheel_site(tmp_path)
    toolkit = str(pathlib.Path(PATHS["include_dirs"][0]).parent)
    out = run("import json, alloy.core as mx; print(json.dumps(mx._msl.cuda_paths()))",
              {"ALLOY_PYTHON_SITE_DIRS": str(site), "ALLOY_CUDA_HOME": toolkit})
    paths = json.loads(out)
    assert paths["nvrtc_library"].startswith(toolkit), paths


def test_the_package_finds_wheels_on_sys_path(tmp_path):
    # Without the variable, importing alloy sets it from the sys.path entries
    # that hold an nvidia/ folder.
    site = wheel_site(tmp_path)
    out = run(f"import sys; sys.path.insert(0, {str(site)!r})\n"
              "import os, json, alloy.core as mx\n"
              "print(json.dumps([os.environ.get('ALLOY_PYTHON_SITE_DIRS'), mx._msl.cuda_paths()['nvrtc_library']]))",
              {})
    dirs, library = json.loads(out)
    assert str(site) in dirs.split(":")
    assert library.startswith(str(site)), library


def test_aot_kernel_archive_is_found_beside_the_library():
    """The op kernels compiled ahead of time live beside liballoy (in the
    package when installed); cuda_paths() names the archive in use, or says
    why there is none, and ALLOY_AOT_KERNELS / ALLOY_AOT=0 change that."""
    import alloy

    beside = pathlib.Path(alloy.__file__).parent / "alloy_kernels.aot"
    status = PATHS["aot_kernels"]
    if beside.exists():
        # The archive beside the liballoy that loaded: the package's, or (a
        # GPU check's prebuilt library) the one beside that library.
        path, _, count = status.rpartition(": ")
        assert path.endswith("alloy_kernels.aot") and pathlib.Path(path).exists(), status
        assert count.endswith("images") and int(count.split()[0]) > 1000, status
    else:
        assert "cannot be opened" in status, status
    code = "import alloy.core as mx; print(mx._msl.cuda_paths()['aot_kernels'])"
    for env, expect in [({"ALLOY_AOT_KERNELS": "/nonexistent/k.aot"}, "/nonexistent/k.aot: cannot be opened"),
                        ({"ALLOY_AOT": "0"}, "disabled by ALLOY_AOT=0")]:
        done = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert expect in done.stdout, done.stdout
