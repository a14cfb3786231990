// Metal 4 tensors (<metal_tensor>) and the matmul2d tensor op of Metal
// Performance Primitives (mpp::tensor_ops), shared by both targets.
//
// Dimension 0 is the innermost: a row-major R x C matrix is a tensor of
// extents (C, R) with strides {1, C}, indexed t[col, row]. The translator
// rewrites a subscript with several indices, `t[i, j]`, into
// `t[ ::alloy_msl::subscript(i, j)]` (C++20 has no multi-index operator[];
// metal_base.h).
// Address spaces in the element type (`tensor<device half, ...>`) are dropped
// by the translator as everywhere else; `constant` becomes const.
//
// matmul2d computes in float on a reference path: one thread computes the
// whole tile at execution_thread scope; at SIMD-group scopes each thread of
// the scope computes every S-th row of the tile (S = the scope's threads),
// which needs the thread's place in its threadgroup (scope_thread below).
//
// Quantized tensors (MXFP8): a tensor of a metal_fp8_*_format whose Tags
// name a scales plane, `tensor_blockwise<tensor_plane_scales,
// metal_fp8_ue8m0_format, 32, 1>`, holds one E8M0 scale per 32 elements
// along dimension 0. The plane is packed in the tensor's dimension order:
// the scale of element (i0, i1, ...) is scales[i0 / 32 + i1 * B1 + i2 * B1 *
// E1 + ...] with B1 = ceil(E0 / 32), E the extents the tensor was made with
// (for a row-major M x K matrix: scales[row * ceil(K / 32) + k / 32], the
// layout of MLX's mx.quantize(..., mode="mxfp8")). A slice keeps its
// parent's plane. matmul2d dequantizes such operands per block.
//
// FP4 tensors (metal_fp4_e2m1_format, MXFP4 with a scales plane) and the
// 4-bit and 2-bit integer ones pack two or four elements a byte
// (metal_fp4.h): data_ stays at the storage's first byte, element offsets
// (extents and strides count elements) start at nibble0_, and an element is
// a reference to its bits of a byte.
#pragma once

#include "metal_fp4.h"

namespace alloy_msl {
// A tensor kernel argument of metal_library: the array's data, and its shape
// and strides outermost first (MLX's order), which the tensor reverses;
// `scales` is the scales plane of a quantized tensor (else null).
template <class U, size_t R, class S, class T> struct tensor_binding {
  U* data;
  const S* shape;
  const T* strides;
  const unsigned char* scales;
};
template <size_t R, class U, class S, class T>
ALLOY_FUNC tensor_binding<U, R, S, T> bind_tensor(U* data, const S* shape, const T* strides) {
  return {data, shape, strides, nullptr};
}
template <size_t R, class U, class S, class T, class P>
ALLOY_FUNC tensor_binding<U, R, S, T> bind_tensor(U* data, const S* shape, const T* strides, const P* scales) {
  static_assert(sizeof(P) == 1, "bind_tensor: a scales plane holds one byte per scale");
  return {data, shape, strides, reinterpret_cast<const unsigned char*>(scales)};
}
}  // namespace alloy_msl

namespace metal {

// ---- extents
inline constexpr size_t dynamic_extent = static_cast<size_t>(-1);

template <class IndexType, size_t... E> struct extents {
  static_assert(sizeof...(E) >= 1, "extents: a tensor has rank 1 or more");
  typedef IndexType index_type;
  static constexpr size_t rank_ = sizeof...(E);
  static constexpr size_t statics_[rank_] = {E...};

  IndexType e_[rank_];

  ALLOY_FUNC constexpr extents() : e_{} {
    for (size_t r = 0; r < rank_; ++r) e_[r] = statics_[r] == dynamic_extent ? IndexType(0) : IndexType(statics_[r]);
  }
  // Either every extent, or only the dynamic ones, in dimension order.
  template <class... I> ALLOY_FUNC constexpr explicit extents(I... values) : e_{} {
    static_assert(sizeof...(I) == rank_ || sizeof...(I) == rank_dynamic(),
                  "extents: give every extent, or only the dynamic ones");
    const IndexType given[] = {IndexType(values)...};
    size_t next = 0;
    for (size_t r = 0; r < rank_; ++r) {
      if (sizeof...(I) == rank_) e_[r] = given[r];
      else e_[r] = statics_[r] == dynamic_extent ? given[next++] : IndexType(statics_[r]);
    }
  }
  ALLOY_FUNC static constexpr size_t rank() { return rank_; }
  ALLOY_FUNC static constexpr size_t rank_dynamic() {
    size_t n = 0;
    for (size_t r = 0; r < rank_; ++r) n += statics_[r] == dynamic_extent;
    return n;
  }
  ALLOY_FUNC static constexpr size_t static_extent(size_t r) { return statics_[r]; }
  ALLOY_FUNC constexpr IndexType extent(size_t r) const {
    return statics_[r] == dynamic_extent ? e_[r] : IndexType(statics_[r]);
  }
};

namespace detail {
template <class I, size_t R, size_t... E> struct all_dynamic : all_dynamic<I, R - 1, dynamic_extent, E...> {};
template <class I, size_t... E> struct all_dynamic<I, 0, E...> { typedef extents<I, E...> type; };
}  // namespace detail
template <class IndexType, size_t Rank> using dextents = typename detail::all_dynamic<IndexType, Rank>::type;

// ---- descriptors: where a tensor's data comes from. Ours are all a pointer,
// extents and strides; the tags only say how the program made the tensor.
struct tensor_handle {};
struct tensor_inline {};
struct tensor_offset {};

// ---- auxiliary planes: the scales of a quantized tensor
struct tensor_plane_scales {};
template <class Plane, class ScaleType, size_t... BlockFactors> struct tensor_blockwise {
  static_assert(is_same_v<Plane, tensor_plane_scales>, "tensor_blockwise: the only plane is tensor_plane_scales");
  static_assert(is_same_v<remove_cv_t<ScaleType>, metal_fp8_ue8m0_format>,
                "tensor_blockwise: scales are metal_fp8_ue8m0_format (OCP MX E8M0)");
  static_assert(sizeof...(BlockFactors) >= 1, "tensor_blockwise: give one block factor per dimension");
  static constexpr size_t factors_[sizeof...(BlockFactors)] = {BlockFactors...};
  static_assert(factors_[0] == 32, "tensor_blockwise: scale blocks are 32 elements along dimension 0 (OCP MX)");
  static constexpr bool ones_after_first() {
    for (size_t r = 1; r < sizeof...(BlockFactors); ++r)
      if (factors_[r] != 1) return false;
    return true;
  }
  static_assert(ones_after_first(), "tensor_blockwise: block factors after dimension 0 must be 1 ({32, 1, ...})");
  static constexpr size_t rank_ = sizeof...(BlockFactors);

  const metal_fp8_ue8m0_format* scales_ = nullptr;

  tensor_blockwise() = default;
  // From the plane's memory: a pointer to any one-byte type.
  template <class P>
  ALLOY_FUNC explicit tensor_blockwise(P* scales) : scales_(reinterpret_cast<const metal_fp8_ue8m0_format*>(scales)) {
    static_assert(sizeof(P) == 1, "tensor_blockwise: the scales plane holds one byte per scale");
  }
};

namespace detail {
template <class T> inline constexpr bool is_scales_plane_v = false;
template <class P, class S, size_t... B> inline constexpr bool is_scales_plane_v<tensor_blockwise<P, S, B...>> = true;
// The scales plane among a tensor's tags, or void.
template <class... Tags> struct scales_plane_of {
  typedef void type;
};
template <class T, class... Rest> struct scales_plane_of<T, Rest...> {
  typedef conditional_t<is_scales_plane_v<T>, T, typename scales_plane_of<Rest...>::type> type;
};
// Completes the plane's type, so its static_asserts run when a tensor names it.
template <class P> constexpr bool plane_checked() {
  if constexpr (is_same_v<P, void>) return true;
  else return sizeof(P) > 0;
}
// Where a tensor's scales are: the plane's (offset) memory, its strides per
// dimension (dimension 0 counts blocks) and the origin along dimension 0
// (a slice there need not start at a block's edge).
template <class IndexType, size_t R> struct scales_state {
  const metal_fp8_ue8m0_format* scales = nullptr;
  IndexType strides[R] = {};
  IndexType origin0 = 0;
};
}  // namespace detail

template <class ElementType, class Extents, class Descriptor = tensor_handle, class... Tags> struct tensor;

namespace detail {
template <class T> inline constexpr bool is_tensor_v = false;
template <class E, class X, class D, class... T> inline constexpr bool is_tensor_v<tensor<E, X, D, T...>> = true;
}  // namespace detail

template <class ElementType, class Extents, class Descriptor, class... Tags> struct tensor {
  typedef ElementType element_type;
  typedef typename detail::scales_plane_of<Tags...>::type scales_plane_type;
  // A quantized tensor: one-byte elements with a scales plane.
  static constexpr bool scaled_ = !is_same_v<scales_plane_type, void>;
  static_assert(detail::plane_checked<scales_plane_type>(), "");  // the plane's own static_asserts
  static_assert(!scaled_ || sizeof(ElementType) == 1,
                "tensor: a scales plane goes with one-byte elements (metal_fp8_e4m3_format, metal_fp8_e5m2_format, "
                "metal_fp4_e2m1_format)");
  typedef remove_cv_t<ElementType> value_type;
  // Two elements a byte (FP4): elements are references to half a byte.
  static constexpr bool packed_ = detail_fp4::is_packed_v<value_type>;
  typedef conditional_t<packed_, detail_fp4::nibble_ref<ElementType>, ElementType&> reference;
  typedef Extents extents_type;
  typedef typename Extents::index_type index_type;
  typedef Descriptor descriptor_type;
  static constexpr size_t rank_ = Extents::rank();
  // slice() of a handle is an offset handle; of an inline tensor, inline.
  typedef conditional_t<is_same_v<Descriptor, tensor_handle>, tensor_offset, Descriptor> slice_descriptor;

  // The representation, public for the runtime's own use (slices of other
  // extents, matmul2d).
  ElementType* data_ = nullptr;
  Extents extents_;
  index_type strides_[rank_] = {};
  // Per dimension, how many elements from the origin lie inside the memory
  // the tensor was made over: the extent, except for a static slice that
  // reaches past its parent's edge. load/store and matmul2d check against it.
  index_type valid_[rank_] = {};
  detail::scales_state<index_type, rank_> scales_;  // quantized tensors only
  long nibble0_ = 0;  // packed tensors: the element offset of the origin from data_

  tensor() = default;
  // Packed strides, dimension 0 contiguous.
  ALLOY_FUNC tensor(ElementType* data, const Extents& e) : data_(data), extents_(e) {
    static_assert(!scaled_, "tensor: a quantized tensor is made with its scales plane, tensor(data, extents[, strides], plane)");
    pack(e);
  }
  template <class S>
  ALLOY_FUNC tensor(ElementType* data, const Extents& e, const array<S, rank_>& strides) : data_(data), extents_(e) {
    static_assert(!scaled_, "tensor: a quantized tensor is made with its scales plane, tensor(data, extents[, strides], plane)");
    for (size_t r = 0; r < rank_; ++r) {
      strides_[r] = index_type(strides[r]);
      valid_[r] = e.extent(r);
    }
  }
  // A quantized tensor: data, extents[, strides], its scales plane.
  template <class P, enable_if_t<detail::is_scales_plane_v<P>, int> = 0>
  ALLOY_FUNC tensor(ElementType* data, const Extents& e, const P& plane) : data_(data), extents_(e) {
    accept_plane<P>();
    pack(e);
    pack_scales(plane.scales_);
  }
  template <class S, class P, enable_if_t<detail::is_scales_plane_v<P>, int> = 0>
  ALLOY_FUNC tensor(ElementType* data, const Extents& e, const array<S, rank_>& strides, const P& plane)
      : data_(data), extents_(e) {
    accept_plane<P>();
    for (size_t r = 0; r < rank_; ++r) {
      strides_[r] = index_type(strides[r]);
      valid_[r] = e.extent(r);
    }
    pack_scales(plane.scales_);
  }
  template <class U, class S, class T>
  ALLOY_FUNC tensor(const ::alloy_msl::tensor_binding<U, rank_, S, T>& b)
      : data_(reinterpret_cast<ElementType*>(const_cast<remove_cv_t<U>*>(b.data))) {
    // (A quantized tensor is bound for reading whatever its elements'
    // constness: metal_library passes its data as an input.)
    static_assert(packed_ || sizeof(U) == sizeof(ElementType), "tensor: the array's elements are not the tensor's size");
    // Packed codes (FP4, the sub-byte integers): each array element holds
    // 8 / code bits * sizeof(U) codes (metal_library passes bytes or words, its
    // last axis contiguous); extents and strides count codes.
    constexpr index_type per =
        packed_ ? index_type((8 / detail_fp4::code_bits_v<value_type>) * sizeof(U)) : index_type(1);
    for (size_t r = 0; r < rank_; ++r) {
      extents_.e_[r] = index_type(b.shape[rank_ - 1 - r]) * per;
      strides_[r] = r == 0 && packed_ ? index_type(1) : index_type(b.strides[rank_ - 1 - r]) * per;
      valid_[r] = extents_.e_[r];
    }
    if constexpr (scaled_) pack_scales(reinterpret_cast<const metal_fp8_ue8m0_format*>(b.scales));
  }
  // A tensor of const elements from one of mutable elements.
  template <class U, class D2, class... T2, enable_if_t<is_same_v<const U, ElementType>, int> = 0>
  ALLOY_FUNC tensor(const tensor<U, Extents, D2, T2...>& o)
      : data_(o.data_), extents_(o.extents_), scales_(o.scales_), nibble0_(o.nibble0_) {
    for (size_t r = 0; r < rank_; ++r) {
      strides_[r] = o.strides_[r];
      valid_[r] = o.valid_[r];
    }
  }

  ALLOY_FUNC static constexpr size_t get_rank() { return rank_; }
  ALLOY_FUNC constexpr index_type get_extent(size_t r) const { return extents_.extent(r); }
  ALLOY_FUNC static constexpr size_t get_static_extent(size_t r) { return Extents::static_extent(r); }
  ALLOY_FUNC constexpr index_type get_stride(size_t r) const { return strides_[r]; }

  // Element at the indices (dimension 0 first); out of bounds is undefined,
  // as in Metal.
  template <class... I> ALLOY_FUNC reference operator()(I... idx) const {
    static_assert(sizeof...(I) == rank_, "tensor: give one index per dimension");
    return element(offset_of(idx...));
  }
  template <class I, enable_if_t<is_integral_v<I>, int> = 0>
  ALLOY_FUNC reference operator[](I i) const {
    static_assert(rank_ == 1, "tensor: give one index per dimension (t[i, j])");
    return element(long(i) * long(strides_[0]));
  }
  template <class... I> ALLOY_FUNC reference operator[](const ::alloy_msl::subscript_pack<I...>& s) const {
    return apply_subscript(s, typename ::alloy_msl::subscript_pack<I...>::seq());
  }

  // 0 outside the tensor.
  template <class... I> ALLOY_FUNC value_type load(I... idx) const {
    static_assert(sizeof...(I) == rank_, "tensor::load: give one index per dimension");
    return inside(idx...) ? value_type(element(offset_of(idx...))) : value_type(0);
  }
  // Dropped outside the tensor.
  template <class V, class... I> ALLOY_FUNC void store(const V& v, I... idx) const {
    static_assert(sizeof...(I) == rank_, "tensor::store: give one index per dimension");
    static_assert(!is_same_v<const value_type, ElementType>, "tensor::store: the tensor's elements are const");
    if (inside(idx...)) element(offset_of(idx...)) = value_type(v);
  }

  // The tensor from `origin` on: dynamic extents, shrunk to what is left.
  template <class... I>
  ALLOY_FUNC tensor<ElementType, dextents<index_type, rank_>, slice_descriptor, Tags...> slice(I... origin) const {
    static_assert(sizeof...(I) == rank_, "tensor::slice: give one origin per dimension");
    tensor<ElementType, dextents<index_type, rank_>, slice_descriptor, Tags...> t;
    const index_type o[] = {index_type(origin)...};
    t.move_origin(*this, offset_of(origin...));
    t.scales_ = sliced_scales(o);
    for (size_t r = 0; r < rank_; ++r) {
      index_type left = get_extent(r) - o[r];
      t.extents_.e_[r] = left > 0 ? left : index_type(0);
      index_type valid = valid_[r] - o[r];
      t.valid_[r] = valid > 0 ? valid : index_type(0);
      t.strides_[r] = strides_[r];
    }
    return t;
  }
  // A tile of static extents E... (dimension 0 first) at `origin`. A tile
  // reaching past the tensor's edge keeps its extents; load/store and
  // matmul2d treat the part outside as out of bounds.
  template <size_t E0, size_t... E, class... I>
  ALLOY_FUNC tensor<ElementType, extents<index_type, E0, E...>, slice_descriptor, Tags...> slice(I... origin) const {
    static_assert(1 + sizeof...(E) == rank_ && sizeof...(I) == rank_,
                  "tensor::slice<E...>(origin...): give one extent and one origin per dimension");
    tensor<ElementType, extents<index_type, E0, E...>, slice_descriptor, Tags...> t;
    const index_type o[] = {index_type(origin)...};
    t.move_origin(*this, offset_of(origin...));
    t.scales_ = sliced_scales(o);
    for (size_t r = 0; r < rank_; ++r) {
      index_type valid = valid_[r] - o[r];
      valid = valid > 0 ? valid : index_type(0);
      t.valid_[r] = valid < t.get_extent(r) ? valid : t.get_extent(r);
      t.strides_[r] = strides_[r];
    }
    return t;
  }

  template <class... I> ALLOY_FUNC bool inside(I... idx) const {
    const long i[] = {long(idx)...};
    for (size_t r = 0; r < rank_; ++r)
      if (i[r] < 0 || i[r] >= long(valid_[r])) return false;
    return true;
  }
  // The element `off` elements from the origin.
  ALLOY_FUNC reference element(long off) const {
    if constexpr (packed_) return reference{data_, nibble0_ + off};
    else return data_[off];
  }
  // This tensor's origin: `off` elements from `parent`'s (slices).
  template <class P> ALLOY_FUNC void move_origin(const P& parent, long off) {
    if constexpr (packed_) {
      data_ = parent.data_;
      nibble0_ = parent.nibble0_ + off;
    } else {
      data_ = parent.data_ + off;
    }
  }
  template <class... I> ALLOY_FUNC long offset_of(I... idx) const {
    const long i[] = {long(idx)...};
    long off = 0;
    for (size_t r = 0; r < rank_; ++r) off += i[r] * long(strides_[r]);
    return off;
  }

  // The scale of the element at the indices (a quantized tensor), as a float.
  template <class... I> ALLOY_FUNC float scale_at(I... idx) const {
    const long i[] = {long(idx)...};
    long off = (long(scales_.origin0) + i[0]) / 32;
    for (size_t r = 1; r < rank_; ++r) off += i[r] * long(scales_.strides[r]);
    return float(scales_.scales[off]);
  }

 private:
  template <class P> ALLOY_FUNC static constexpr void accept_plane() {
    static_assert(is_same_v<P, scales_plane_type>, "tensor: the plane is not the one the tensor's type names");
    static_assert(P::rank_ == rank_, "tensor_blockwise: give one block factor per dimension of the tensor");
  }
  ALLOY_FUNC void pack(const Extents& e) {
    index_type s = 1;
    for (size_t r = 0; r < rank_; ++r) {
      strides_[r] = s;
      s *= e.extent(r);
      valid_[r] = e.extent(r);
    }
  }
  // The plane packed over this tensor's extents, ceil(E0 / 32) blocks a row.
  ALLOY_FUNC void pack_scales(const metal_fp8_ue8m0_format* scales) {
    scales_.scales = scales;
    scales_.origin0 = 0;
    index_type s = (extents_.extent(0) + 31) / 32;
    scales_.strides[0] = 1;
    for (size_t r = 1; r < rank_; ++r) {
      scales_.strides[r] = s;
      s *= extents_.extent(r);
    }
  }
  ALLOY_FUNC detail::scales_state<index_type, rank_> sliced_scales(const index_type* o) const {
    detail::scales_state<index_type, rank_> p = scales_;
    if constexpr (scaled_) {
      for (size_t r = 1; r < rank_; ++r) p.scales += long(o[r]) * long(p.strides[r]);
      p.origin0 += o[0];
    }
    return p;
  }

  template <class S, size_t... K>
  ALLOY_FUNC reference apply_subscript(const S& s, ::alloy_msl::index_seq<K...>) const {
    static_assert(sizeof...(K) == rank_, "tensor: give one index per dimension");
    return element(offset_of(s.template get<K>()...));
  }
};

// ---- execution scopes
template <int N> struct execution_threads {
  static constexpr int threads = N;
};
template <int N> struct execution_simdgroups {
  static constexpr int threads = 32 * N;
};
typedef execution_threads<1> execution_thread;
typedef execution_simdgroups<1> execution_simdgroup;

}  // namespace metal

namespace mpp::tensor_ops {

template <class T> inline constexpr T dynamic_length_v = metal::numeric_limits<T>::max();

struct matmul2d_descriptor {
  enum class mode { multiply, multiply_accumulate };
  int m, n, k;
  bool transpose_left, transpose_right, relaxed_precision;
  mode matmul_mode;
  constexpr matmul2d_descriptor(int m_, int n_, int k_ = dynamic_length_v<int>, bool transpose_left_ = false,
                                bool transpose_right_ = false, bool relaxed_precision_ = false,
                                mode matmul_mode_ = mode::multiply)
      : m(m_), n(n_), k(k_), transpose_left(transpose_left_), transpose_right(transpose_right_),
        relaxed_precision(relaxed_precision_), matmul_mode(matmul_mode_) {}
  // K read from the operands: dynamic_length_v<int> (the default),
  // static_cast<int>(dynamic_extent) (-1, as Apple's header documents it and
  // jang's TurboQuant GEMM writes it), or 0 (as some of Apple's examples do).
  constexpr bool k_from_operands() const { return k == dynamic_length_v<int> || k == -1 || k == 0; }
};

namespace detail {
using namespace metal;
template <class T>
inline constexpr bool is_int8_v = is_same_v<T, char> || is_same_v<T, signed char> || is_same_v<T, unsigned char>;
template <class T> inline constexpr bool is_float_v = is_same_v<T, half> || is_same_v<T, bfloat> || is_same_v<T, float>;
template <class T> inline constexpr bool is_fp8_v = detail_fp8::is_format_v<T>;
// The OCP formats of OS 27: FP8 (E4M3, E5M2) and FP4 (E2M1).
template <class T> inline constexpr bool is_ocp_float_v = is_fp8_v<T> || is_same_v<T, metal_fp4_e2m1_format>;
// Apple's table (OS 26.1, and uint8 and the fp8/fp4 formats of OS 27): left
// x right -> destination.
template <class L, class R, class D> constexpr bool supported() {
  // 4-bit and 2-bit integers (MPP's quantized weights) only as the right
  // operand: half x any, bfloat x the 4-bit ones -> that type or float;
  // int8 x int4b or int2b, uint8 x uint4b -> int32.
  if constexpr (detail_fp4::is_packed_integer_v<L>) return false;
  if constexpr (detail_fp4::is_packed_integer_v<R>) {
    constexpr bool four = detail_fp4::code_bits_v<R> == 4;
    if (is_same_v<L, half> || (four && is_same_v<L, bfloat>)) return is_same_v<D, L> || is_same_v<D, float>;
    if (is_same_v<L, signed char> || is_same_v<L, char>)
      return (is_same_v<R, int4b_format> || is_same_v<R, int2b_format>) && is_same_v<D, int>;
    if (is_same_v<L, unsigned char>) return is_same_v<R, uint4b_format> && is_same_v<D, int>;
    return false;
  }
  if (is_ocp_float_v<L> || is_ocp_float_v<R>) {
    const bool pair = is_same_v<L, R> || (is_same_v<L, half> && is_ocp_float_v<R>) ||
                      (is_ocp_float_v<L> && is_same_v<R, half>);
    return pair && (is_same_v<D, half> || is_same_v<D, float>);
  }
  if (is_float_v<L> && is_float_v<R>) {
    if (is_same_v<D, float>) return true;
    if (is_same_v<L, R>) return is_same_v<D, L>;
    if ((is_same_v<L, bfloat> && is_same_v<R, half>) || (is_same_v<L, half> && is_same_v<R, bfloat>))
      return is_same_v<D, half> || is_same_v<D, bfloat>;
    return false;
  }
  if (is_int8_v<L> && is_int8_v<R>) return is_same_v<D, int>;
  if (is_float_v<L> && is_int8_v<R>) return is_same_v<D, L> || is_same_v<D, float>;
  if (is_int8_v<L> && is_float_v<R>) return is_same_v<D, R> || is_same_v<D, float>;
  return false;
}
template <class S> struct scope_info {
  static constexpr bool valid = false;
  static constexpr int threads = 1;
};
template <> struct scope_info<execution_threads<1>> {
  static constexpr bool valid = true;
  static constexpr int threads = 1;
};
template <int N> struct scope_info<execution_simdgroups<N>> {
  static constexpr bool valid = N >= 1 && N <= 32;
  static constexpr int threads = 32 * N;
};
template <class T> using acc_t = conditional_t<is_int8_v<T> || is_same_v<T, int>, int, float>;
}  // namespace detail

#include "metal_cooperative_tensor.h"
#if defined(__CUDACC__)
#include "cuda_tensor_ops.h"
#endif

template <matmul2d_descriptor Desc, class Scope, class... Options> struct matmul2d {
  static_assert(detail::scope_info<Scope>::valid,
                "matmul2d: the scope must be execution_thread, execution_simdgroup or execution_simdgroups<N>");
  static_assert(Desc.m > 0 && Desc.n > 0, "matmul2d_descriptor: m and n must be positive");
  static_assert(Desc.k >= 0 || Desc.k_from_operands(),
                "matmul2d_descriptor: k must be positive, or dynamic_length_v<int> (or dynamic_extent, or 0) for K "
                "from the operands");
  static constexpr bool dynamic_k = Desc.k_from_operands();

  static constexpr int scope_threads = detail::scope_info<Scope>::threads;
  // The K extent of an input tile: the descriptor's (a cooperative input
  // holds its operand whole, so K must be known when it is made).
  static constexpr int static_k() {
    static_assert(!dynamic_k, "matmul2d: a cooperative input tensor needs the descriptor's K (not dynamic_length_v)");
    return Desc.k;
  }

  // ---- cooperative tensors (metal_cooperative_tensor.h)
  // The m x n destination tile, spread over the scope's threads.
  template <class LT, class RT, class E> ALLOY_FUNC static auto get_destination_cooperative_tensor() {
    return cooperative_tensor<E, Desc.n, Desc.m, scope_threads, detail::tile_kind::spread>();
  }
  // One value per row (column) of the destination, for reduce_rows (reduce_columns).
  template <class LT, class RT, class E> ALLOY_FUNC static auto get_row_reduction_destination_cooperative_tensor() {
    // (CUDA, a destination in the accumulator layout: each lane keeps its own rows.)
    constexpr bool quad = cooperative_tensor<E, Desc.n, Desc.m, scope_threads, detail::tile_kind::spread>::frag_;
    return cooperative_tensor<E, 1, Desc.m, scope_threads,
                              quad ? detail::tile_kind::quad_rows : detail::tile_kind::replicated_rows>();
  }
  template <class LT, class RT, class E> ALLOY_FUNC static auto get_column_reduction_destination_cooperative_tensor() {
    return cooperative_tensor<E, Desc.n, 1, scope_threads, detail::tile_kind::replicated_columns>();
  }
  // The left (right) operand tile, in the operand's own dimension order: the
  // left is (K, M), or (M, K) transposed; the right (N, K), or (K, N).
  // On CUDA, a left tile the tensor cores can read from registers is laid
  // out as their A fragments (the accumulator layout of an m x k
  // destination), spread over the SIMD group, rather than held whole by
  // every thread: a Q tile loaded once stays in registers across a loop.
  // On the CPU, an input tile whose shape splits into 16 x 16 fragments is
  // spread in Apple's layout (metal_cooperative_tensor.h), as code that
  // fills it element by element expects; run() gathers it.
  template <class T, int C, int R>
  using input_tile = cooperative_tensor<T, C, R, scope_threads,
                                        cooperative_tensor<T, C, R, scope_threads, detail::tile_kind::spread>::apple_
                                            ? detail::tile_kind::spread
                                            : detail::tile_kind::replicated>;
  template <class L, class R, class E> ALLOY_FUNC static auto get_left_input_cooperative_tensor() {
    constexpr int K = static_k();
    if constexpr (left_in_registers<L, R>())
      return cooperative_tensor<L, K, Desc.m, scope_threads, detail::tile_kind::spread>();
    else if constexpr (Desc.transpose_left)
      return input_tile<L, Desc.m, K>();
    else
      return input_tile<L, K, Desc.m>();
  }
  template <class L, class R, class E> ALLOY_FUNC static auto get_right_input_cooperative_tensor() {
    constexpr int K = static_k();
    if constexpr (Desc.transpose_right)
      return input_tile<R, K, Desc.n>();
    else
      return input_tile<R, Desc.n, K>();
  }
  // A destination tile (of an op whose m x k matches this op's left operand)
  // as this op's left input: every thread gathers the whole tile from the
  // threads holding it. Compatible without a copy only within one thread.
  // On CUDA, the tensor cores read a left tile of half (or float, split into
  // two halves) against a half right operand from the accumulator layout of
  // one SIMD group.
  template <class L, class R> static constexpr bool left_in_registers() {
    if constexpr (dynamic_k || Desc.transpose_left) {
      return false;
    } else {
      return cooperative_tensor<L, Desc.k, Desc.m, scope_threads, detail::tile_kind::spread>::frag_ &&
             Desc.n % 8 == 0 && metal::is_same_v<R, metal::half> &&
             (metal::is_same_v<L, metal::half> || metal::is_same_v<L, float>);
    }
  }
  // A destination in that layout is then already the left operand: it
  // stays where it is.
  template <class L, class R, class CT> static constexpr bool stays_in_registers() {
    return CT::frag_ && CT::cols_ == Desc.k && CT::rows_ == Desc.m && left_in_registers<L, R>();
  }
  template <class L, class R, class E, class CT> ALLOY_FUNC static bool is_compatible_as_left_input(const CT&) {
    return CT::scope_ == 1 || stays_in_registers<L, R, CT>();
  }
  template <class L, class R, class E, class CT> ALLOY_FUNC static auto get_left_input_cooperative_tensor(const CT& src) {
    if constexpr (stays_in_registers<L, R, CT>()) {
      cooperative_tensor<L, Desc.k, Desc.m, scope_threads, detail::tile_kind::spread> in;
      for (int i = 0; i < CT::capacity_; ++i) in.v_[i] = L(src.v_[i]);
      return in;
    } else {
      auto in = get_left_input_cooperative_tensor<L, R, E>();
      static_assert(decltype(in)::size_ == CT::size_ && decltype(in)::cols_ == CT::cols_,
                    "matmul2d::get_left_input_cooperative_tensor: the tile's shape is not this op's left operand");
      gather(src, in);
      return in;
    }
  }

  // A destination tile of another op as this op's right input (its shape
  // that of the right operand: (N, K), or (K, N) transposed): every thread
  // gathers the whole tile, as a left input does.
  template <class L, class R, class E, class CT> ALLOY_FUNC static auto get_right_input_cooperative_tensor(const CT& src) {
    auto in = get_right_input_cooperative_tensor<L, R, E>();
    static_assert(decltype(in)::size_ == CT::size_ && decltype(in)::cols_ == CT::cols_,
                  "matmul2d::get_right_input_cooperative_tensor: the tile's shape is not this op's right operand");
    gather(src, in);
    return in;
  }

  // destination = left * right (multiply) or destination + left * right
  // (multiply_accumulate), over the descriptor's m x n tile, in float (int32
  // for 8-bit integers). Operands out of their tensors' bounds read as 0;
  // destination elements outside its tensor are not written. Each operand
  // is a tensor or a cooperative tensor of the op.
  template <class LT, class RT, class DT> ALLOY_FUNC void run(const LT& left, const RT& right, DT&& dest) const {
    typedef metal::remove_cv_t<metal::remove_reference_t<DT>> Dest;
    constexpr bool coop_left = detail::is_cooperative_v<LT>, coop_right = detail::is_cooperative_v<RT>;
    constexpr bool coop_dest = detail::is_cooperative_v<Dest>;
    static_assert((metal::detail::is_tensor_v<LT> || coop_left) && (metal::detail::is_tensor_v<RT> || coop_right) &&
                      (metal::detail::is_tensor_v<Dest> || coop_dest),
                  "matmul2d::run: the operands must be tensors or cooperative tensors");
    if constexpr (!coop_left) static_assert(LT::rank_ == 2, "matmul2d::run: the operands must have rank 2");
    if constexpr (!coop_right) static_assert(RT::rank_ == 2, "matmul2d::run: the operands must have rank 2");
    if constexpr (!coop_dest) static_assert(Dest::rank_ == 2, "matmul2d::run: the operands must have rank 2");
    typedef typename LT::value_type L;
    typedef typename RT::value_type R;
    typedef typename Dest::value_type D;
    static_assert(detail::supported<L, R, D>(),
                  "matmul2d::run: this combination of left, right and destination types is not supported "
                  "(half x half -> half|float, bfloat x bfloat -> bfloat|float, float x float -> float, "
                  "mixed half/bfloat/float -> float, int8 x int8 -> int32, float types x int8 -> that type|float, "
                  "fp8 or fp4 x the same format or half -> half|float, half|bfloat x int4b|uint4b and half x "
                  "int2b|uint2b -> that type|float, int8 x int4b|int2b and uint8 x uint4b -> int32)");
    // MX operands (OCP MX, K-major): the scale blocks run along K.
    if constexpr (!coop_left) {
      if constexpr (LT::scaled_)
        static_assert(!Desc.transpose_left,
                      "matmul2d::run: a left operand with a scales plane must not be transposed (its extents are "
                      "(K, M), so its 32-element scale blocks run along K)");
    }
    if constexpr (!coop_right) {
      if constexpr (RT::scaled_)
        static_assert(Desc.transpose_right,
                      "matmul2d::run: a right operand with a scales plane must be transposed (extents (K, N), so "
                      "its 32-element scale blocks run along K): set transpose_right in matmul2d_descriptor");
    }
    if constexpr (!coop_dest) static_assert(!Dest::scaled_, "matmul2d::run: the destination cannot have a scales plane");
#if defined(__CUDACC__)
    if constexpr (coop_dest && !coop_right) {
      if constexpr (Dest::frag_)
        if (detail::tc::run_cooperative<Desc, Desc.k>(left, right, dest)) return;
    }
#endif
    // A tile spread over the SIMD group (in the accumulator layout, where
    // the tensor cores did not take it, or Apple's): every thread gathers
    // it whole first.
    if constexpr (detail::is_spread_v<LT>) run(gathered<L>(left), right, dest);
    else if constexpr (detail::is_spread_v<RT>) run(left, gathered<R>(right), dest);
    else multiply(left, right, dest);
  }

 private:
  // run() on operands every thread reads whole: each thread computes the
  // destination elements it holds (or, of a tensor, its rows).
  template <class LT, class RT, class DT> ALLOY_FUNC void multiply(const LT& left, const RT& right, DT& dest) const {
    typedef metal::remove_cv_t<DT> Dest;
    constexpr bool coop_left = detail::is_cooperative_v<LT>, coop_right = detail::is_cooperative_v<RT>;
    constexpr bool coop_dest = detail::is_cooperative_v<Dest>;
    typedef typename Dest::value_type D;
    typedef detail::acc_t<D> A;
    // Left is (K, M), or (M, K) transposed; right is (N, K), or (K, N) transposed.
    long K = Desc.k;
    if constexpr (coop_left) K = Desc.transpose_left ? LT::rows_ : LT::cols_;
    else if (dynamic_k) K = long(left.get_extent(Desc.transpose_left ? 1 : 0));
    auto element = [&](long m, long n) {
      A acc = 0;
      for (long k = 0; k < K; ++k) {
        A a, b;
        if constexpr (coop_left) a = Desc.transpose_left ? A(left.at(m, k)) : A(left.at(k, m));
        else a = Desc.transpose_left ? operand<A>(left, m, k) : operand<A>(left, k, m);
        if constexpr (coop_right) b = Desc.transpose_right ? A(right.at(k, n)) : A(right.at(n, k));
        else b = Desc.transpose_right ? operand<A>(right, k, n) : operand<A>(right, n, k);
        acc += a * b;
      }
      return acc;
    };
    constexpr bool accumulate = Desc.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
    if constexpr (coop_dest) {
      static_assert(Dest::spread_ && Dest::cols_ == Desc.n && Dest::rows_ == Desc.m && Dest::scope_ == scope_threads,
                    "matmul2d::run: a cooperative destination must come from this op's "
                    "get_destination_cooperative_tensor");
      // Each thread computes the elements it holds.
      for (int i = 0; i < dest.valid_count(); ++i) {
        const metal::array<int, 2> idx = dest.get_multidimensional_index(i);
        A acc = element(idx[1], idx[0]);
        if (accumulate) acc += A(dest.v_[i]);
        dest.v_[i] = D(acc);
      }
    } else {
#if defined(__CUDACC__)
      if constexpr (!coop_left && !coop_right && scope_threads >= 32) {
        if (detail::tc::run<Desc, scope_threads / 32>(left, right, dest)) return;
      }
#endif
      unsigned first = 0, step = 1;
      scope_thread(first, step);
      for (long m = first; m < Desc.m; m += step) {
        if (m >= long(dest.valid_[1])) break;
        for (long n = 0; n < Desc.n && n < long(dest.valid_[0]); ++n) {
          A acc = element(m, n);
          if (accumulate) acc += A(dest(n, m));
          dest(n, m) = D(acc);
        }
      }
    }
  }

  // An operand's element as the accumulator's type: 0 outside the tensor,
  // times its block's scale for a quantized tensor.
  template <class A, class T> ALLOY_FUNC static A operand(const T& t, long i0, long i1) {
    if constexpr (T::scaled_) return t.inside(i0, i1) ? A(float(t(i0, i1)) * t.scale_at(i0, i1)) : A(0);
    else return A(t.load(i0, i1));
  }

  // `src` (spread over the scope's threads) whole, as elements of type T.
  template <class T, class CT> ALLOY_FUNC static auto gathered(const CT& src) {
    auto whole = cooperative_tensor<T, CT::cols_, CT::rows_, CT::scope_, detail::tile_kind::replicated>();
    gather(src, whole);
    return whole;
  }
  // Every thread gets every element of `src` (spread over the scope's
  // threads): element f is held by lane f % S at its index f / S, which is
  // the same for all lanes, so each step is one SIMD-group shuffle. An
  // input tile that is itself spread (Apple's layout) keeps only its own
  // elements of the whole.
  template <class CT, class In> ALLOY_FUNC static void gather(const CT& src, In& in) {
    if constexpr (In::spread_ && In::scope_ > 1) {
      const auto whole = gathered<typename In::value_type>(src);
      for (int i = 0; i < in.valid_count(); ++i) in.v_[i] = whole.v_[in.flat(i)];
    } else if constexpr (CT::scope_ == 1 || !CT::spread_) {
      for (int f = 0; f < CT::size_; ++f) in.v_[f] = typename In::value_type(src.v_[f]);
    } else if constexpr (CT::lane_mapped_) {
      // A lane-mapped layout: element i of every lane, one lane at a time.
      for (int i = 0; i < CT::capacity_; ++i)
        for (unsigned l = 0; l < 32; ++l) {
          const typename CT::value_type v = metal::simd_shuffle(src.v_[i], (unsigned short)l);
          const metal::array<int, 2> idx = CT::index_of(i, l);
          in.v_[idx[1] * CT::cols_ + idx[0]] = typename In::value_type(v);
        }
    } else {
      static_assert(CT::scope_ == 32, "matmul2d: a cooperative tile moves between threads of one SIMD group only");
      for (int f = 0; f < CT::size_; ++f) {
        const int i = f / CT::scope_;
        const typename CT::value_type mine = i < CT::capacity_ ? src.v_[i] : typename CT::value_type(0);
        in.v_[f] = typename In::value_type(metal::simd_shuffle(mine, (unsigned short)(f % CT::scope_)));
      }
    }
  }

  // This thread's first row and the row step: rows are dealt round-robin
  // over the threads of the scope.
  ALLOY_FUNC static void scope_thread(unsigned& first, unsigned& step) {
    if constexpr (detail::scope_info<Scope>::threads > 1) {
      const unsigned S = detail::scope_info<Scope>::threads;
      unsigned index = 0, count = 1;
      ::alloy_msl::thread_in_threadgroup(index, count);
      const unsigned base = index - index % S;
      first = index % S;
      step = count - base < S ? count - base : S;
    }
  }
};

}  // namespace mpp::tensor_ops

namespace mpp {
using tensor_ops::matmul2d;
using tensor_ops::matmul2d_descriptor;
}  // namespace mpp
