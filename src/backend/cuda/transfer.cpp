// Arrays crossing between host and GPU memory. A buffer is copied once per
// direction and the copy kept beside it (Data::mirror).
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "alloy/allocator.h"
#include "backend/cuda/device.h"
#include "backend/cuda/fault.h"
#include "core/streams.h"

namespace alloy {

namespace {

array view_over(const std::shared_ptr<Data>& data, const array& like) {
  return array(data, like.shape(), like.strides(), like.dtype(), like.offset());
}

array host_mirror_view(const array& a) {
  const auto& d = a.data_shared_ptr();
  if (d->lost) throw std::runtime_error(*d->lost);
  if (!d->mirror && gpu_memory_lost(*d)) throw std::runtime_error(gpu_memory_lost_message());
  if (!d->mirror) {
    cuda::synchronize_all();
    Buffer host = allocator(Device(Device::cpu)).malloc(d->buffer.size);
    if (d->buffer.size) {
      cuda::check(cuda_driver::api().cuMemcpyDtoH(host.ptr, reinterpret_cast<cuda::CUdeviceptr>(d->buffer.ptr),
                                                  d->buffer.size),
                  "gpu->cpu", "cuMemcpyDtoH");
    }
    d->mirror = std::make_shared<Data>(host);
  }
  return view_over(d->mirror, a);
}

// Python scalars (`x + 1.0`) are fresh host arrays on every call, and a
// pageable host-to-device copy of a few bytes costs microseconds. Buffers
// never change once written, so one device copy per distinct value is kept
// for the process and shared by every array that holds that value.
//
// The copies live in slabs taken from the driver, not from the caching
// allocator: a block the allocator hands back may still be written by
// kernels queued before its array was freed on the host (reuse is ordered on
// the streams, and this copy is on none of them), and a value written there
// synchronously would be overwritten when they run. Fresh memory has no such
// readers or writers, so a copy that has landed is seen by every stream
// (cuda::write_fresh waits until it has).
constexpr size_t kConstantBytes = 16;    // up to complex64 / two 8-byte values
constexpr size_t kMaxConstants = 4096;   // then fall back to plain copies
constexpr size_t kSlabSlots = 256;       // constants per slab (4 KiB)

std::shared_ptr<Data> device_constant(const void* host, size_t bytes) {
  static std::mutex mu;
  static auto* constants = new std::unordered_map<std::string, std::shared_ptr<Data>>();  // never freed
  static cuda_driver::CUdeviceptr slab = 0;
  static size_t slab_used = kSlabSlots;
  static unsigned filled_in = 0;  // the context generation of the entries
  std::string key(static_cast<const char*>(host), bytes);
  std::lock_guard<std::mutex> lock(mu);
  if (filled_in != cuda::context_generation()) {
    constants->clear();  // their memory died with the old context
    slab_used = kSlabSlots;
    filled_in = cuda::context_generation();
  }
  auto it = constants->find(key);
  if (it != constants->end()) return it->second;
  if (constants->size() >= kMaxConstants) return nullptr;
  if (slab_used == kSlabSlots) {
    // Kept for the context's life (at most kMaxConstants / kSlabSlots slabs).
    cuda::ensure_context();
    cuda::check(cuda_driver::api().cuMemAlloc(&slab, kSlabSlots * kConstantBytes), "cpu->gpu",
                "cuMemAlloc (constants)");
    slab_used = 0;
  }
  const cuda_driver::CUdeviceptr at = slab + slab_used++ * kConstantBytes;
  cuda::write_fresh(at, host, bytes, "cpu->gpu (constant)");
  // Data frees through the allocator unless it has an external owner; a
  // constant's memory belongs to its slab, so the Data gets a token owner.
  static const auto* slab_owner = new std::shared_ptr<void>(std::make_shared<int>(0));
  auto data = std::make_shared<Data>(
      Buffer{reinterpret_cast<void*>(at), kConstantBytes, Device(Device::gpu, 0), cuda::context_generation()},
      *slab_owner);
  constants->emplace(std::move(key), data);
  return data;
}

array to_device(const array& a, const Stream& s) {
  const auto& d = a.data_shared_ptr();
  // The array's own bytes only (allocations are rounded up, so the buffer
  // says nothing of them); not kept as the buffer's mirror, which other
  // views of it may read further into.
  const size_t bytes = a.data_size() * a.itemsize();
  if (d->mirror && gpu_memory_lost(*d->mirror)) d->mirror.reset();  // made before a GPU fault
  if (!d->mirror && a.offset() == 0 && bytes > 0 && bytes <= kConstantBytes) {
    if (auto c = device_constant(d->buffer.ptr, bytes)) return view_over(c, a);
  }
  if (!d->mirror) {
    Buffer dev = allocator(Device(Device::gpu)).malloc(d->buffer.size);
    if (d->buffer.size) {
      cuda::check(cuda_driver::api().cuMemcpyHtoDAsync(reinterpret_cast<cuda::CUdeviceptr>(dev.ptr), d->buffer.ptr,
                                                       d->buffer.size, cuda::stream_for(s)),
                  "cpu->gpu", "cuMemcpyHtoDAsync");
      cuda::note_pending(s);
    }
    d->mirror = std::make_shared<Data>(dev);
  }
  return view_over(d->mirror, a);
}

}  // namespace

std::vector<array> inputs_on_host(const std::vector<array>& inputs) {
  std::vector<array> out;
  out.reserve(inputs.size());
  for (auto& in : inputs) out.push_back(in.device().type == Device::cpu ? in : host_mirror_view(in));
  return out;
}

std::vector<array> inputs_on_device(const std::vector<array>& inputs, const Stream& s) {
  std::vector<array> out;
  out.reserve(inputs.size());
  for (auto& in : inputs) out.push_back(in.device().type == Device::gpu ? in : to_device(in, s));
  return out;
}

void order_inputs_on(const std::vector<array>& inputs, const Stream& s) {
  if (!cuda::several_streams()) return;
  for (const array& in : inputs) {
    const auto& d = in.data_shared_ptr();
    // Memory of others (DLPack) says nothing of its streams; constants are
    // written before any stream reads them.
    if (!d || d->external_owner || d->buffer.device.type != Device::gpu) continue;
    Buffer& b = d->buffer;
    if (b.stream == s.index || b.stream == kNoStream || b.also_read_on == s.index) continue;
    cuda::order_after(s, b.stream);
    b.also_read_on = b.also_read_on == kNoStream ? s.index : kManyStreams;
  }
}

void synchronize_streams_for(const std::vector<array>&) {
  if (cuda_driver::is_available()) cuda::synchronize_all();
}

void copy_item_to_host(const array& a, void* dst) {
  cuda::synchronize_all();
  if (const auto& d = a.data_shared_ptr(); d->mirror == nullptr && gpu_memory_lost(*d))
    throw std::runtime_error(gpu_memory_lost_message());
  cuda::check(cuda_driver::api().cuMemcpyDtoH(dst, reinterpret_cast<cuda::CUdeviceptr>(a.raw_data()), a.itemsize()),
              "item", "cuMemcpyDtoH");
}

}  // namespace alloy
