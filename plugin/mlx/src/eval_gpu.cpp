// MetalKernelPrimitive on MLX's GPU: the work is in liballoy_mlx_cuda.so
// (eval_cuda.cpp), beside this library, loaded on the first GPU launch.
#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "primitive.h"

namespace alloy::mlx {

namespace {

EvalGpuFn load_eval_gpu() {
  Dl_info self{};
  if (!dladdr(reinterpret_cast<void*>(&load_eval_gpu), &self) || !self.dli_fname) {
    throw std::runtime_error("[metal_kernel] cannot locate liballoy_mlx to find its CUDA part.");
  }
  std::string dir = self.dli_fname;
  dir = dir.substr(0, dir.find_last_of('/') + 1);
  const std::string path = dir + "liballoy_mlx_cuda.so";
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    throw std::runtime_error(std::string("[metal_kernel] a kernel on MLX's GPU needs Alloy's CUDA part, ") + path +
                             ", and an MLX built with CUDA (mlx[cuda13]): " + dlerror());
  }
  auto fn = reinterpret_cast<EvalGpuFn>(dlsym(handle, kEvalGpuSymbol));
  if (!fn) throw std::runtime_error(std::string("[metal_kernel] ") + path + " lacks " + kEvalGpuSymbol + ".");
  return fn;
}

}  // namespace

void MetalKernelPrimitive::eval_gpu(const std::vector<mxc::array>& inputs, std::vector<mxc::array>& outputs) {
  static EvalGpuFn eval = load_eval_gpu();  // a failed load throws and is retried next time
  eval(launch_, stream(), inputs, outputs);
}

}  // namespace alloy::mlx
