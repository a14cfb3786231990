"""The runtime surface of mlx.core against real MLX: compile, checkpoint,
vmap, depends, contiguous, async_eval, stream contexts, device queries,
memory limits and the mx.metal / mx.cuda namespaces."""
import threading

import numpy as np
import pytest

import alloy.core as mx
import mlx.core as mlx_core
from mlx_oracle import assert_same_value, random_array, same, same_error


def test_compile_gives_the_function_values_and_gradients(rng):
    x = random_array(rng, (4, 5))
    y = random_array(rng, (5,))

    def body(m, a, b):
        f = m.compile(lambda a, b: m.exp(a) * b + m.sin(a).sum(axis=-1, keepdims=True))
        return f(a, b), m.grad(lambda a: f(a, b).sum())(a)

    same(body, x, y)


def test_compile_with_state_inputs_and_outputs(rng):
    # MLX's idiom for captured state: inputs=/outputs= name a tree updated
    # inside the compiled function; the updates must be visible afterwards.
    start = random_array(rng, (3,))

    def body(m, s0):
        state = [s0]

        @m.compile  # noqa: B023
        def plain(x):
            return x * 2

        @lambda f: m.compile(f, inputs=state, outputs=state)
        def step(x):
            state[0] = state[0] + x
            return state[0] * 2

        outs = [step(m.ones((3,))) for _ in range(3)]
        return outs + [state[0], plain(s0)]

    same(body, start)


def test_compile_rejects_what_mlx_rejects():
    for module in (mx, mlx_core):
        with pytest.raises(TypeError):
            module.compile(3)
    mx.disable_compile()
    assert mx.compile(lambda x: x + 1)(mx.array(1.0)).item() == 2.0
    mx.enable_compile()


def test_checkpoint_gradients_match_mlx(rng):
    x = random_array(rng, (6,))
    w = random_array(rng, (6,))

    def body(m, x, w):
        layer = m.checkpoint(lambda x, w: m.tanh(x * w) * m.exp(-x))
        value, grads = m.value_and_grad(lambda x, w: layer(x, w).sum(), argnums=(0, 1))(x, w)
        return [value, *grads]

    same(body, x, w)


@pytest.mark.parametrize("in_axes,out_axes,shapes", [
    (0, 0, [(3, 4), (3, 4)]),
    ((0, None), 0, [(3, 4), (4,)]),
    ((1, 0), 0, [(4, 3), (3, 4)]),
    ((-1, None), 1, [(4, 5), (4,)]),
])
def test_vmap_matches_mlx(rng, in_axes, out_axes, shapes):
    args = [random_array(rng, s) for s in shapes]
    same(lambda m, *a: m.vmap(lambda x, y: m.exp(x) * y + x.sum(), in_axes=in_axes, out_axes=out_axes)(*a), *args)


def test_vmap_of_several_outputs_and_errors(rng):
    x = random_array(rng, (3, 2))
    same(lambda m, a: m.vmap(lambda v: (v.sum(), v * 2), out_axes=(0, 1))(a), x)
    same_error(lambda m, a, b: m.vmap(lambda p, q: p * q)(a, b), x, random_array(rng, (4, 2)))
    same_error(lambda m, a: m.vmap(lambda p: p, in_axes=2)(a), x)


def test_depends_keeps_values_and_gradients(rng):
    a, b = random_array(rng, (5,)), random_array(rng, (2, 3))
    same(lambda m, a, b: m.depends(a, b), a, b)
    same(lambda m, a, b: m.depends([a, a * 2], [b]), a, b)
    same(lambda m, a, b: m.grad(lambda a, b: (m.depends(a, b) * 3).sum(), argnums=(0, 1))(a, b), a, b)


def test_contiguous_and_async_eval(rng):
    x = random_array(rng, (4, 6))
    same(lambda m, a: m.contiguous(a.T), x)
    same(lambda m, a: m.contiguous(a[::2, 1:], allow_col_major=True), x)
    a = mx.array(x) * 2
    assert mx.async_eval(a) is None
    np.testing.assert_allclose(np.array(a), x * 2)


def test_stream_context_sets_and_restores_the_default(rng):
    before = mx.default_device()
    s = mx.new_stream(mx.cpu)
    with mx.stream(s) as ctx:
        assert isinstance(ctx, mx.StreamContext)
        assert mx.default_device() == mx.cpu and mx.default_stream(mx.cpu) == s
        out = mx.exp(mx.array([1.0]))
    assert mx.default_device() == before and mx.default_stream(mx.cpu) != s
    np.testing.assert_allclose(np.array(out), np.exp([1.0]), rtol=1e-6)
    with pytest.raises(TypeError):
        mx.stream("cpu")


def test_thread_local_streams_differ_per_thread():
    tls = mx.new_thread_local_stream(mx.cpu)
    seen = []

    def work():
        with mx.stream(tls):
            seen.append(mx.default_stream(mx.cpu))
            mx.eval(mx.ones((2,)) + 1)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 2 and seen[0] != seen[1]
    assert mx.new_thread_unsafe_stream(mx.cpu).device == mx.cpu
    assert mx.clear_streams() is None


def test_device_info_and_count_have_mlx_keys():
    mine, theirs = mx.device_info(mx.cpu), mlx_core.device_info(mlx_core.cpu)
    assert set(theirs) <= set(mine)
    assert mine["architecture"] == theirs["architecture"]
    assert mx.device_count(mx.cpu) == mlx_core.device_count(mlx_core.cpu) == 1
    assert mx.device_count(mx.gpu) == (1 if mx.is_available(mx.gpu) else 0)
    assert mx.device_info() == mx.device_info(mx.default_device())


def test_metal_namespace_reports_metal_kernels_available():
    assert mx.metal.is_available() is True
    info = mx.metal.device_info()
    for key in ("architecture", "device_name", "memory_size", "max_recommended_working_set_size"):
        assert key in info
    assert info["max_recommended_working_set_size"] > 0
    assert mx.metal.get_active_memory() == mx.get_active_memory()
    with pytest.warns(UserWarning, match="capture"):
        mx.metal.start_capture("trace.gputrace")
    assert mx.cuda.is_available() == mx.is_available(mx.gpu)


def test_memory_limits_return_the_previous_value():
    for module in (mx, mlx_core):
        limit = module.get_memory_limit()
        assert limit > 0
        assert module.set_memory_limit(limit // 2) == limit
        assert module.get_memory_limit() == limit // 2
        module.set_memory_limit(limit)
        previous_cache = module.set_cache_limit(0)
        assert module.set_cache_limit(previous_cache) == 0
        assert module.set_wired_limit(0) == 0


def test_cache_limit_zero_empties_the_cache(rng):
    # On the GPU freed blocks are cached; a cache limit of 0 gives them back.
    x = mx.array(random_array(rng, (256, 256)))
    previous = mx.set_cache_limit(0)
    try:
        for _ in range(3):
            mx.eval(x * 2)
        assert mx.get_cache_memory() == 0
    finally:
        mx.set_cache_limit(previous)
    assert_same_value(mx.array(3.0) * 2, mlx_core.array(3.0) * 2)


def test_the_cpu_keeps_large_freed_blocks_for_reuse(rng):
    # Blocks of 4 MB and more freed on the CPU stay cached (their pages
    # mapped) for the next array of the same size; clear_cache and a cache
    # limit of 0 give them back; results are unchanged.
    with mx.stream(mx.cpu):
        mx.clear_cache()
        n = (8 << 20) // 4 + int(rng.integers(0, 1000))  # 8 MB and a little: a size no other test frees
        x_np = rng.standard_normal(n).astype(np.float32)
        x = mx.array(x_np)
        mx.eval(x)
        before = mx.get_cache_memory()
        y = x * 2.0
        mx.eval(y)
        del y  # its block goes to the cache
        assert mx.get_cache_memory() >= before + 4 * n
        z = x * 3.0  # the same size: the cached block is taken again
        mx.eval(z)
        assert mx.get_cache_memory() == before
        np.testing.assert_array_equal(np.array(z), x_np * np.float32(3.0))
        del z
        mx.clear_cache()
        assert mx.get_cache_memory() == 0
        previous = mx.set_cache_limit(0)
        try:
            w = x + 1.0
            mx.eval(w)
            del w
            assert mx.get_cache_memory() == 0
        finally:
            mx.set_cache_limit(previous)


def test_export_to_dot_writes_the_unevaluated_graph(tmp_path, rng):
    x = random_array(rng, (3,))
    texts = {}
    for name, module in [("alloy", mx), ("mlx", mlx_core)]:
        a = module.array(x)
        b = module.exp(a) + a
        path = tmp_path / f"{name}.dot"
        module.export_to_dot(str(path), b, out=module.sin(b))
        texts[name] = path.read_text()
    for text in texts.values():
        assert text.startswith("digraph {") and text.rstrip().endswith("}")
        assert '"out"' in text
    # the same three ops, each drawn once as a rectangle
    assert texts["alloy"].count("shape=rectangle") == texts["mlx"].count("shape=rectangle") == 3
    # evaluated arrays are sources, not nodes
    b = mx.exp(mx.array(x))
    mx.eval(b)
    import io
    buf = io.StringIO()
    mx.export_to_dot(buf, b)
    assert "shape=rectangle" not in buf.getvalue() and "rank=source" in buf.getvalue()
