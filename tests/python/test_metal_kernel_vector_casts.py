"""Vectors read and written through casts at any element's address.

Real kernels cast a scalar buffer to a vector pointer at an offset of their
own (natten-mlx's `*((device const float4*)(src + d4*4))` over rows of 10
floats). Apple's GPUs load and store such a vector wherever its elements
may be; CUDA's vector instructions need the vector's own alignment. The
translator writes these casts so that every form below gives the numbers of
a float64 numpy reference on each device, with rows whose starts are not
multiples of the vector's size. Outputs are poisoned (init_value=NaN) so an
element left unwritten shows.
"""
import numpy as np

import alloy.core as mx

ROWS = 96


def run(name, source, a, out_shape):
    k = mx.fast.metal_kernel(name=name, input_names=["a"], output_names=["out"], source=source)
    (out,) = k(inputs=[mx.array(a)], grid=(ROWS, 1, 1), threadgroup=(32, 1, 1), output_shapes=[out_shape],
               output_dtypes=[mx.float32], init_value=float("nan"))
    return np.array(out)


C_STYLE_READ = """
    uint i = thread_position_in_grid.x;
    float4 v = *((device const float4*)(a + i * 10 + 2));   // 8 bytes past 16 on every other row
    float4 w = ((device const float4*)(a + i * 10))[1];      // a subscript of the cast
    out[i] = v.x - 2 * v.y + 3 * v.z - 4 * v.w + w.w;
"""


def test_a_c_style_cast_reads_a_float4_at_any_float(rng):
    a = rng.standard_normal(ROWS * 10).astype(np.float32)
    got = run("vector_cast_c_style", C_STYLE_READ, a, (ROWS,))
    r = a.astype(np.float64).reshape(ROWS, 10)
    want = r[:, 2] - 2 * r[:, 3] + 3 * r[:, 4] - 4 * r[:, 5] + r[:, 7]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


REINTERPRET_AND_DECLARED = """
    uint i = thread_position_in_grid.x;
    const device half4* q = reinterpret_cast<const device half4*>(a + i * 6 + 1);  // half rows of 6, one in
    float4 s = float4(q[0]) + float4(q[1]) * 0.5f;
    out[i] = dot(s, float4(1, -1, 2, -2));
"""


def test_reinterpret_cast_into_a_declared_pointer_reads_half4_at_any_half(rng):
    a = rng.standard_normal(ROWS * 6 + 8).astype(np.float16)
    got = run("vector_cast_reinterpret", REINTERPRET_AND_DECLARED, a, (ROWS,))
    r = a.astype(np.float64)
    idx = np.arange(ROWS)[:, None] * 6 + 1
    s = r[idx + np.arange(4)] + r[idx + 4 + np.arange(4)] * 0.5
    want = s @ np.array([1, -1, 2, -2], dtype=np.float64)
    np.testing.assert_allclose(got, want, rtol=4e-3, atol=4e-3)


STORES = """
    uint i = thread_position_in_grid.x;
    float4 v = float4(a[i], a[i] * 2, a[i] * 3, a[i] * 4);
    *((device float4*)(out + i * 6)) = v;                       // rows of 6: every other row misaligned
    float2 t = float2(a[i] + 1, a[i] - 1);
    ((device float2*)(out + i * 6 + 4))[0] = t;                  // a float2 at 8 bytes past 16
    ((device float2*)(out + i * 6 + 4))[0] += float2(10, 20);    // compound assignment, read then write
"""


def test_stores_and_compound_assignments_through_casts_land_at_any_float(rng):
    a = rng.standard_normal(ROWS).astype(np.float32)
    got = run("vector_cast_stores", STORES, a, (ROWS * 6,))
    x = a.astype(np.float64)
    want = np.stack([x, 2 * x, 3 * x, 4 * x, x + 1 + 10, x - 1 + 20], axis=1).reshape(-1)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


BYTES_AND_ARITHMETIC = """
    uint i = thread_position_in_grid.x;
    device const uchar* bytes = (device const uchar*)a;
    uchar4 b = *((device const uchar4*)(bytes + i * 3));        // any byte
    device const float4* p = (device const float4*)(c + 1);      // one float in
    float4 v = *(p + i) + p[i + 1];                              // pointer arithmetic keeps the cast's kind
    out[i] = float(b.x) + float(b.w) * 2 + v.y;
"""


def test_uchar4_at_any_byte_and_pointer_arithmetic_on_a_cast(rng):
    a = rng.integers(0, 256, size=ROWS * 3 + 4, dtype=np.uint8)
    c = rng.standard_normal(4 * ROWS + 12).astype(np.float32)
    k = mx.fast.metal_kernel(name="vector_cast_bytes", input_names=["a", "c"], output_names=["out"],
                             source=BYTES_AND_ARITHMETIC)
    (out,) = k(inputs=[mx.array(a), mx.array(c)], grid=(ROWS, 1, 1), threadgroup=(32, 1, 1),
               output_shapes=[(ROWS,)], output_dtypes=[mx.float32], init_value=float("nan"))
    i = np.arange(ROWS)
    c64 = c.astype(np.float64)
    a64 = a.astype(np.float64)
    want = a64[i * 3] + 2 * a64[i * 3 + 3] + c64[1 + 4 * i + 1] + c64[1 + 4 * (i + 1) + 1]
    np.testing.assert_allclose(np.array(out), want, rtol=1e-5, atol=1e-5)


def test_a_templated_helper_deduces_the_vector_read_through_a_cast(rng):
    """A vector read through a cast is a value: a template deduces float4
    from it, as it would from the plain pointer's element."""
    header = """
template <typename V> V twice(V v) { return v + v; }
"""
    source = """
    uint i = thread_position_in_grid.x;
    auto v = twice(*((device const float4*)(a + i * 5)));   // rows of 5 floats
    out[i] = v.x + v.w + dot(((constant float2*)(a + i * 5 + 1))[0], float2(1, 1));
"""
    a = rng.standard_normal(ROWS * 5 + 4).astype(np.float32)
    k = mx.fast.metal_kernel(name="vector_cast_template", input_names=["a"], output_names=["out"],
                             source=source, header=header)
    (out,) = k(inputs=[mx.array(a)], grid=(ROWS, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(ROWS,)],
               output_dtypes=[mx.float32], init_value=float("nan"))
    r = a.astype(np.float64)
    b = np.arange(ROWS) * 5
    want = 2 * (r[b] + r[b + 3]) + r[b + 1] + r[b + 2]
    np.testing.assert_allclose(np.array(out), want, rtol=1e-5, atol=1e-5)


ACROSS_A_BARRIER = """
    uint i = thread_position_in_grid.x;
    uint l = thread_position_in_threadgroup.x;
    threadgroup float shared[32];
    device const float4* row = (device const float4*)(a + i * 6);   // kept across the barrier
    shared[l] = row[0].y;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float4 v = *row;
    out[i] = v.x + shared[(l + 1) % 32];
"""


def test_a_declared_cast_pointer_lives_across_a_barrier(rng):
    """On the CPU the kernel is split at the barrier; the pointer the cast made
    is kept per thread and still reads at any float."""
    a = rng.standard_normal(ROWS * 6 + 4).astype(np.float32)
    got = run("vector_cast_barrier", ACROSS_A_BARRIER, a, (ROWS,))
    r = a.astype(np.float64)
    i = np.arange(ROWS)
    nxt = (i // 32) * 32 + (i % 32 + 1) % 32
    np.testing.assert_allclose(got, r[i * 6] + r[nxt * 6 + 1], rtol=1e-5, atol=1e-5)


ASSIGNED_LATER = """
    uint i = thread_position_in_grid.x;
    const device float4* p;                        // declared first, given a cast later
    p = (const device float4*)(a + i * 6 + 1);     // rows of 6, one float in
    const device float4* q = p + 1;                // arithmetic on it, into another variable
    device float2* o;
    o = (device float2*)(out + i * 6 + 1);
    o[0] = float2(p[0].x + q->w, dot(*q, float4(1, 2, 3, 4)));
    o[1] = p[0].zw;
    out[i * 6] = p[0].y;
    out[i * 6 + 5] = (*p).w;
"""


def test_a_pointer_declared_first_and_given_a_cast_later_reads_and_writes_at_any_float(rng):
    """A vector pointer declared before the cast it is given (or computed
    from such a pointer) keeps the cast's kind: its reads and writes work at
    any float's address, not only those of a pointer initialised by the cast."""
    a = rng.standard_normal(ROWS * 6 + 8).astype(np.float32)
    got = run("vector_cast_assigned_later", ASSIGNED_LATER, a, (ROWS * 6,)).reshape(ROWS, 6)
    r = a.astype(np.float64)
    base = np.arange(ROWS)[:, None] * 6 + 1
    p, q = r[base + np.arange(4)], r[base + 4 + np.arange(4)]
    want = np.stack([p[:, 1], p[:, 0] + q[:, 3], q @ np.array([1.0, 2, 3, 4]), p[:, 2], p[:, 3], p[:, 3]], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_vector_pointer_in_a_struct_reads_at_any_float(rng):
    """A struct member that is a vector pointer, set from a cast: reads
    through it work at any float's address too."""
    header = """
struct FloatRow {
  const device float4* p;
  float sum(int k) const { return p[k].x + p[k].w; }
};
"""
    source = """
    uint i = thread_position_in_grid.x;
    FloatRow row;
    row.p = (const device float4*)(a + i * 7 + 3);   // rows of 7 floats, three in
    out[i] = row.sum(0) - 2 * row.sum(1);
"""
    a = rng.standard_normal(ROWS * 7 + 12).astype(np.float32)
    k = mx.fast.metal_kernel(name="vector_cast_struct", input_names=["a"], output_names=["out"], source=source,
                             header=header)
    (out,) = k(inputs=[mx.array(a)], grid=(ROWS, 1, 1), threadgroup=(32, 1, 1), output_shapes=[(ROWS,)],
               output_dtypes=[mx.float32], init_value=float("nan"))
    r = a.astype(np.float64)
    b = np.arange(ROWS) * 7 + 3
    want = r[b] + r[b + 3] - 2 * (r[b + 4] + r[b + 7])
    np.testing.assert_allclose(np.array(out), want, rtol=1e-5, atol=1e-5)


BACK_TO_SCALAR = """
    uint i = thread_position_in_grid.x;
    const device float4* p4 = (const device float4*)(a + i * 10 + 1);
    float head = p4[0].y;                                               // the vector read
    float c = ((const device float*)p4)[4];                             // back by a C-style cast
    float s = static_cast<const device float*>(p4)[5];                  // by static_cast
    float r = reinterpret_cast<const device float*>(p4)[6];             // by reinterpret_cast
    const device uchar* bytes = reinterpret_cast<const device uchar*>(p4 + 1);  // through arithmetic, to bytes
    out[i] = head + 2 * c - 3 * s + 4 * r + float(bytes[0] == ((const device uchar*)(a + i * 10 + 5))[0]);
"""


def test_a_vector_pointer_variable_casts_back_to_a_scalar_pointer(rng):
    # mtplx's q8 paged attention reads `((const device int8_t*)key_ptr4)[i]`
    # for the elements past its last whole char4.
    a = rng.standard_normal(ROWS * 10 + 8).astype(np.float32)
    got = run("vector_cast_back_to_scalar", BACK_TO_SCALAR, a, (ROWS,))
    r = a.astype(np.float64)[np.arange(ROWS)[:, None] * 10 + 1 + np.arange(7)]
    want = r[:, 1] + 2 * r[:, 4] - 3 * r[:, 5] + 4 * r[:, 6] + 1
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
