// The lazy n-dimensional array. An array is a handle to a node of the
// computation graph: a primitive, its inputs and, once evaluated, its data.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "alloy/allocator.h"
#include "alloy/device.h"
#include "alloy/dtype.h"

namespace alloy {

using ShapeElem = int32_t;
using Shape = std::vector<ShapeElem>;
using Strides = std::vector<int64_t>;

class Primitive;

// The memory an array (and its views) point into.
struct Data {
  Buffer buffer;
  // Where the memory came from when it is not ours (numpy, DLPack): the
  // deleter releases the owner instead of freeing through an allocator.
  std::shared_ptr<void> external_owner;
  // A copy of this memory on the other device (host <-> GPU), made the first
  // time an op on that device reads it; buffers never change once written.
  std::shared_ptr<Data> mirror;
  // Set when the contents cannot be trusted (the GPU work that wrote them was
  // stopped): reading the array then throws this message.
  std::shared_ptr<const std::string> lost;
  explicit Data(Buffer b) : buffer(b) {}
  Data(Buffer b, std::shared_ptr<void> owner) : buffer(b), external_owner(std::move(owner)) {}
  ~Data();
  Data(const Data&) = delete;
  Data& operator=(const Data&) = delete;
};

struct ArrayFlags {
  bool contiguous = true;      // the elements fill [data, data + data_size) without gaps, any order
  bool row_contiguous = true;  // C order
  bool col_contiguous = true;  // Fortran order
};

Strides row_major_strides(const Shape& shape);
size_t shape_size(const Shape& shape);

class array {
 public:
  // Scalars and nested lists become evaluated arrays on the host.
  template <typename T>
  explicit array(T value, Dtype dtype = dtype_of<T>);
  template <typename T>
  array(std::initializer_list<T> values, Dtype dtype = dtype_of<T>);
  template <typename T>
  array(const std::vector<T>& values, Shape shape, Dtype dtype = dtype_of<T>);
  // An evaluated array that takes (or shares) existing memory.
  array(std::shared_ptr<Data> data, Shape shape, Strides strides, Dtype dtype, int64_t offset = 0);
  // A graph node: evaluated later by `primitive`.
  array(Shape shape, Dtype dtype, std::shared_ptr<Primitive> primitive, std::vector<array> inputs);

  static std::vector<array> make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes,
                                        const std::shared_ptr<Primitive>& primitive,
                                        const std::vector<array>& inputs);

  // --- metadata (no evaluation)
  const Shape& shape() const { return desc_->shape; }
  ShapeElem shape(int dim) const;
  const Strides& strides() const { return desc_->strides; }
  int64_t strides(int dim) const;
  int ndim() const { return static_cast<int>(desc_->shape.size()); }
  size_t size() const { return desc_->size; }
  Dtype dtype() const { return desc_->dtype; }
  size_t itemsize() const { return size_of(dtype()); }
  size_t nbytes() const { return size() * itemsize(); }

  // --- graph
  bool has_primitive() const { return desc_->primitive != nullptr; }
  Primitive& primitive() const { return *desc_->primitive; }
  const std::shared_ptr<Primitive>& primitive_ptr() const { return desc_->primitive; }
  const std::vector<array>& inputs() const { return desc_->inputs; }
  std::vector<array>& inputs() { return desc_->inputs; }
  // The other outputs of this array's primitive (not including this one).
  std::vector<array> siblings() const;
  // All outputs of the primitive, in order (this one included).
  std::vector<array> outputs() const;
  int sibling_position() const { return desc_->position; }
  // Drops the graph above this array (after evaluation).
  void detach();

  // --- evaluation
  enum class Status { unscheduled, evaluated };
  Status status() const { return desc_->status; }
  bool is_evaluated() const { return desc_->status == Status::evaluated; }
  void eval();
  template <typename T>
  T item();

  // --- data (valid once evaluated; host-visible for CPU buffers)
  const std::shared_ptr<Data>& data_shared_ptr() const { return desc_->data; }
  const Buffer& buffer() const { return desc_->data->buffer; }
  int64_t offset() const { return desc_->offset; }  // in elements
  int64_t data_offset() const { return offset(); }  // MLX's name for offset()
  void* raw_data() const { return desc_->data_ptr; }
  template <typename T>
  T* data() const { return static_cast<T*>(desc_->data_ptr); }
  size_t data_size() const { return desc_->data_size; }  // elements reachable from data()
  const ArrayFlags& flags() const { return desc_->flags; }
  Device device() const;

  // --- used by backends to give outputs memory
  void set_data(Buffer buffer);  // row-contiguous, fresh memory
  void set_data(std::shared_ptr<Data> data, size_t data_size, Strides strides, ArrayFlags flags,
                int64_t offset = 0);
  // This array becomes a view of `other`'s memory.
  void copy_shared_buffer(const array& other, const Strides& strides, ArrayFlags flags,
                          size_t data_size, int64_t offset = 0);
  void copy_shared_buffer(const array& other);
  void set_status(Status s) { desc_->status = s; }

  // Identity (arrays are handles).
  const void* id() const { return desc_.get(); }
  bool is_same(const array& o) const { return desc_ == o.desc_; }
  bool is_tracer() const { return desc_->is_tracer; }
  void set_tracer(bool t) { desc_->is_tracer = t; }

  struct ArrayDesc;
  explicit array(std::shared_ptr<ArrayDesc> d) : desc_(std::move(d)) {}

  struct ArrayDesc {
    Shape shape;
    Strides strides;
    size_t size = 0;
    Dtype dtype = Dtype::float32;
    std::shared_ptr<Primitive> primitive;
    std::vector<array> inputs;
    // Siblings are held weakly so the outputs of one primitive do not keep
    // each other alive in a cycle.
    std::vector<std::weak_ptr<ArrayDesc>> siblings;
    int position = 0;
    // Shapes and dtypes of all outputs of the primitive, so a sibling the
    // user dropped can still be given memory when the node is evaluated.
    std::shared_ptr<const std::vector<std::pair<Shape, Dtype>>> output_specs;
    Status status = Status::unscheduled;
    std::shared_ptr<Data> data;
    void* data_ptr = nullptr;
    int64_t offset = 0;
    size_t data_size = 0;
    ArrayFlags flags;
    bool is_tracer = false;

    ArrayDesc(Shape s, Dtype d);
    ~ArrayDesc();
  };

 private:
  void init_from_host(const void* src, Shape shape, Dtype src_dtype, Dtype dtype);
  std::shared_ptr<ArrayDesc> desc_;
};

// `a` evaluated, with its memory readable on the host: `a` itself for a CPU
// array, else a view of a host copy of its GPU buffer. Use it before data<T>()
// on arrays that may live on the GPU.
array to_host(const array& a);

// Host-side conversion of one scalar between dtypes (used for constants).
void convert_scalar(const void* src, Dtype src_dtype, void* dst, Dtype dst_dtype);
// Copies the element at the array's offset (item()) from device memory to the host.
void copy_item_to_host(const array& a, void* dst);

template <typename T>
array::array(T value, Dtype dtype) {
  init_from_host(&value, {}, dtype_of<T>, dtype);
}

template <typename T>
array::array(std::initializer_list<T> values, Dtype dtype) {
  std::vector<T> v(values);
  init_from_host(v.data(), {static_cast<ShapeElem>(v.size())}, dtype_of<T>, dtype);
}

template <>
inline array::array(std::initializer_list<bool> values, Dtype dtype) {
  std::vector<char> v(values.begin(), values.end());
  init_from_host(v.data(), {static_cast<ShapeElem>(v.size())}, Dtype::bool_, dtype);
}

template <typename T>
array::array(const std::vector<T>& values, Shape shape, Dtype dtype) {
  if (shape_size(shape) != values.size()) {
    throw std::invalid_argument("[array] " + std::to_string(values.size()) +
                                " values cannot fill the requested shape.");
  }
  init_from_host(values.data(), std::move(shape), dtype_of<T>, dtype);
}

template <typename T>
T array::item() {
  if (size() != 1) {
    throw std::invalid_argument("[item] only arrays with one element can be converted to a scalar (size is " +
                                std::to_string(size()) + ").");
  }
  eval();
  T out;
  void* host = nullptr;
  std::vector<char> staging;
  if (device().type == Device::cpu) {
    host = raw_data();
  } else {
    staging.resize(itemsize());
    copy_item_to_host(*this, staging.data());
    host = staging.data();
  }
  convert_scalar(host, dtype(), &out, dtype_of<T>);
  return out;
}

}  // namespace alloy
