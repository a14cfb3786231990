"""mx.fast.precompiled_cuda_kernel: a kernel the user compiled (PTX or cubin)
runs with MLX's argument order (input pointers, output pointers, scalars by
value) and geometry (grid in threads). The images are made here with NVRTC
through ctypes, as a user would make them; NVRTC is the one Alloy found
(mx._msl.cuda_paths()). Values are checked against numpy float64 on fresh
random inputs; on a machine without a GPU the call must refuse clearly.
"""
import ctypes

import numpy as np
import pytest

import alloy.core as mx
import mlx.core as mlx_core

from conftest import DEVICE

ON_GPU = DEVICE == "gpu"

SAXPY = r"""
extern "C" __global__ void saxpy(const float* x, const float* y, float* out, float a, int n, bool negate) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (negate ? -1.0f : 1.0f) * (a * x[i] + y[i]);
}
"""

# Even elements only (the rest keep init_value); a 2-D grid; two outputs;
# dynamic shared memory (each block reverses its slice).
EVENS = r"""
extern "C" __global__ void evens(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && i % 2 == 0) out[i] = 2.0f * x[i];
}
"""
GRID2D = r"""
extern "C" __global__ void coords(int* xs, float* ys, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) { xs[y * w + x] = x + 1000 * y; ys[y * w + x] = 0.5f * y; }
}
"""
REVERSE = r"""
extern "C" __global__ void reverse_blocks(const float* x, float* out) {
  extern __shared__ float tile[];
  int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  tile[t] = x[base + t];
  __syncthreads();
  out[base + t] = tile[blockDim.x - 1 - t];
}
"""


def nvrtc_compile(source, arch):
    """PTX (arch compute_XY) or a cubin (arch sm_XY) of `source`, as bytes."""
    path = mx._msl.cuda_paths()["nvrtc_library"]
    if not path:
        pytest.skip("no NVRTC on this machine to build the test's kernels")
    lib = ctypes.CDLL(path)
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"k.cu", 0, None, None) == 0
    opts = [f"--gpu-architecture={arch}".encode()]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    if rc != 0:
        n = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetProgramLog(prog, log)
        raise AssertionError(log.value.decode())
    size = ctypes.c_size_t()
    get_size, get = (lib.nvrtcGetPTXSize, lib.nvrtcGetPTX) if arch.startswith("compute") else \
        (lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN)
    assert get_size(prog, ctypes.byref(size)) == 0
    buf = ctypes.create_string_buffer(size.value)
    assert get(prog, buf) == 0
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return buf.raw.rstrip(b"\0") if arch.startswith("compute") else buf.raw


def device_sm():
    if not ON_GPU:
        return "90"
    return mx.device_info(mx.gpu)["architecture"].replace("sm_", "")


@pytest.fixture(scope="module", params=["ptx", "cubin"])
def image_kind(request):
    return request.param


def image(source, kind):
    sm = device_sm()
    return nvrtc_compile(source, f"compute_{sm}" if kind == "ptx" else f"sm_{sm}")


def saxpy_call(img, x, y, a, negate, **kw):
    n = x.size
    return mx.fast.precompiled_cuda_kernel(
        name="saxpy", compiled_source=img, inputs=[x, y], output_shapes=[(n,)], output_dtypes=[mx.float32],
        scalars=[a, n, negate], grid=(n, 1, 1), threadgroup=(128, 1, 1), **kw)


@pytest.mark.skipif(not ON_GPU, reason="runs compiled CUDA code: GPU runs only (the CPU refusal is tested below)")
class TestOnGpu:
    def test_saxpy_scalars_by_value(self, rng, image_kind):
        img = image(SAXPY, image_kind)
        n = int(rng.integers(500, 5000))
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        a = float(rng.uniform(-3, 3))
        for negate in (False, True):
            (out,) = saxpy_call(img, mx.array(x), mx.array(y), a, negate)
            ref = (np.float64(np.float32(a)) * x.astype(np.float64) + y) * (-1 if negate else 1)
            assert out.dtype == mx.float32 and out.shape == (n,)
            np.testing.assert_allclose(np.array(out), ref, rtol=1e-5, atol=1e-5)

    def test_init_value_keeps_unwritten_elements(self, rng, image_kind):
        img = image(EVENS, image_kind)
        n = 777
        x = rng.standard_normal(n).astype(np.float32)
        (out,) = mx.fast.precompiled_cuda_kernel(
            name="evens", compiled_source=img, inputs=[mx.array(x)], output_shapes=[(n,)],
            output_dtypes=[mx.float32], scalars=[n], grid=(n, 1, 1), threadgroup=(64, 1, 1), init_value=-7.0)
        got = np.array(out)
        np.testing.assert_allclose(got[::2], 2 * x[::2].astype(np.float64), rtol=1e-6)
        assert (got[1::2] == -7.0).all()

    def test_2d_grid_two_outputs(self, image_kind):
        img = image(GRID2D, image_kind)
        w, h = 37, 23
        xs, ys = mx.fast.precompiled_cuda_kernel(
            name="coords", compiled_source=img, inputs=[], output_shapes=[(h, w), (h, w)],
            output_dtypes=[mx.int32, mx.float32], scalars=[w, h], grid=(w, h, 1), threadgroup=(16, 8, 1))
        yy, xx = np.mgrid[0:h, 0:w]
        np.testing.assert_array_equal(np.array(xs), xx + 1000 * yy)
        np.testing.assert_array_equal(np.array(ys), 0.5 * yy)

    def test_dynamic_shared_memory(self, rng, image_kind):
        img = image(REVERSE, image_kind)
        block, blocks = 256, 5
        x = rng.standard_normal(block * blocks).astype(np.float32)
        (out,) = mx.fast.precompiled_cuda_kernel(
            name="reverse_blocks", compiled_source=img, inputs=[mx.array(x)], output_shapes=[x.shape],
            output_dtypes=[mx.float32], scalars=[], grid=(x.size, 1, 1), threadgroup=(block, 1, 1),
            shared_memory=block * 4)
        np.testing.assert_array_equal(np.array(out), x.reshape(blocks, block)[:, ::-1].reshape(-1))

    def test_ensure_row_contiguous_copies_a_transposed_input(self, rng):
        img = image(EVENS, "ptx")
        m = rng.standard_normal((12, 9)).astype(np.float32)
        xt = mx.array(m).T  # a strided view
        n = m.size
        kw = dict(name="evens", compiled_source=img, inputs=[xt], output_shapes=[(n,)], output_dtypes=[mx.float32],
                  scalars=[n], grid=(n, 1, 1), threadgroup=(32, 1, 1), init_value=0.0)
        (out,) = mx.fast.precompiled_cuda_kernel(ensure_row_contiguous=True, **kw)
        flat = np.ascontiguousarray(m.T).reshape(-1).astype(np.float64)
        np.testing.assert_allclose(np.array(out)[::2], 2 * flat[::2], rtol=1e-6)

    def test_bad_images_raise_naming_the_kernel_and_the_process_goes_on(self, rng):
        good = image(SAXPY, "cubin")
        x = mx.array(rng.standard_normal(64).astype(np.float32))
        (before,) = saxpy_call(good, x, x, 2.0, False)
        mx.eval(before)
        kept = np.array(before)
        with pytest.raises(RuntimeError, match=r"kernel 'nope'.*no kernel named 'nope'"):
            mx.eval(mx.fast.precompiled_cuda_kernel(
                name="nope", compiled_source=good, inputs=[x, x], output_shapes=[(64,)],
                output_dtypes=[mx.float32], scalars=[2.0, 64, False], grid=(64, 1, 1), threadgroup=(64, 1, 1)))
        # A cubin of another major architecture does not load here.
        other = "80" if device_sm() != "80" else "90"
        wrong = nvrtc_compile(SAXPY, f"sm_{other}")
        with pytest.raises(RuntimeError, match=r"kernel 'saxpy'.*cannot load"):
            mx.eval(saxpy_call(wrong, x, x, 2.0, False))
        np.testing.assert_array_equal(np.array(before), kept)
        (after,) = saxpy_call(good, x, x, 3.0, False)
        np.testing.assert_allclose(np.array(after), 4.0 * np.array(x), rtol=1e-6)

    def test_no_derivative_without_a_rule(self):
        img = image(EVENS, "ptx")

        def f(x):
            return mx.fast.precompiled_cuda_kernel(
                name="evens", compiled_source=img, inputs=[x], output_shapes=[(8,)], output_dtypes=[mx.float32],
                scalars=[8], grid=(8, 1, 1), threadgroup=(8, 1, 1))[0].sum()

        with pytest.raises(ValueError, match="has no derivative"):
            mx.grad(f)(mx.ones((8,)))


def test_refuses_the_cpu_and_bad_arguments():
    ptx = nvrtc_compile(SAXPY, "compute_90")
    args = dict(name="saxpy", compiled_source=ptx, inputs=[mx.ones((4,)), mx.ones((4,))], output_shapes=[(4,)],
                output_dtypes=[mx.float32], scalars=[1.0, 4, False], grid=(4, 1, 1), threadgroup=(4, 1, 1))
    with pytest.raises(RuntimeError, match=r"\[precompiled_cuda_kernel\] kernel 'saxpy'.*GPU only"):
        mx.fast.precompiled_cuda_kernel(**args, stream=mx.cpu)
    bad = [
        (dict(compiled_source=b"not a kernel"), "neither a cubin"),
        (dict(scalars=[1.0, "4", False]), "scalars must be bool, int or float; got str"),
        (dict(output_dtypes=[]), "1 output shapes but 0 output dtypes"),
        (dict(threadgroup=(4, 4, 128)), "threadgroup"),
        (dict(grid=(0, 1, 1)), "must be positive"),
        (dict(output_shapes=[(-1,)]), "negative dimension"),
    ]
    for change, message in bad:
        with pytest.raises(ValueError, match=message):
            mx.fast.precompiled_cuda_kernel(**{**args, **change}, stream=mx.gpu if ON_GPU else mx.cpu)


def test_errors_are_of_mlx_types():
    """Real MLX (its CPU build, the oracle here) and Alloy raise the same
    exception types: ValueError for a scalar of another type, RuntimeError
    for a call that cannot run without a GPU (MLX raises it at eval)."""
    ptx = nvrtc_compile(SAXPY, "compute_90")

    def call(module, **change):
        args = dict(name="saxpy", compiled_source=ptx, inputs=[module.ones((4,)), module.ones((4,))],
                    output_shapes=[(4,)], output_dtypes=[module.float32], scalars=[1.0, 4, False], grid=(4, 1, 1),
                    threadgroup=(4, 1, 1), stream=module.cpu)
        args.update(change)
        module.eval(module.fast.precompiled_cuda_kernel(**args))

    for module in (mlx_core, mx):
        for bad in (["4"], [None], [1.0, 4, b"x"]):
            with pytest.raises(ValueError):
                call(module, scalars=bad)
        with pytest.raises(RuntimeError):
            call(module)
