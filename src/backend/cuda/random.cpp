// GPU evaluation of RandomBits (device/random.cuh): the CPU's word layout,
// one thread per threefry call.
#include "backend/cuda/kernel_sources.h"
#include "backend/cuda/kernels.h"
#include "primitives/random.h"

namespace alloy {

using namespace cuda;

void RandomBits::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& key = inputs[0];
  array& out = outputs[0];
  const size_t bytes = out.nbytes();
  const uint64_t W = (bytes + 3) / 4, H = W / 2, odd = W % 2;
  // Whole words: the tail of the last one lies past nbytes, inside the block.
  out.set_data(allocator(Device(Device::gpu)).malloc(W * 4));
  if (W == 0) return;
  CUfunction fn = kernel("random", "random_bits",
                         [](const std::string& k) { return random_source(k); });
  void* words = out.raw_data();
  const void* k = key.raw_data();
  int64_t key_stride = key.strides()[0];
  launch(fn, grid_blocks(static_cast<int64_t>(H + odd)), kBlock, 0, stream_for(stream()), words, k, key_stride, H,
         odd);
  note_pending(stream());
}

}  // namespace alloy
