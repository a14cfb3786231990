"""Metal forms that a sweep of the MSL specification and of public kernels
(dflash-mlx, mtplx, vmlx, MLX's NAX headers) found missing or wrong: the
vector forms of the functions with an output argument, relational functions
on vectors and half, metal::fast:: on half vectors, swizzles assigned from the
vector they write, packed vectors' named components, components and swizzles
written through a vector cast, `vec<T, 8>`, `uniform<T>`, Apple's lane
builtin, and a macro of the body naming locals across a barrier.

Each kernel runs on the test device (and, on a CPU run, is compiled for CUDA
too) and is checked against numpy in float64 on fresh random inputs; outputs
are poisoned with NaN so an element left unwritten shows.
"""
import ml_dtypes
import numpy as np
import pytest

import alloy.core as mx

N = 64  # threads; each takes one float4 of the input


def run(name, source, inputs, out_shape, out_dtype=mx.float32, threads=N, group=32):
    names = [f"a{i}" for i in range(len(inputs))]
    k = mx.fast.metal_kernel(name=name, input_names=names, output_names=["out"], source=source)
    init = float("nan") if out_dtype in (mx.float32, mx.float16) else -7
    (out,) = k(inputs=[mx.array(x) for x in inputs], grid=(threads, 1, 1), threadgroup=(group, 1, 1),
               output_shapes=[out_shape], output_dtypes=[out_dtype], init_value=init)
    return np.array(out)


LOAD4 = "uint i = thread_position_in_grid.x; float4 v = float4(a0[4*i], a0[4*i+1], a0[4*i+2], a0[4*i+3]);\n"


def test_functions_with_an_output_argument_take_vectors(rng):
    # frexp, modf, sincos, ldexp and ilogb on float4 (with int4 exponents), as on scalars.
    x = (rng.standard_normal(4 * N) * rng.choice([1e-3, 1, 300], 4 * N)).astype(np.float32)
    src = LOAD4 + """
    int4 e; float4 m = frexp(v, e);
    float4 ip; float4 f = modf(v, ip);
    float4 c; float4 s = sincos(v, c);
    float4 l = ldexp(v, int4(1, -2, 3, -4));
    int4 lg = ilogb(v);
    for (int k = 0; k < 4; ++k) {
      out[7 * (4*i+k) + 0] = m[k];  out[7 * (4*i+k) + 1] = float(e[k]);
      out[7 * (4*i+k) + 2] = f[k];  out[7 * (4*i+k) + 3] = ip[k];
      out[7 * (4*i+k) + 4] = s[k] - c[k];
      out[7 * (4*i+k) + 5] = l[k];  out[7 * (4*i+k) + 6] = float(lg[k]);
    }
    """
    got = run("msl_vec_outarg", src, [x], (4 * N * 7,)).reshape(-1, 7)
    w = x.astype(np.float64)
    m, e = np.frexp(w)
    f, ip = np.modf(w)
    want = np.stack([m, e, f, ip, np.sin(w) - np.cos(w), w * np.tile([2, 0.25, 8, 1 / 16], N),
                     np.floor(np.log2(np.abs(w)))], axis=1)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


def test_relational_functions_on_vectors_and_half(rng):
    x = rng.standard_normal(4 * N).astype(np.float32)
    x[rng.choice(4 * N, 24, replace=False)] = rng.choice([np.inf, -np.inf, np.nan, 1e-40, -1e-41, 7e4], 24)
    src = LOAD4 + """
    bool4 inf = isinf(v), fin = isfinite(v), nrm = isnormal(v), nan = isnan(v), sgn = signbit(v);
    for (int k = 0; k < 4; ++k) {
      half h = half(a0[4*i+k]);
      out[4*i+k] = (inf[k] ? 1 : 0) + (fin[k] ? 2 : 0) + (nrm[k] ? 4 : 0) + (nan[k] ? 8 : 0) + (sgn[k] ? 16 : 0)
                   + (isinf(h) ? 32 : 0) + (isfinite(h) ? 64 : 0) + (isnormal(h) ? 128 : 0);
    }
    """
    got = run("msl_relational_vec", src, [x], (4 * N,), mx.int32)
    h = x.astype(np.float16).astype(np.float64)
    want = (np.isinf(x) * 1 + np.isfinite(x) * 2 + (np.isfinite(x) & (np.abs(x) >= np.finfo(np.float32).tiny)) * 4
            + np.isnan(x) * 8 + np.signbit(x) * 16 + np.isinf(h) * 32 + np.isfinite(h) * 64
            + (np.isfinite(h) & (np.abs(h) >= np.finfo(np.float16).tiny)) * 128)
    np.testing.assert_array_equal(got, want)


def test_fast_math_functions_on_half_vectors(rng):
    x = rng.uniform(-2, 2, 4 * N).astype(np.float16)
    src = """
    uint i = thread_position_in_grid.x;
    half4 v = half4(a0[4*i], a0[4*i+1], a0[4*i+2], a0[4*i+3]);
    half4 r = fast::exp(v) + fast::sin(v) + metal::fast::log2(v * v + 1.0h);
    for (int k = 0; k < 4; ++k) out[4*i+k] = r[k];
    """
    got = run("msl_fast_half4", src, [x], (4 * N,), mx.float16).astype(np.float64)
    w = x.astype(np.float64)
    np.testing.assert_allclose(got, np.exp(w) + np.sin(w) + np.log2(w * w + 1), rtol=4e-3, atol=4e-3)


def test_a_swizzle_assigned_from_the_vector_it_writes(rng):
    x = rng.standard_normal(4 * N).astype(np.float32)
    src = LOAD4 + """
    float4 r = v; r.wzyx = r;           // reversed: every component read before any is written
    float4 s = v; s.yx = s.xy;          // the first two swapped
    float3 t = v.xyz; t.zxy = t;        // rotated
    for (int k = 0; k < 4; ++k) { out[12*i+k] = r[k]; out[12*i+4+k] = s[k]; }
    for (int k = 0; k < 3; ++k) out[12*i+8+k] = t[k];
    out[12*i+11] = 0;
    """
    got = run("msl_swizzle_alias", src, [x], (12 * N,)).reshape(N, 12)
    v = x.reshape(N, 4)
    want = np.concatenate([v[:, ::-1], v[:, [1, 0, 2, 3]], v[:, [1, 2, 0]], np.zeros((N, 1))], axis=1)
    np.testing.assert_array_equal(got, want)


def test_packed_vectors_have_named_components(rng):
    x = rng.standard_normal(3 * N).astype(np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    const device packed_float3* rows = (const device packed_float3*)a0;
    packed_float3 p = rows[i];
    p.y = p.x * 2 + p.z;
    p.xz = float2(p.z, p.x);           // swapped through a swizzle
    float3 v = p;
    out[3*i] = v.x; out[3*i+1] = p.g; out[3*i+2] = rows[i].z - p[2];
    """
    got = run("msl_packed_components", src, [x], (3 * N,)).reshape(N, 3)
    r = x.astype(np.float64).reshape(N, 3)
    want = np.stack([r[:, 2], 2 * r[:, 0] + r[:, 2], r[:, 2] - r[:, 0]], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_components_and_swizzles_written_through_a_cast_at_any_float(rng):
    # Rows of 6 floats: every other row's float4 starts 8 bytes past 16.
    x = rng.standard_normal(6 * N).astype(np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    for (int k = 0; k < 6; ++k) out[6*i+k] = a0[6*i+k];
    device float4* p = (device float4*)(out + 6*i + 2);
    p[0].x += 1.0f;
    ((device float4*)(out + 6*i + 2))[0].zw = float2(p[0].w, p[0].z);  // swapped
    p[0].xy *= 3.0f;
    """
    got = run("msl_cast_component_writes", src, [x], (6 * N,)).reshape(N, 6)
    r = x.astype(np.float64).reshape(N, 6).copy()
    want = r.copy()
    want[:, 2] = (r[:, 2] + 1) * 3
    want[:, 3] = r[:, 3] * 3
    want[:, 4], want[:, 5] = r[:, 5], r[:, 4]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_eight_and_sixteen_wide_vectors(rng):
    # mtplx / dflash-mlx GEMVs: `using Vec8 = vec<T, 8>;` read through a cast
    # pointer, indexed, and combined with vector arithmetic.
    for dtype, np_dtype, tol in ((mx.float16, np.float16, 3e-3), (mx.float32, np.float32, 1e-5)):
        x = rng.standard_normal(16 * N).astype(np_dtype)
        src = """
        using Vec8 = vec<T, 8>;
        uint i = thread_position_in_grid.x;
        const device Vec8* xv = (const device Vec8*)inp;
        Vec8 a = xv[2 * i], b = xv[2 * i + 1];
        Vec8 c = a * b + Vec8(T(1));
        vec<float, 16> w;
        for (int j = 0; j < 8; ++j) { w[j] = float(c[j]); w[8 + j] = float(a.x) * j; }
        float s = 0.0f;
        for (int j = 0; j < 16; ++j) s += w[j];
        out[i] = s;
        """
        k = mx.fast.metal_kernel(name="msl_vec8", input_names=["inp"], output_names=["out"], source=src)
        (got,) = k(inputs=[mx.array(x)], template=[("T", dtype)], grid=(N, 1, 1), threadgroup=(32, 1, 1),
                   output_shapes=[(N,)], output_dtypes=[mx.float32], init_value=float("nan"))
        r = x.astype(np.float64).reshape(N, 2, 8)
        want = (r[:, 0] * r[:, 1] + 1).sum(1) + r[:, 0, 0] * 28
        np.testing.assert_allclose(np.array(got), want, rtol=tol, atol=tol * 8)


LANE_HELPER = """
// As MLX's NAX headers: a helper outside the kernel asks Apple's compiler for the lane.
inline ushort lane_of_caller() { return __metal_get_thread_index_in_simdgroup(ushort()); }
"""


def test_uniform_values_and_the_lane_builtin(rng):
    x = rng.standard_normal(6 * 40).astype(np.float32)
    scale = rng.standard_normal(1).astype(np.float32)
    src = """
    const metal::uniform<float> s = make_uniform(a1[0]) * make_uniform(2.0f);
    constexpr const uniform<int> stride = make_uniform(3);
    uint i = thread_index_in_threadgroup + threadgroup_position_in_grid.x * 240;
    out[i] = a0[i] * float(s) + float(stride) + 100.0f * lane_of_caller();
    """
    k = mx.fast.metal_kernel(name="msl_uniform_lane", input_names=["a0", "a1"], output_names=["out"], source=src,
                             header=LANE_HELPER)
    # A 6 x 40 threadgroup: lanes follow the linear index within the group.
    (got,) = k(inputs=[mx.array(x), mx.array(scale)], grid=(6, 40, 1), threadgroup=(6, 40, 1),
               output_shapes=[(240,)], output_dtypes=[mx.float32], init_value=float("nan"))
    want = x.astype(np.float64) * scale[0] * 2 + 3 + 100.0 * (np.arange(240) % 32)
    np.testing.assert_allclose(np.array(got), want, rtol=1e-6, atol=1e-4)


def test_a_macro_of_the_body_names_locals_across_a_barrier(rng):
    # dflash-mlx's pipelined GEMMs: `#define STAGE_B(...)` in the body names
    # locals declared before a barrier and is expanded after it.
    x = rng.standard_normal(64).astype(np.float32)
    src = """
    uint tid = thread_position_in_threadgroup.x;
    float scale = a0[tid] * 0.5f + 1.0f;
    threadgroup float buf[64];
    #define STAGE(slot) { buf[(slot)] = scale * a0[63 - (slot)]; }
    buf[tid] = 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    STAGE(tid);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[tid] = buf[63 - tid] + scale;
    #undef STAGE
    """
    got = run("msl_body_macro_barrier", src, [x], (64,), threads=64, group=64)
    w = x.astype(np.float64)
    scale = w * 0.5 + 1
    want = scale[::-1] * w + scale
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["auto", "coroutines", "fibers"])
def test_two_simd_group_calls_in_one_statement_under_each_thread_model(rng, monkeypatch, mode):
    # g++ 12 may call the first co_await's await_resume only after the second
    # has suspended; each call must still return its own exchange's value.
    # A `?:` around a SIMD-group call is what makes `auto` choose coroutines.
    monkeypatch.setenv("ALLOY_CPU_SYNC", mode)
    x = rng.integers(-50, 50, 48).astype(np.int32)
    src = """
    uint i = thread_position_in_grid.x;
    int v = a0[i];
    out[4*i] = simd_min(v) * 1000 + simd_max(v);
    out[4*i+1] = simd_sum(v) * 10 + (simd_is_first() ? 1 : 0);
    out[4*i+2] = (simd_all(v < 100) ? 1 : 0) + (simd_any(v == a0[0]) ? 2 : 0);
    out[4*i+3] = simd_prefix_inclusive_sum(v) * 1000 + simd_shuffle(v, 3);
    """
    got = run("msl_two_simd_calls", src, [x], (4 * 48,), mx.int32, threads=48, group=48).reshape(48, 4)
    want = np.zeros((48, 4), np.int64)
    for lo, hi in ((0, 32), (32, 48)):  # a full SIMD group and a partial one
        g = x[lo:hi].astype(np.int64)
        want[lo:hi, 0] = g.min() * 1000 + g.max()
        want[lo:hi, 1] = g.sum() * 10 + (np.arange(hi - lo) == 0)
        want[lo:hi, 2] = 1 + 2 * (lo == 0 or bool((g == x[0]).any()))
        want[lo:hi, 3] = np.cumsum(g) * 1000 + g[3]
    np.testing.assert_array_equal(got, want)


def test_pi_scaled_trigonometry_exp10_and_half_precision_steps(rng):
    # sinpi/cospi/tanpi reduce x exactly (sin(x * pi) lost 3e-4 at x = -96);
    # exp10 to a few ulp; nextafter and fract in half and bfloat's own units.
    x = np.concatenate([rng.uniform(-100, 100, 56), [1, 0.5, 2, -3, 1e6 + 0.5, 4194304.5, 0.25, -0.75]])
    x = x.astype(np.float32)
    e = rng.uniform(-30, 30, 64).astype(np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    float v = a0[i];
    out[6*i] = sinpi(v); out[6*i+1] = cospi(v); out[6*i+2] = exp10(a1[i]);
    out[6*i+3] = float(nextafter(half(v), half(v + 1000.0f)));
    out[6*i+4] = float(nextafter(bfloat(v), bfloat(-1000.0f)));
    out[6*i+5] = float(fract(half(v * 1e-6f))) + float(fract(bfloat(-v * 1e-7f)));
    """
    got = run("msl_pi_trig_steps", src, [x, e], (6 * 64,), threads=64).reshape(64, 6)
    w = x.astype(np.float64)
    np.testing.assert_allclose(got[:, 0], np.sin(np.pi * np.fmod(w, 2)), atol=4e-7)
    np.testing.assert_allclose(got[:, 1], np.cos(np.pi * np.fmod(w, 2)), atol=4e-7)
    np.testing.assert_allclose(got[:, 2], 10.0 ** e.astype(np.float64), rtol=4 * 2.0 ** -23)
    h = x.astype(np.float16)
    np.testing.assert_array_equal(got[:, 3], np.nextafter(h, np.float16(np.inf)).astype(np.float32))
    b = x.astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got[:, 4], np.nextafter(b, ml_dtypes.bfloat16(-np.inf)).astype(np.float32))
    fh = np.float16(x * np.float32(1e-6)).astype(np.float64)
    fb = (-x * np.float32(1e-7)).astype(ml_dtypes.bfloat16).astype(np.float64)
    want = (np.minimum(fh - np.floor(fh), 1 - 2.0 ** -11).astype(np.float16).astype(np.float64)
            + np.minimum(fb - np.floor(fb), 1 - 2.0 ** -8).astype(ml_dtypes.bfloat16).astype(np.float64))
    assert (got[:, 5] < 2).all()
    np.testing.assert_allclose(got[:, 5], want, atol=2e-3)


def test_three_operand_float_and_saturating_integer_functions(rng):
    x = rng.standard_normal((3, 4 * N)).astype(np.float32)
    x[0, :8] = np.nan  # fmax3/fmin3 take the others, as fmax and fmin do
    ints = rng.integers(-2**30, 2**30, (3, 4 * N)).astype(np.int32)
    src = """
    uint i = thread_position_in_grid.x;
    float a = a0[i], b = a0[4 * 64 + i], c = a0[8 * 64 + i];
    out[8*i] = fmax3(a, b, c); out[8*i+1] = fmin3(a, b, c); out[8*i+2] = fast::fmedian3(b, c, b + c);
    int p = a1[i], q = a1[4 * 64 + i], r = a1[8 * 64 + i];
    out[8*i+3] = float(madsat(p, q, r));
    int4 v = int4(p, q, r, p ^ q);
    int4 e = extract_bits(v, 3u, 7u), s = insert_bits(v, int4(-1), 5u, 4u);
    out[8*i+4] = float(e.x + e.y * 3 + e.z * 5 + e.w * 7);
    out[8*i+5] = float(s.w);
    out[8*i+6] = (isunordered(a, b) ? 1.0f : 0.0f) + (isordered(b, c) ? 2.0f : 0.0f);
    out[8*i+7] = float(madhi(uint(p), uint(q), uint(r)));
    """
    got = run("msl_three_operand", src, [x.reshape(-1), ints.reshape(-1)], (8 * 4 * N,), threads=4 * N).reshape(-1, 8)
    a, b, c = x.astype(np.float64)
    p, q, r = ints.astype(np.int64)
    np.testing.assert_array_equal(got[:, 0], np.fmax(np.fmax(a, b), c).astype(np.float32))
    np.testing.assert_array_equal(got[:, 1], np.fmin(np.fmin(a, b), c).astype(np.float32))
    bc = (x[1] + x[2]).astype(np.float64)
    np.testing.assert_array_equal(got[:, 2], np.median(np.stack([b, c, bc]), axis=0).astype(np.float32))
    np.testing.assert_array_equal(got[:, 3], np.clip(p * q + r, -2**31, 2**31 - 1).astype(np.float32))

    def extract(v):  # bits 3..9, sign-extended
        f = (v >> 3) & 0x7f
        return np.where(f >= 64, f - 128, f)
    w = (p ^ q)
    want_e = extract(p) + extract(q) * 3 + extract(r) * 5 + extract(w) * 7
    np.testing.assert_array_equal(got[:, 4], want_e.astype(np.float32))
    np.testing.assert_array_equal(got[:, 5], (w | (0xf << 5)).astype(np.int32).astype(np.float32))
    np.testing.assert_array_equal(got[:, 6], (np.isnan(a) | np.isnan(b)) * 1.0 + (~np.isnan(b) & ~np.isnan(c)) * 2.0)
    u = lambda t: t.astype(np.int64) & 0xffffffff  # noqa: E731
    np.testing.assert_array_equal(got[:, 7], (((u(p) * u(q)) >> 32) + u(r)).astype(np.uint32).astype(np.float32))


def test_geometric_reflections_and_normalized_packing(rng):
    v = rng.standard_normal((N, 3, 3)).astype(np.float32)
    q = rng.uniform(-1.3, 1.3, (N, 4)).astype(np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    float3 I = float3(a0[9*i], a0[9*i+1], a0[9*i+2]);
    float3 n = normalize(float3(a0[9*i+3], a0[9*i+4], a0[9*i+5]));
    float3 nref = float3(a0[9*i+6], a0[9*i+7], a0[9*i+8]);
    float3 rf = reflect(I, n), rr = refract(normalize(I), n, 0.7f), ff = faceforward(n, I, nref);
    for (int k = 0; k < 3; ++k) { out[16*i+k] = rf[k]; out[16*i+3+k] = rr[k]; out[16*i+6+k] = ff[k]; }
    float4 c = float4(a1[4*i], a1[4*i+1], a1[4*i+2], a1[4*i+3]);
    out[16*i+9] = float(pack_float_to_unorm4x8(c));
    out[16*i+10] = float(pack_float_to_snorm4x8(c) & 0xffffu);
    out[16*i+11] = float(pack_float_to_unorm2x16(c.xy) >> 16);
    float4 back = unpack_snorm4x8_to_float(pack_float_to_snorm4x8(c));
    half2 back2 = unpack_unorm2x16_to_half(pack_half_to_unorm2x16(half2(c.zw)));
    out[16*i+12] = back.x; out[16*i+13] = back.w; out[16*i+14] = float(back2.y);
    out[16*i+15] = float(pack_float_to_unorm10a2(c) >> 20);
    """
    got = run("msl_geometric_pack", src, [v.reshape(-1), q.reshape(-1)], (16 * N,)).reshape(N, 16)
    w = v.astype(np.float64)
    I, n, nref = w[:, 0], w[:, 1] / np.linalg.norm(w[:, 1], axis=1, keepdims=True), w[:, 2]
    dn = (n * I).sum(1, keepdims=True)
    np.testing.assert_allclose(got[:, 0:3], I - 2 * dn * n, rtol=1e-5, atol=1e-5)
    In = I / np.linalg.norm(I, axis=1, keepdims=True)
    d = (n * In).sum(1, keepdims=True)
    k = 1 - 0.49 * (1 - d * d)
    rr = np.where(k < 0, 0.0, 0.7 * In - (0.7 * d + np.sqrt(np.maximum(k, 0))) * n)
    np.testing.assert_allclose(got[:, 3:6], rr, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[:, 6:9], np.where((nref * I).sum(1, keepdims=True) < 0, n, -n), rtol=1e-6, atol=1e-6)
    # The packing scales in float, as Metal does (round(clamp(c) * 65535.0f),
    # ties to even): seed 2649720515's 0.34284735f * 65535 is 22468.5 in
    # float (so 22468) and 22468.5009 in float64.
    c = q.astype(np.float64)
    F32 = np.float32
    q32 = q.astype(F32)
    un = np.rint(np.clip(q32, 0, 1) * F32(255)).astype(np.int64)
    sn = np.rint(np.clip(q32, -1, 1) * F32(127)).astype(np.int64) & 0xff
    np.testing.assert_array_equal(got[:, 9], (un * (256 ** np.arange(4))).sum(1).astype(np.float32))
    np.testing.assert_array_equal(got[:, 10], (sn[:, 0] + 256 * sn[:, 1]).astype(np.float32))
    np.testing.assert_array_equal(got[:, 11], np.rint(np.clip(q32[:, 1], 0, 1) * F32(65535)).astype(np.float32))
    snv = np.maximum(np.rint(np.clip(q32, -1, 1) * F32(127)) / 127, -1)
    np.testing.assert_allclose(got[:, 12], snv[:, 0], rtol=1e-6)
    np.testing.assert_allclose(got[:, 13], snv[:, 3], rtol=1e-6)
    hw = np.clip(c[:, 3].astype(np.float16).astype(np.float64), 0, 1)
    np.testing.assert_allclose(got[:, 14], (np.rint(hw * 65535) / 65535).astype(np.float16), rtol=1e-3)
    b10 = np.rint(np.clip(q32[:, 2], 0, 1) * F32(1023)) + 1024 * np.rint(np.clip(q32[:, 3], 0, 1) * F32(3))
    np.testing.assert_array_equal(got[:, 15], b10.astype(np.float32))


def test_fences_with_a_thread_scope(rng):
    x = rng.standard_normal(N).astype(np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    out[i] = a0[i] * 2.0f;
    atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
    atomic_thread_fence(mem_flags::mem_threadgroup, memory_order_relaxed);
    """
    got = run("msl_fence_scope", src, [x], (N,))
    np.testing.assert_array_equal(got, x * 2)


def test_matrix_types(rng):
    # Column-major as in Metal: m[c] is column c; floatCxR has C columns of R rows.
    x = rng.standard_normal((N, 36)).astype(np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    const device float* p = a0 + 36 * i;
    float3x3 a = float3x3(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]);
    float2x3 b = float2x3(float3(p[9], p[10], p[11]), float3(p[12], p[13], p[14]));  // 2 columns of 3
    float4x4 d;
    for (int c = 0; c < 4; ++c) d[c] = float4(p[15 + 4*c], p[16 + 4*c], p[17 + 4*c], p[18 + 4*c]);
    float3 v = float3(p[31], p[32], p[33]);
    float3 av = a * v;                          // 3
    float2 vb = v * b;                          // v dotted with b's columns
    float2x3 ab = a * b + 2.0f * b - b * 0.5f;  // 2 columns of 3
    float3x2 bt = transpose(b);
    matrix<float, 2, 2> bb = bt * b + float2x2(1.0f);
    half2x2 h = half2x2(bb);
    device float* o = out + 24 * i;
    for (int k = 0; k < 3; ++k) o[k] = av[k];
    o[3] = vb.x; o[4] = vb.y;
    for (int c = 0; c < 2; ++c) for (int r = 0; r < 3; ++r) o[5 + 3*c + r] = ab[c][r];
    for (int c = 0; c < 2; ++c) for (int r = 0; r < 2; ++r) o[11 + 2*c + r] = bb[c][r];
    o[15] = determinant(a); o[16] = determinant(d); o[17] = determinant(bb);
    o[18] = float(determinant(h)); o[19] = float(h[1].x);
    o[20] = bt[2][1]; o[21] = (-a)[0][0]; o[22] = (a - a)[2][2]; o[23] = float3x3(3.0f)[1][1];
    """
    got = run("msl_matrices", src, [x.reshape(-1)], (24 * N,)).reshape(N, 24)
    w = x.astype(np.float64)
    A = w[:, 0:9].reshape(N, 3, 3).transpose(0, 2, 1)     # rows x columns
    B = w[:, 9:15].reshape(N, 2, 3).transpose(0, 2, 1)    # 3 x 2
    D = w[:, 15:31].reshape(N, 4, 4).transpose(0, 2, 1)
    v = w[:, 31:34]
    AB = A @ B + 2 * B - 0.5 * B
    BB = B.transpose(0, 2, 1) @ B + np.eye(2)
    want = np.concatenate([
        np.einsum("nrc,nc->nr", A, v), np.einsum("nr,nrc->nc", v, B),
        AB.transpose(0, 2, 1).reshape(N, 6), BB.transpose(0, 2, 1).reshape(N, 4),
        np.linalg.det(A)[:, None], np.linalg.det(D)[:, None], np.linalg.det(BB)[:, None],
        np.linalg.det(BB)[:, None], BB[:, 0, 1][:, None], B[:, 2, 1][:, None], -A[:, 0, 0][:, None],
        np.zeros((N, 1)), np.full((N, 1), 3.0)], axis=1)
    tol = np.full(24, 1e-4)
    tol[18:20] = 5e-2  # half
    np.testing.assert_array_less(np.abs(got - want), tol * np.maximum(1, np.abs(want)))


FIELDS_NAMED_LIKE_SWIZZLES = """
// piet-metal's command structs: fields named like swizzles.
struct CmdStroke { ushort cmd; uint rgba; half halfWidth; };
struct Vtx { float2 xy; float zw; float4 rgba; };
"""


def test_struct_fields_named_like_swizzles_and_vectors_in_dropped_branches(rng):
    x = rng.standard_normal(4 * N).astype(np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    struct Local { float rg; float v; };  // the kernel's own struct: its field is left alone
    Local loc; loc.v = 0.0f;
    CmdStroke s; s.cmd = 1; s.rgba = uint(i) * 3u; s.halfWidth = 0.5h;
    const thread CmdStroke* p = &s;
    Vtx v; v.xy = float2(a0[4*i], a0[4*i+1]); v.zw = a0[4*i+2];
    v.rgba = float4(v.xy, v.zw, 1.0f);
    v.rgba.yx = v.xy;               // a real swizzle of the field that is a vector
    #if HEAD_DIM == 128
    float8 never;                   // HEAD_DIM is a template parameter: no macro, this branch is dropped
    #endif
    out[4*i] = float(p->rgba) + v.xy.y;
    out[4*i+1] = v.rgba.x + v.rgba.w;
    out[4*i+2] = v.zw + float(s.halfWidth) + loc.v;
    out[4*i+3] = v.rgba.y;
    """
    k = mx.fast.metal_kernel(name="msl_swizzle_named_fields", input_names=["a0"], output_names=["out"], source=src,
                             header=FIELDS_NAMED_LIKE_SWIZZLES)
    (got,) = k(inputs=[mx.array(x)], template=[("HEAD_DIM", 128)], grid=(N, 1, 1), threadgroup=(32, 1, 1),
               output_shapes=[(4 * N,)], output_dtypes=[mx.float32], init_value=float("nan"))
    r = x.reshape(N, 4).astype(np.float64)
    want = np.stack([np.arange(N) * 3 + r[:, 1], r[:, 1] + 1, r[:, 2] + 0.5, r[:, 0]], axis=1)
    np.testing.assert_allclose(np.array(got).reshape(N, 4), want, rtol=1e-6, atol=1e-6)


def test_srgb_packing(rng):
    c = rng.uniform(-0.1, 1.1, (N, 4)).astype(np.float32)
    src = """
    uint i = thread_position_in_grid.x;
    float4 v = float4(a0[4*i], a0[4*i+1], a0[4*i+2], a0[4*i+3]);
    uint w = pack_float_to_srgb_unorm4x8(v);
    float4 back = unpack_unorm4x8_srgb_to_float(w);
    half4 hb = unpack_unorm4x8_srgb_to_half(w);
    out[6*i] = float(w & 0xffu); out[6*i+1] = float(w >> 24);
    out[6*i+2] = back.x; out[6*i+3] = back.w; out[6*i+4] = float(hb.y); out[6*i+5] = 0;
    """
    got = run("msl_srgb_pack", src, [c.reshape(-1)], (6 * N,)).reshape(N, 6)
    l = np.clip(c.astype(np.float64), 0, 1)
    srgb = np.where(l <= 0.0031308, l * 12.92, 1.055 * l ** (1 / 2.4) - 0.055)
    code = np.rint(srgb * 255)
    code[:, 3] = np.rint(l[:, 3] * 255)  # alpha stays linear
    to_linear = lambda u: np.where(u <= 0.04045, u / 12.92, ((u + 0.055) / 1.055) ** 2.4)  # noqa: E731
    np.testing.assert_allclose(got[:, 0], code[:, 0], atol=1)  # the rounding of pow may move a code by one
    np.testing.assert_array_equal(got[:, 1], code[:, 3])
    np.testing.assert_allclose(got[:, 2], to_linear(got[:, 0] / 255), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 3], got[:, 1] / 255, rtol=1e-6)
    np.testing.assert_allclose(got[:, 4], to_linear(code[:, 1] / 255), rtol=2e-3, atol=2e-3)
