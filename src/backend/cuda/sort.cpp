// GPU evaluation of Sort and ArgSort along the last axis (device/sort.cuh);
// Partition and ArgPartition run the same full sort (a sorted row is one
// valid partition).
// The input is made row-contiguous; rows of at most one tile are sorted by
// one kernel, longer rows by tile sorts then merge passes through scratch
// (key, position) buffers, the last pass writing the output.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "backend/cuda/elementwise.h"
#include "backend/cuda/kernel_sources.h"
#include "backend/cuda/kernels.h"
#include "primitives/sort.h"

namespace alloy {

using namespace cuda;

namespace {

// Must match device/sort.cuh.
constexpr int64_t kTile = 2048;
constexpr unsigned kThreads = 512;

// Temporary GPU memory (freed with the array; the allocator hands a block
// out again only to later launches, so stream order keeps it valid).
array sort_scratch(int64_t n, Dtype d) {
  Buffer b = allocator(Device(Device::gpu)).malloc(static_cast<size_t>(std::max<int64_t>(n, 1)) * size_of(d));
  return array(std::make_shared<Data>(b), {static_cast<ShapeElem>(n)}, {1}, d);
}

void run_sort(const array& in_any, array& out, bool arg, const Stream& stream, const char* op) {
  allocate_row_contiguous(out);
  if (out.size() == 0) return;
  CUstream s = stream_for(stream);
  array in = row_contiguous(in_any, s, op);
  const Dtype t = in.dtype();
  const int64_t n = in.ndim() == 0 ? 1 : in.shape(in.ndim() - 1);
  const int64_t rows = static_cast<int64_t>(in.size()) / n;
  SourceFn source = [=](const std::string& k) { return sort_source(t, k); };
  const std::string key = std::string("sort/") + dtype_name(t);
  const void* src = in.raw_data();
  void* out_keys = arg ? nullptr : out.raw_data();
  void* out_pos = arg ? out.raw_data() : nullptr;
  if (n <= kTile) {
    // As the kernel packs them: short rows share a block; threads for half
    // the packed elements (each owns one pair per step), so a few short rows
    // do not hold kThreads threads.
    int64_t size = 1;
    while (size < n) size *= 2;
    const int64_t per_block = kTile / size;
    const int64_t jobs = (rows + per_block - 1) / per_block;
    const int64_t elements = std::min(rows, per_block) * size;
    unsigned threads = 32;
    while (threads < kThreads && 2 * int64_t(threads) < elements) threads *= 2;
    const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(jobs, int64_t(1) << 20));
    launch(kernel(key, "sort_tile", source), blocks, threads, 0, s, src, out_keys, out_pos, rows, n);
    note_pending(stream);
    return;
  }
  const int64_t tiles = rows * ((n + kTile - 1) / kTile);
  const unsigned tile_blocks = static_cast<unsigned>(std::min<int64_t>(tiles, int64_t(1) << 20));
  const int64_t total = rows * n;
  array keys[2] = {sort_scratch(total, t), sort_scratch(total, t)};
  array pos[2] = {sort_scratch(total, Dtype::uint32), sort_scratch(total, Dtype::uint32)};
  void* k0 = keys[0].raw_data();
  void* p0 = pos[0].raw_data();
  launch(kernel(key, "sort_tile", source), tile_blocks, kThreads, 0, s, src, k0, p0, rows, n);
  CUfunction merge = kernel(key, "sort_merge", source);
  int cur = 0;
  for (int64_t width = kTile; width < n; width *= 2) {
    const bool last = 2 * width >= n;
    const void* kin = keys[cur].raw_data();
    const void* pin = pos[cur].raw_data();
    void* kout = last ? out_keys : keys[1 - cur].raw_data();
    void* pout = last ? out_pos : pos[1 - cur].raw_data();
    launch(merge, grid_blocks(total), kBlock, 0, s, kin, pin, kout, pout, rows, n, width);
    cur = 1 - cur;
  }
  note_pending(stream);
}

}  // namespace

void Sort::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  run_sort(inputs[0], outputs[0], false, stream(), name());
}

void ArgSort::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  run_sort(inputs[0], outputs[0], true, stream(), name());
}

void Partition::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  run_sort(inputs[0], outputs[0], false, stream(), name());
}

void ArgPartition::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  run_sort(inputs[0], outputs[0], true, stream(), name());
}

}  // namespace alloy
