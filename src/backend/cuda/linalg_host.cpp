// GPU evals of the factorization primitives: FOR NOW these run the CPU's
// LAPACK code on host copies of the inputs and upload the results (correct,
// synchronous, and slow for large batches). cuSOLVER (dlopen'ed like cuBLAS)
// is the intended replacement; until then a GPU stream gives the same
// results as the CPU one, on any machine.
#include <memory>

#include "alloy/allocator.h"
#include "backend/cuda/device.h"
#include "backend/cuda/kernels.h"
#include "core/streams.h"
#include "primitives/linalg_decomp.h"

namespace alloy {

namespace {

void run_on_host(Primitive& p, const std::vector<array>& inputs, std::vector<array>& outputs) {
  // inputs_on_host waits for the GPU work that produced the inputs.
  p.eval_cpu(inputs_on_host(inputs), outputs);
  for (array& out : outputs) {
    std::shared_ptr<Data> host = out.data_shared_ptr();  // kept alive across the upload
    const void* src = out.raw_data();
    const size_t bytes = out.nbytes();
    cuda::allocate_row_contiguous(out);
    if (bytes == 0) continue;
    // Synchronous, so kernels queued later on any stream read the values.
    cuda::check(cuda_driver::api().cuMemcpyHtoD(cuda::dptr(out.raw_data()), src, bytes), p.name(), "cuMemcpyHtoD");
  }
}

}  // namespace

#define ALLOY_LINALG_ON_HOST(Class) \
  void Class::eval_gpu(const std::vector<array>& inputs, std::vector<array>& outputs) { run_on_host(*this, inputs, outputs); }
ALLOY_LINALG_ON_HOST(Cholesky)
ALLOY_LINALG_ON_HOST(Inverse)
ALLOY_LINALG_ON_HOST(LUF)
ALLOY_LINALG_ON_HOST(QRF)
ALLOY_LINALG_ON_HOST(SVD)
ALLOY_LINALG_ON_HOST(Eig)
ALLOY_LINALG_ON_HOST(Eigh)
#undef ALLOY_LINALG_ON_HOST

}  // namespace alloy
