// CPU evaluation of View and AsStrided: views of the input's memory, after a
// row-contiguous copy where the input's layout does not allow one.
#include <cstring>

#include "backend/cpu/elementwise_loops.h"
#include "backend/cpu/strided.h"
#include "primitives/view.h"

namespace alloy {

void View::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  if (in.itemsize() == out.itemsize()) {
    reinterpret_view(in, out);
    return;
  }
  array x = cpu::row_contiguous_copy(in);
  if (reinterpret_view(x, out)) return;
  // A row-contiguous input that starts mid-element of the new dtype: copy its bytes.
  cpu::allocate_row_contiguous(out);
  if (x.nbytes()) std::memcpy(out.raw_data(), x.raw_data(), x.nbytes());
}

void AsStrided::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  as_strided_view(cpu::row_contiguous_copy(inputs[0]), outputs[0], *this);
}

}  // namespace alloy
