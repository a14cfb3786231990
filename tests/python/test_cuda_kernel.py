"""mx.fast.cuda_kernel: MLX's custom kernels with CUDA bodies.

Each kernel here is checked on every run: on the GPU run
(ALLOY_TEST_DEVICE=gpu) it executes and is compared with numpy in float64;
on the CPU run it is translated and compiled with NVRTC for sm_90 (the
signature generation and the body are checked there too), and launching it
on the CPU must raise a clear error.
"""
import numpy as np
import pytest

import alloy.core as mx
from alloy.core import _msl

from conftest import DEVICE, tolerance

ON_GPU = DEVICE == "gpu"


def msl_type(dtype):
    return {mx.float32: "float", mx.float16: "float16_t", mx.bfloat16: "bfloat16_t", mx.int32: "int32_t",
            mx.uint32: "uint32_t", mx.float64: "double", mx.int64: "int64_t", mx.bool_: "bool"}[dtype]


def template_spec(template):
    out = []
    for name, value in template:
        if isinstance(value, mx.Dtype):
            out.append((name, "type", msl_type(value)))
        elif isinstance(value, bool):
            out.append((name, "bool", "true" if value else "false"))
        else:
            out.append((name, "int", str(value)))
    return out


def run_or_compile(kernel_args, call, inputs, check):
    """On the GPU: build, call and check the kernel. On the CPU run: compile
    the same body with NVRTC (sm_90) and expect the launch to be refused."""
    kernel = mx.fast.cuda_kernel(**kernel_args)
    if ON_GPU:
        outs = kernel(inputs=inputs, **call)
        mx.eval(outs)
        check(outs)
        return
    spec_inputs = [(n, msl_type(x.dtype), x.ndim == 0) for n, x in zip(kernel_args["input_names"], inputs)]
    spec_outputs = [(n, msl_type(d), False) for n, d in zip(kernel_args["output_names"], call["output_dtypes"])]
    ok, message = _msl.compile(kernel_args["name"], kernel_args["source"], kernel_args.get("header", ""),
                               spec_inputs, spec_outputs, template_spec(call.get("template", [])), False, "safe",
                               "cuda", "sm_90", "cuda")
    assert ok, message
    with pytest.raises(RuntimeError, match="runs on the GPU only"):  # MLX: RuntimeError too
        kernel(inputs=inputs, **call)


def test_mlx_doc_example(rng):
    # The example from MLX's cuda_kernel documentation, as written there.
    source = """
        auto elem = cooperative_groups::this_grid().thread_rank();
        T tmp = inp[elem];
        out[elem] = exp(tmp);
    """
    a = mx.array(rng.standard_normal((16, 16)).astype(np.float32))

    def check(outs):
        np.testing.assert_allclose(np.array(outs[0]), np.exp(np.array(a).astype(np.float64)), rtol=1e-6)

    run_or_compile(dict(name="myexp", input_names=["inp"], output_names=["out"], source=source),
                   dict(template=[("T", mx.float32)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1),
                        output_shapes=[a.shape], output_dtypes=[a.dtype]),
                   [a], check)


@pytest.mark.parametrize("dtype", [mx.float32, mx.float16, mx.bfloat16])
def test_elementwise_dtypes_and_partial_block(rng, dtype):
    # grid not a multiple of the block: the body guards with the shape.
    source = """
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= inp_shape[0]) return;
        float v = static_cast<float>(inp[i]);
        out[i] = static_cast<T>(v * scale[0] + 1.0f);
    """
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    a = mx.array(x).astype(dtype)
    s = mx.array(np.float32(rng.uniform(0.5, 2.0)))

    def check(outs):
        ref = np.array(a.astype(mx.float32)).astype(np.float64) * float(np.array(s)) + 1.0
        rtol, atol = tolerance(dtype)
        np.testing.assert_allclose(np.array(outs[0].astype(mx.float32)), ref, rtol=rtol * 4, atol=atol * 4)

    run_or_compile(dict(name="axpb", input_names=["inp", "scale"], output_names=["out"], source=source),
                   dict(template=[("T", dtype)], grid=(n, 1, 1), threadgroup=(128, 1, 1), output_shapes=[(n,)],
                        output_dtypes=[dtype], init_value=-7.0),
                   [a, s], check)


def test_strided_input_without_row_contiguous(rng):
    # ensure_row_contiguous=False: the body walks the strides itself.
    source = """
        int r = blockIdx.y, c = threadIdx.x;
        if (c >= x_shape[1]) return;
        out[r * x_shape[1] + c] = x[r * x_strides[0] + c * x_strides[1]] * 2.0f + float(x_ndim);
    """
    base = mx.array(rng.standard_normal((48, 40)).astype(np.float32))
    x = base.T  # (40, 48), strides (1, 40)

    def check(outs):
        np.testing.assert_allclose(np.array(outs[0]), np.array(base).T.astype(np.float64) * 2 + 2, rtol=1e-6)

    run_or_compile(dict(name="strided", input_names=["x"], output_names=["out"], source=source,
                        ensure_row_contiguous=False),
                   dict(grid=(64, 40, 1), threadgroup=(64, 1, 1), output_shapes=[(40, 48)],
                        output_dtypes=[mx.float32], init_value=np.nan),
                   [x], check)


@pytest.mark.parametrize("shared_kb", [4, 96])
def test_dynamic_shared_memory_block_sum(rng, shared_kb):
    # One block per row; the row is staged in dynamic shared memory (96 KB
    # needs the opt-in above 48 KB), then reduced with warp shuffles.
    header = """
    __device__ float warp_sum(float v) {
      for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
      return v;
    }
    """
    source = """
        extern __shared__ float row[];
        __shared__ float partial[32];
        const int n = x_shape[1];
        const float* xr = x + size_t(blockIdx.x) * n;
        for (int i = threadIdx.x; i < n; i += blockDim.x) row[i] = xr[i];
        __syncthreads();
        float acc = 0.0f;
        for (int i = threadIdx.x; i < n; i += blockDim.x) acc += row[n - 1 - i] * W;
        acc = warp_sum(acc);
        if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = acc;
        __syncthreads();
        if (threadIdx.x < 32) {
          float v = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
          v = warp_sum(v);
          if (threadIdx.x == 0) sums[blockIdx.x] = v;
        }
    """
    cols = shared_kb * 1024 // 4
    rows = 6
    x = rng.standard_normal((rows, cols)).astype(np.float32)

    def check(outs):
        np.testing.assert_allclose(np.array(outs[0]), x.astype(np.float64).sum(axis=1) * 3, rtol=1e-4, atol=1e-3)

    run_or_compile(dict(name="rowsum", input_names=["x"], output_names=["sums"], source=source, header=header,
                        shared_memory=cols * 4),
                   dict(template=[("W", 3)], grid=(rows * 256, 1, 1), threadgroup=(256, 1, 1),
                        output_shapes=[(rows,)], output_dtypes=[mx.float32], init_value=np.nan),
                   [mx.array(x)], check)


def test_two_outputs_scalar_input_and_atomics(rng):
    # 0-d inputs arrive as pointers (as in MLX); atomics into an output.
    source = """
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n_total) return;
        int v = vals[i];
        doubled[i] = v * 2 + offset[0];
        if (v > 0) atomicAdd(count, 1u);
    """
    n = 3000
    v = rng.integers(-50, 50, n).astype(np.int32)
    off = mx.array(np.int32(rng.integers(-9, 9)))

    def check(outs):
        np.testing.assert_array_equal(np.array(outs[0]), v * 2 + int(np.array(off)))
        assert int(np.array(outs[1])[0]) == int((v > 0).sum())

    run_or_compile(dict(name="two_out", input_names=["vals", "offset"], output_names=["doubled", "count"],
                        source=source),
                   dict(template=[("n_total", n)], grid=(n, 1, 1), threadgroup=(256, 1, 1),
                        output_shapes=[(n,), (1,)], output_dtypes=[mx.int32, mx.uint32], init_value=0),
                   [mx.array(v), off], check)


def test_signature_names_only_what_the_body_uses():
    source = "out[0] = inp[0] + my_inp_shape_like; // inp_strides in a comment\n"
    text = _msl.translate("sig", source, "", [("inp", "float", False)], [("out", "float", False)], [], False,
                          "safe", "cuda", "cuda")
    assert "const float* __restrict__ inp" in text
    assert "float* __restrict__ out" in text
    assert "inp_shape" not in text.replace("my_inp_shape_like", "")
    assert "inp_strides" not in text.split('#line 1 "source"')[0]
    text = _msl.translate("sig", "out[0] = inp_ndim + inp_shape[0] + inp_strides[0] + s[0];", "",
                          [("inp", "float", False), ("s", "float", True)], [("out", "float", False)],
                          [("T", "type", "float16_t"), ("N", "int", "4"), ("B", "bool", "true")], False, "safe",
                          "cuda", "cuda")
    assert "const __grid_constant__ alloy_msl::cuda::ShapeArg inp_shape" in text
    assert "const __grid_constant__ alloy_msl::cuda::StridesArg inp_strides" in text
    assert "const int inp_ndim" in text
    assert "const float* __restrict__ s" in text and "s_shape" not in text
    assert "using T = __half;" in text and "constexpr int N = 4;" in text and "constexpr bool B = true;" in text


def test_compile_error_quotes_the_users_line():
    source = "int i = threadIdx.x;\nfloat y = inp[i] + not_declared;\nout[i] = y;\n"
    ok, message = _msl.compile("bad", source, "", [("inp", "float", False)], [("out", "float", False)], [],
                               False, "safe", "cuda", "sm_90", "cuda")
    assert not ok
    assert "source:2:" in message and "not_declared" in message
    assert "float y = inp[i] + not_declared;" in message
    if ON_GPU:
        k = mx.fast.cuda_kernel(name="bad", input_names=["inp"], output_names=["out"], source=source)
        out = k(inputs=[mx.ones((4,))], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
                output_dtypes=[mx.float32])
        with pytest.raises(RuntimeError, match="source:2:"):
            mx.eval(out)
    # A good kernel still runs afterwards.
    test_mlx_doc_example(np.random.default_rng(0))


def test_bad_launches_are_clear_errors():
    k = mx.fast.cuda_kernel(name="noop", input_names=["a"], output_names=["b"], source="b[0] = a[0];")
    a = mx.ones((4,))
    common = dict(inputs=[a], output_shapes=[(1,)], output_dtypes=[mx.float32], stream=mx.gpu)
    with pytest.raises(ValueError, match="threads in z"):
        k(grid=(1, 1, 128), threadgroup=(1, 1, 128), **common)
    with pytest.raises(ValueError, match="limit is 1024"):
        k(grid=(2048, 1, 1), threadgroup=(2048, 1, 1), **common)
    with pytest.raises(ValueError, match="blocks in y"):
        k(grid=(1, 70000, 1), threadgroup=(1, 1, 1), **common)
    with pytest.raises(ValueError, match="expected 1 inputs"):
        k(grid=(1, 1, 1), threadgroup=(1, 1, 1), **{**common, "inputs": [a, a]})
    with pytest.raises(ValueError, match="shared_memory"):
        mx.fast.cuda_kernel(name="neg", input_names=["a"], output_names=["b"], source="", shared_memory=-1)
    if ON_GPU:
        big = mx.fast.cuda_kernel(name="big", input_names=["a"], output_names=["b"],
                                  source="extern __shared__ float s[]; s[0] = a[0]; b[0] = s[0];",
                                  shared_memory=1 << 20)
        out = big(grid=(1, 1, 1), threadgroup=(1, 1, 1), **common)
        with pytest.raises(ValueError, match="exceeds the device"):
            mx.eval(out)


def test_no_derivative_names_the_kernel():
    k = mx.fast.cuda_kernel(name="nograd", input_names=["a"], output_names=["b"],
                            source="int i = threadIdx.x; b[i] = a[i] * a[i];")

    def f(x):
        return k(inputs=[x], grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)],
                 output_dtypes=[mx.float32])[0].sum()

    if ON_GPU:
        with pytest.raises(ValueError, match=r"\[cuda_kernel\] kernel 'nograd' has no derivative"):
            mx.grad(f)(mx.ones((4,)))
    else:
        with pytest.raises(RuntimeError, match=r"\[cuda_kernel\] kernel 'nograd': a CUDA kernel runs on the GPU"):
            mx.grad(f)(mx.ones((4,)))


def test_cpu_stream_error_is_mlx_type():
    """On a CPU stream both frameworks refuse a CUDA body with RuntimeError
    (MLX's CPU build: "No CUDA back-end")."""
    from mlx_oracle import same_error

    def call(m):
        k = m.fast.cuda_kernel(name="copy_first", input_names=["x"], output_names=["o"], source="o[0] = x[0];")
        return k(inputs=[m.ones((4,))], grid=(1, 1, 1), threadgroup=(1, 1, 1), output_shapes=[(1,)],
                 output_dtypes=[m.float32], stream=m.cpu)

    err = same_error(call)
    assert "copy_first" in str(err) and "GPU only" in str(err)
