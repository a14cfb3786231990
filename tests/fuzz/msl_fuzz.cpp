// libFuzzer target over the MSL front end: every input is read by
// msl_fuzz_input.h (options, source, header, log) and driven through the
// paths metal_kernel, cuda_kernel and metal_library take. Documented errors
// are normal outcomes; an undocumented exception is reported here, with its
// type, before aborting, so the crash artifact says what went wrong.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "msl_fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    alloy_fuzz::run_input(data, size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "msl_fuzz: undocumented exception %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "msl_fuzz: a non-std exception escaped the front end\n");
    std::abort();
  }
  return 0;
}
