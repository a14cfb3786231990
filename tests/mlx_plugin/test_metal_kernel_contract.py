"""What MLX promises about metal_kernel, through alloy.mlx on real MLX: the
generated signature, template, init_value, atomic outputs, contiguity,
header, verbose, math modes, dispatchThreads with partial threadgroups, SIMD
groups of 32, large threadgroup memory, MLX's transforms, and bad input."""
import os
import subprocess
import sys

import numpy as np
import pytest

import mlx.core as mx

from conftest import DEVICE

import alloy.mlx

NAN = float("nan")


def kernel(source, inputs=("inp",), outputs=("out",), **kw):
    return mx.fast.metal_kernel(name=kw.pop("name", "k"), input_names=list(inputs), output_names=list(outputs),
                                source=source, **kw)


def test_the_plugin_replaces_metal_kernel_and_uninstall_restores_it():
    ours = mx.fast.metal_kernel
    assert alloy.mlx.installed() and ours is alloy.mlx.metal_kernel
    alloy.mlx.uninstall()
    try:
        assert mx.fast.metal_kernel is not ours and not alloy.mlx.installed()
        assert mx.metal.is_available() == (mx.default_device() == mx.gpu and mx.metal.is_available())
    finally:
        alloy.mlx.install()
    assert mx.fast.metal_kernel is ours


def test_metal_checks_pass_and_a_switch_keeps_mlx_answers():
    assert mx.metal.is_available()
    assert mx.default_device() == mx.gpu
    info = mx.metal.device_info()
    for key in ("architecture", "device_name", "memory_size", "max_buffer_length",
                "max_recommended_working_set_size"):
        assert key in info
    assert info["memory_size"] > 0
    # The CPU device that answers to mx.gpu is still the CPU for MLX's ops.
    if not mx.cuda.is_available():
        assert mx.default_device() == mx.cpu
        assert mx.ones((2,), stream=mx.default_device()).tolist() == [1.0, 1.0]
    alloy.mlx.install(metal_checks=False)
    try:
        assert mx.fast.metal_kernel is alloy.mlx.metal_kernel
        assert mx.metal.is_available() is False or mx.metal.is_available() is True  # MLX's own function
        assert mx.metal.is_available.__module__ != alloy.mlx.__name__
    finally:
        alloy.mlx.install()


def test_outputs_are_lazy_mlx_arrays_with_shape_strides_ndim_template(rng):
    a = rng.standard_normal((3, 5, 7)).astype(np.float32)
    x = mx.array(a)
    src = """
        uint i = thread_position_in_grid.x;
        uint loc = elem_to_loc(i, inp_shape, inp_strides, inp_ndim);
        out[i] = static_cast<float>(inp[loc]) * SCALE + (FLAG ? 1.0f : 0.0f);
    """
    k = kernel(src, ensure_row_contiguous=False)
    xt = mx.transpose(x, (2, 0, 1))  # strided: the kernel walks the strides
    (out,) = k(inputs=[xt], template=[("T", mx.float32), ("SCALE", 3), ("FLAG", True)], grid=(xt.size, 1, 1),
               threadgroup=(64, 1, 1), output_shapes=[xt.shape], output_dtypes=[mx.float32], init_value=NAN)
    assert isinstance(out, mx.array) and out.shape == (7, 3, 5)
    np.testing.assert_allclose(np.array(out), np.transpose(a, (2, 0, 1)) * 3.0 + 1.0, rtol=1e-6, atol=1e-6)


def test_shape_and_strides_past_ndim_read_zero(rng, monkeypatch):
    # Metal leaves them undefined; Alloy's launches, the plugin's included,
    # hold 16 entries with zeros past ndim. Out of the shape vector on
    # purpose, so unchecked.
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")
    src = """
        uint i = thread_position_in_grid.x;
        long past = 0;
        for (int d = inp_ndim; d < 16; ++d) past += long(inp_shape[d]) + inp_strides[d];
        out[i] = inp[i] + float(past) + float(inp_ndim);
    """
    for shape in [(7,), (2, 3, 4), (2, 1, 3, 2, 2)]:
        a = rng.standard_normal(shape).astype(np.float32)
        (out,) = kernel(src, name="past_ndim")(inputs=[mx.array(a)], grid=(a.size, 1, 1), threadgroup=(32, 1, 1),
                                                 output_shapes=[shape], output_dtypes=[mx.float32], init_value=NAN)
        np.testing.assert_array_equal(np.array(out), a + len(shape))


def test_a_kernel_made_again_with_the_same_definition_is_the_same_object(rng):
    # Code that calls metal_kernel on every call (the seeds) reuses the first.
    src = "uint i = thread_position_in_grid.x; out[i] = inp[i] * 2.0f;"
    k1, k2 = kernel(src, name="twice"), kernel(src, name="twice")
    assert k1 is k2
    for other in (kernel(src + " ", name="twice"), kernel(src, name="twice2"), kernel(src, name="twice", header="//"),
                  kernel(src, name="twice", compile_options={"math_mode": "fast"}),
                  kernel(src, name="twice", ensure_row_contiguous=False)):
        assert other is not k1
    a = rng.standard_normal(8).astype(np.float32)
    (out,) = k2(inputs=[mx.array(a)], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)],
                output_dtypes=[mx.float32])
    np.testing.assert_allclose(np.array(out), a * 2.0, rtol=1e-6)


def test_scalar_and_small_inputs_in_constant_memory(rng):
    a = rng.standard_normal(100).astype(np.float32)
    src = "uint i = thread_position_in_grid.x; out[i] = inp[i] * s + small[i % 3];"
    k = kernel(src, inputs=("inp", "s", "small"))
    (out,) = k(inputs=[mx.array(a), mx.array(2.5), mx.array([1.0, 2.0, 3.0])], grid=(100, 1, 1),
               threadgroup=(32, 1, 1), output_shapes=[(100,)], output_dtypes=[mx.float32], verbose=False)
    np.testing.assert_allclose(np.array(out), a * 2.5 + np.array([1.0, 2.0, 3.0])[np.arange(100) % 3], rtol=1e-6,
                               atol=1e-6)


def test_init_value_and_partial_threadgroups_follow_dispatch_threads():
    # grid 70 with threadgroups of 32: the last threadgroup is partial, and
    # every thread of the grid (and none past it) writes.
    src = """
        uint i = thread_position_in_grid.x;
        if (i % 2 == 0) out[i] = float(threads_per_threadgroup.x * 1000 + thread_position_in_threadgroup.x);
    """
    k = kernel(src, inputs=())
    (out,) = k(inputs=[], grid=(70, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(72,)],
               output_dtypes=[mx.float32], init_value=-1.0)
    got = np.array(out)
    i = np.arange(72)
    tpt = np.where(i < 64, 32, 6)  # Metal's threads_per_threadgroup of the partial last group
    want = np.where((i % 2 == 0) & (i < 70), tpt * 1000 + i % 32, -1.0)
    np.testing.assert_array_equal(got, want)


FRESH_AND_REUSED = """
import sys
import numpy as np
import mlx.core as mx
import alloy.mlx

NAN = float("nan")
rng = np.random.default_rng(int(sys.argv[1]))
src = \"\"\"
    uint i = thread_position_in_grid.x;
    out[i] = inp[i] * 3.0f + 1.0f;
    if (i % 3 == 0) mask[i] = inp[i];
\"\"\"
k = mx.fast.metal_kernel(name="fresh_buffers", input_names=["inp"], output_names=["out", "mask"], source=src)
for n in (1000, 4096, 1 << 20, (1 << 20) + 7, 1000):
    x = rng.standard_normal(n).astype(np.float32)
    for how in ("fresh", "reused", "after an MLX op", "reused"):
        if how == "fresh":
            mx.clear_cache()
        elif how == "after an MLX op":
            mx.eval(mx.exp(mx.array(x)) + 1)  # MLX's own buffers of the size, back in its cache
        out, mask = k(inputs=[mx.array(x)], grid=(n, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(n,), (n,)],
                      output_dtypes=[mx.float32, mx.float32], init_value=NAN)
        np.testing.assert_allclose(np.array(out), x.astype(np.float64) * 3 + 1, rtol=1e-6, atol=1e-6,
                                   err_msg=f"{n} elements, {how}")
        i = np.arange(n)
        np.testing.assert_array_equal(np.array(mask), np.where(i % 3 == 0, x, NAN), err_msg=f"{n} elements, {how}")
print("ok")
"""


@pytest.mark.parametrize("device_outputs", ["1", "0"] if DEVICE == "gpu" else ["1"])
def test_outputs_in_fresh_and_reused_buffers_hold_every_element(rng, device_outputs):
    # On MLX's CUDA backend the outputs are MLX's device memory (its
    # cu::malloc_async), or with ALLOY_MLX_DEVICE_OUTPUTS=0 managed memory,
    # into which MLX first copies a cached device buffer it hands out. After
    # mx.clear_cache() they are fresh; reading them on the host in between
    # moves them to managed memory. Two outputs, one filled by init_value and
    # written in part, sizes around MLX's page rounding. In a process of its
    # own: the switch is read once.
    env = dict(os.environ, ALLOY_MLX_DEVICE_OUTPUTS=device_outputs)
    code = FRESH_AND_REUSED.replace("import mlx.core as mx", "import mlx.core as mx\nmx.set_default_device(mx.%s)" % DEVICE)
    r = subprocess.run([sys.executable, "-c", code, str(int(rng.integers(2**31)))], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


def test_mlx_private_functions_are_found_by_name_in_its_symbol_table():
    # The plugin's CUDA outputs come from cu::malloc_async, which libmlx
    # defines but does not export (docs/design/mlx-plugin.md). The lookup
    # must give an exported function's own address, nothing for an unknown
    # name, and on the CUDA libmlx the allocator.
    import ctypes

    import mlx
    from alloy.mlx import _ext

    libmlx = ctypes.CDLL(os.path.join(list(mlx.__path__)[0], "lib", "libmlx.so"))
    exported = "_ZN3mlx4core4evalESt6vectorINS0_5arrayESaIS2_EE"  # mlx::core::eval(std::vector<array>)
    assert _ext._private_symbol_address(exported) == ctypes.cast(getattr(libmlx, exported), ctypes.c_void_p).value
    assert _ext._private_symbol_address("_ZN3mlx4core2no_such_functionEv") == 0
    with pytest.raises(AttributeError):
        getattr(libmlx, _ext._mlx_cuda_malloc_async)  # not exported
    if DEVICE == "gpu":
        assert _ext._private_symbol_address(_ext._mlx_cuda_malloc_async) != 0


def test_atomic_outputs_sum_under_contention(rng):
    a = rng.integers(0, 10, 4096).astype(np.int32)
    src = """
        uint i = thread_position_in_grid.x;
        atomic_fetch_add_explicit(&out[i % 4], inp[i], memory_order_relaxed);
    """
    k = kernel(src, atomic_outputs=True)
    (out,) = k(inputs=[mx.array(a)], grid=(4096, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(4,)],
               output_dtypes=[mx.int32], init_value=0)
    np.testing.assert_array_equal(np.array(out), a.reshape(-1, 4).sum(0))


def test_simdgroup_of_32_and_threadgroup_memory_over_48kb(rng):
    a = rng.standard_normal(256 * 64).astype(np.float32)
    src = """
        threadgroup float tile[16384];  // 64 KB
        uint lid = thread_position_in_threadgroup.x;
        uint gid = thread_position_in_grid.x;
        tile[lid * 64] = inp[gid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float v = simd_sum(tile[lid * 64]);
        if (thread_index_in_simdgroup == 0) out[gid / 32] = v + float(threads_per_simdgroup) * 0.0f;
        if (gid == 0) out[512] = float(threads_per_simdgroup);
    """
    k = kernel(src)
    (out,) = k(inputs=[mx.array(a)], grid=(a.size, 1, 1), threadgroup=(256, 1, 1), output_shapes=[(513,)],
               output_dtypes=[mx.float32], init_value=NAN)
    got = np.array(out)
    np.testing.assert_allclose(got[:512], a.reshape(-1, 32).astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
    assert got[512] == 32


def test_header_and_math_modes(rng):
    a = rng.uniform(-3, 3, 256).astype(np.float32)
    header = "template <typename T> inline T twice(T x) { return x + x; }"
    src = "uint i = thread_position_in_grid.x; out[i] = twice(metal::exp(inp[i]));"
    for mode in ("safe", "relaxed", "fast"):
        k = kernel(src, header=header, compile_options={"math_mode": mode}, name=f"m_{mode}")
        (out,) = k(inputs=[mx.array(a)], grid=(256, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(256,)],
                   output_dtypes=[mx.float32])
        np.testing.assert_allclose(np.array(out), 2 * np.exp(a.astype(np.float64)), rtol=1e-5)
    with pytest.raises(ValueError, match="math_mode"):
        kernel(src, compile_options={"math_mode": "reckless"})


def test_verbose_prints_the_metal_form_and_the_translation(capfd):
    k = kernel("uint i = thread_position_in_grid.x; out[i] = inp[i] + 1;", name="verbose_k")
    (out,) = k(inputs=[mx.ones((8,))], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)],
               output_dtypes=[mx.float32], verbose=True)
    mx.eval(out)
    printed = capfd.readouterr().out
    assert "[[kernel]] void custom_kernel_verbose_k" in printed or "kernel void" in printed
    assert "device const float* inp" in printed or "const device float* inp" in printed
    assert "translated for" in printed


def test_mlx_transforms_compile_vmap_free_custom_function_async_eval_and_streams(rng):
    a = rng.standard_normal(64).astype(np.float32)
    k = kernel("uint i = thread_position_in_grid.x; out[i] = inp[i] * inp[i];", name="square")

    def square(x):
        return k(inputs=[x], grid=(x.size, 1, 1), threadgroup=(32, 1, 1), output_shapes=[x.shape],
                 output_dtypes=[x.dtype])[0]

    @mx.custom_function
    def f(x):
        return square(x)

    @f.vjp
    def f_vjp(x, cotangent, output):  # one primal: MLX passes it bare
        return 2 * x * cotangent

    x = mx.array(a)
    compiled = mx.compile(lambda x: square(x) + 1)
    np.testing.assert_allclose(np.array(compiled(x)), a * a + 1, rtol=1e-6)
    np.testing.assert_allclose(np.array(mx.grad(lambda x: f(x).sum())(x)), 2 * a, rtol=1e-6)
    y = square(x)
    mx.async_eval(y)
    np.testing.assert_allclose(np.array(y), a * a, rtol=1e-6)
    s = mx.new_stream(mx.default_device())
    z = k(inputs=[x], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(64,)], output_dtypes=[mx.float32],
          stream=s)[0]
    np.testing.assert_allclose(np.array(z), a * a, rtol=1e-6)
    # A kernel's node has no derivative of its own: MLX's error type, naming the kernel.
    with pytest.raises(ValueError, match="square"):
        mx.grad(lambda x: square(x).sum())(x)


def test_bad_input_is_rejected_like_alloy_and_leaves_mlx_intact(rng):
    before = mx.array([1.0, 2.0]) * 3
    mx.eval(before)
    k = kernel("uint i = thread_position_in_grid.x; out[i] = inp[i];", name="strict")
    ok = dict(grid=(4, 1, 1), threadgroup=(4, 1, 1), output_shapes=[(4,)], output_dtypes=[mx.float32])
    with pytest.raises(ValueError, match=r"kernel 'strict'.*expected 1 inputs"):
        k(inputs=[], **ok)
    with pytest.raises(ValueError, match="grid"):
        k(inputs=[mx.ones((4,))], **{**ok, "grid": (0, 1, 1)})
    with pytest.raises(ValueError, match="threadgroup"):
        k(inputs=[mx.ones((4,))], **{**ok, "threadgroup": (2048, 1, 1)})
    with pytest.raises(TypeError, match="output_dtypes"):
        k(inputs=[mx.ones((4,))], **{**ok, "output_dtypes": ["float32"]})
    with pytest.raises(ValueError, match="appears twice"):
        kernel("out[0] = 1;", inputs=("a", "a"))
    with pytest.raises(TypeError, match="input_names must be a list, not str"):
        mx.fast.metal_kernel(name="bare", input_names="a", output_names=["out"], source="out[0] = 1;")
    # The call's own arguments: lists or tuples of the right things.
    one = [mx.ones((4,))]
    with pytest.raises(TypeError, match="inputs must be a list"):
        k(inputs=mx.ones((4,)), **ok)
    with pytest.raises(TypeError, match="each output shape"):
        k(inputs=one, **{**ok, "output_shapes": [4]})
    with pytest.raises(ValueError, match="grid must have 3 dimensions, got 2"):
        k(inputs=one, **{**ok, "grid": (4, 1)})
    with pytest.raises(TypeError, match=r"template entries must be \(name, value\) tuples"):
        k(inputs=one, template=[["T", mx.float32]], **ok)
    with pytest.raises(TypeError, match="template value for 'T' must be a Dtype, int or bool, not float"):
        k(inputs=one, template=[("T", 1.5)], **ok)
    # Integers past 32 bits: a ValueError naming the argument (a template
    # value was a bare std::bad_cast; MLX aborts the process on such a shape).
    with pytest.raises(ValueError, match="template value for 'T' is 1099511627776, which does not fit in 32 bits"):
        k(inputs=one, template=[("T", 2**40)], **ok)
    with pytest.raises(ValueError, match="a dimension in output_shapes is 1099511627776"):
        k(inputs=one, **{**ok, "output_shapes": [(2**40,)]})
    # Keyword-only, as MLX's kernel: positional, unknown, missing and
    # non-integer arguments are TypeErrors naming them.
    with pytest.raises(TypeError, match="strict\\(\\) takes keyword arguments only"):
        k(one, **ok)
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        k(inputs=one, colour="red", **ok)
    with pytest.raises(TypeError, match="missing required keyword argument 'grid'"):
        k(inputs=one, **{key: v for key, v in ok.items() if key != "grid"})
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        k(inputs=one, **{**ok, "output_shapes": [(4.0,)]})
    with pytest.raises(TypeError, match="stream must be a Stream, a Device or None"):
        k(inputs=one, stream="gpu", **ok)
    # Keywords spelled by strings built at run time (not interned) still match.
    spelled = {"".join(["thread", "group"]) if key == "threadgroup" else key: v for key, v in ok.items()}
    assert k(inputs=[mx.arange(4, dtype=mx.float32)], **spelled)[0].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert repr(k) == "<alloy.mlx metal_kernel 'strict'>" and k.__name__ == k.name == "strict"
    (as_tuples,) = k(inputs=(mx.arange(4, dtype=mx.float32),), output_shapes=((4,),), output_dtypes=(mx.float32,),
                     grid=[4, 1, 1], threadgroup=[4, 1, 1], template=(("T", mx.float32),))
    assert as_tuples.tolist() == [0.0, 1.0, 2.0, 3.0]
    broken = kernel("uint i = thread_position_in_grid.x;\n    out[i] = undefined_thing(inp[i]);", name="broken")
    # Raised by the call or by the eval (with ALLOY_CHECK_CUDA=1 the call
    # also compiles the CUDA translation), quoting the user's line.
    with pytest.raises(RuntimeError, match=r"(?s)kernel 'broken'.*out\[i\] = undefined_thing\(inp\[i\]\)"):
        mx.eval(broken(inputs=[mx.ones((4,))], **ok))
    assert before.tolist() == [3.0, 6.0]
    (good,) = k(inputs=[mx.arange(4, dtype=mx.float32)], **ok)
    assert good.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_another_mlx_version_is_an_import_error_naming_the_supported_range():
    code = "import mlx.core as mx; mx.__version__ = '0.31.1'; import alloy.mlx"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    assert r.returncode != 0
    assert "ImportError" in r.stderr and "supports MLX 0.32.x" in r.stderr and "0.31.1" in r.stderr


@pytest.mark.parametrize("lazy", [False, True])
def test_ensure_row_contiguous_copies_strided_inputs_evaluated_or_lazy(rng, lazy):
    a = rng.standard_normal((6, 10)).astype(np.float32)
    x = mx.array(a)
    xt = mx.transpose(x)  # a strided view
    if not lazy:
        mx.eval(xt)  # evaluated: its layout is known when the kernel is called
    k = kernel("uint i = thread_position_in_grid.x; out[i] = inp[i];", name="linear_copy")
    (out,) = k(inputs=[xt], grid=(60, 1, 1), threadgroup=(32, 1, 1), output_shapes=[xt.shape],
               output_dtypes=[mx.float32], init_value=NAN)
    want = np.array(xt)  # the kernel reads elements in row-major order of xt
    np.testing.assert_array_equal(np.array(out), want)


def address(a):
    return np.asarray(memoryview(a)).__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_buffers_read_as_wider_vectors_are_aligned_as_metal_aligns_them(rng, dtype):
    # Metal's buffers start on pages; kernels read them as 16-byte vectors
    # (mhc-mlx, mlx-vlm's hyper-connections). MLX's CPU buffers start 8 bytes
    # past a boundary, where such reads fault: alloy.mlx aligns the buffers of
    # kernels whose casts assume it, outputs in place and inputs by a copy.
    # half4 is 8 bytes: no more than MLX gives, so its buffers stay where MLX put them.
    vec = {"float32": "float4", "float16": "half4", "int64": "long2"}[dtype]
    body = f"""
        uint i = thread_position_in_grid.x;
        device {vec}* o = (device {vec}*)out;
        o[i] = *(const device {vec}*)(inp + i * VEC) * 2 + ({vec})(1);
    """
    width = {"float4": 4, "half4": 4, "long2": 2}[vec]
    k = mx.fast.metal_kernel(name=f"wide_{vec}", input_names=["inp"], output_names=["out"],
                             source=body.replace("VEC", str(width)))
    n = 37 * width
    a = mx.array(rng.integers(-50, 50, n)).astype(getattr(mx, dtype))
    mx.eval(a)
    tail = mx.array(rng.integers(-50, 50, n + width)).astype(getattr(mx, dtype))[width:]  # an offset view
    for x in (a, tail):
        (out,) = k(inputs=[x], grid=(n // width, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(n,)],
                   output_dtypes=[x.dtype])
        np.testing.assert_array_equal(np.array(out), np.array(x) * 2 + 1)
        if DEVICE == "cpu" and vec != "half4":
            assert address(out) % 64 == 0
        if DEVICE == "cpu" and vec == "half4":
            assert address(out) % 16 == 8  # MLX's own placement, kept for kernels that need no more


@pytest.mark.skipif(DEVICE != "cpu", reason="the race check runs on the CPU only")
def test_the_race_check_names_two_threads_on_one_threadgroup_element(monkeypatch):
    # Every thread reads buf[0] while lane 0 rewrites it (mhc-mlx's fused backward).
    body = """
        uint lane = thread_position_in_threadgroup.x;
        threadgroup float buf[32];
        buf[lane] = inp[lane];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float first = buf[0];
        buf[lane] = first + 1.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        out[lane] = buf[lane];
    """
    monkeypatch.setenv("ALLOY_RACE_CHECK", "1")  # read at each definition
    k = mx.fast.metal_kernel(name="racy", input_names=["inp"], output_names=["out"], source=body)
    before = mx.arange(4) * 2
    mx.eval(before)
    with pytest.raises(RuntimeError, match=r"kernel 'racy': threadgroup memory race on 'buf' element 0: "
                                           r"thread \(0, 0, 0\) wrote it at source line 7"):
        mx.eval(k(inputs=[mx.ones(32)], grid=(32, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(32,)],
                  output_dtypes=[mx.float32])[0])
    assert np.array(before).tolist() == [0, 2, 4, 6]


def test_a_faulting_kernel_on_mlx_cpu_is_an_error_and_mlx_goes_on():
    before = mx.arange(4) * 3
    mx.eval(before)
    k = kernel("uint i = thread_position_in_grid.x;\n"
               "device float* far = out + 0x100000000000ull;\n"
               "far[i] = inp[i];", name="far_write")
    (bad,) = k(inputs=[mx.ones(256)], grid=(256, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(256,)],
               output_dtypes=[mx.float32], stream=mx.cpu)
    with pytest.raises(RuntimeError, match=r"kernel 'far_write'.*SIGSEGV"):
        mx.eval(bad)
    assert before.tolist() == [0, 3, 6, 9]
    assert (mx.ones(3, stream=mx.cpu) + 1).tolist() == [2.0, 2.0, 2.0]


def test_an_unchecked_write_just_past_a_small_output_is_an_error_and_mlx_goes_on(monkeypatch):
    """Without bounds_check, a write a little past a small output would land
    in MLX's heap; it changes the output's canary tail instead, and the eval
    raises naming the kernel and the output."""
    before = mx.arange(4) * 3
    mx.eval(before)
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")
    k = kernel("uint i = thread_position_in_grid.x;\nout[i + 3] = inp[i];", name="overrun")
    (bad,) = k(inputs=[mx.ones(64)], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(64,)],
               output_dtypes=[mx.float32], stream=mx.cpu)
    with pytest.raises(RuntimeError, match=r"kernel 'overrun': wrote past the end of output 'out' \(64 elements, "
                                           r"256 bytes; byte 256 was changed\)"):
        mx.eval(bad)
    assert before.tolist() == [0, 3, 6, 9]
    (fine,) = k(inputs=[mx.ones(64)], grid=(64, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(67,)],
                output_dtypes=[mx.float32], stream=mx.cpu)
    assert fine[3:].tolist() == [1.0] * 64


@pytest.mark.parametrize("stream", ["cpu", "gpu"] if DEVICE == "gpu" else ["cpu"])
def test_bounds_checked_kernel_names_the_buffer_and_its_size(monkeypatch, stream):
    stream = getattr(mx, stream)
    before = mx.arange(4, stream=stream) * 3
    mx.eval(before)
    # ALLOY_BOUNDS_CHECK is read at each definition, so the same definition
    # made with and without it gives two kernels.
    src = "uint i = thread_position_in_grid.x;\n    out[i] = inp[i + 3];"
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "0")
    unchecked = kernel(src, name="past_end")
    monkeypatch.setenv("ALLOY_BOUNDS_CHECK", "1")
    checked = kernel(src, name="past_end")
    assert checked is not unchecked and kernel(src, name="past_end") is checked
    (bad,) = checked(inputs=[mx.arange(8, dtype=mx.float32)], grid=(8, 1, 1), threadgroup=(8, 1, 1),
                     output_shapes=[(8,)], output_dtypes=[mx.float32], stream=stream)
    with pytest.raises(RuntimeError, match=r"(?s)kernel 'past_end': out-of-bounds read of input 'inp' .* "
                                           r"it has 8 elements.*out\[i\] = inp\[i \+ 3\]"):
        mx.eval(bad)
    (fine,) = checked(inputs=[mx.arange(16, dtype=mx.float32)], grid=(8, 1, 1), threadgroup=(8, 1, 1),
                      output_shapes=[(8,)], output_dtypes=[mx.float32], stream=stream)
    assert fine.tolist() == [float(i + 3) for i in range(8)]
    # An output written past its end, at its own size.
    writer = kernel("uint i = thread_position_in_grid.x;\n    out[i + 2] = inp[i];", name="write_past_end")
    (bad,) = writer(inputs=[mx.ones(8)], grid=(8, 1, 1), threadgroup=(8, 1, 1), output_shapes=[(8,)],
                    output_dtypes=[mx.float32], stream=stream)
    with pytest.raises(RuntimeError, match=r"(?s)kernel 'write_past_end': out-of-bounds write to output 'out' .* "
                                           r"it has 8 elements"):
        mx.eval(bad)
    assert before.tolist() == [0, 3, 6, 9]
    assert (mx.ones(3, stream=stream) + 1).tolist() == [2.0, 2.0, 2.0]


def test_forms_of_mlx_own_kernels_wide_vectors_uniforms_lanes_and_matrices(rng):
    # What MLX's NAX headers and public GEMVs use: vec<T, 8>, uniform<T>,
    # Apple's lane builtin in a helper, and a matrix type; through the plugin.
    a = rng.standard_normal(8 * 64).astype(np.float32)
    header = "inline ushort lane() { return __metal_get_thread_index_in_simdgroup(ushort()); }\n"
    src = """
        uint i = thread_position_in_grid.x;
        const device vec<float, 8>* rows = (const device vec<float, 8>*)inp;
        vec<float, 8> r = rows[i];
        const uniform<float> two = make_uniform(2.0f);
        float2x2 m = float2x2(r[0], r[1], r[2], r[3]);
        float2 mv = m * float2(r[4], r[5]);
        out[4 * i] = (r[6] + r[7]) * float(two);
        out[4 * i + 1] = mv.x;
        out[4 * i + 2] = determinant(m);
        out[4 * i + 3] = float(lane());
    """
    k = kernel(src, header=header, name="mlx_forms")
    (out,) = k(inputs=[mx.array(a)], grid=(64, 1, 1), threadgroup=(64, 1, 1), output_shapes=[(256,)],
               output_dtypes=[mx.float32], init_value=NAN)
    got = np.array(out).reshape(64, 4)
    r = a.reshape(64, 8).astype(np.float64)
    want = np.stack([(r[:, 6] + r[:, 7]) * 2, r[:, 0] * r[:, 4] + r[:, 2] * r[:, 5],
                     r[:, 0] * r[:, 3] - r[:, 2] * r[:, 1], np.arange(64) % 32], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
