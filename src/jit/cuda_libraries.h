// Where the CUDA libraries (NVRTC, cuBLAS, cuFFT, cuSOLVER) and the headers
// NVRTC needs are found, in the order users of pip-installed frameworks
// expect: an explicit setting, NVIDIA's pip wheels in the running Python's
// site-packages, CUDA_HOME / CUDA_PATH, the toolkit's usual places, then the
// loader's own search path. One component, so every library is found alike
// and every "not found" error names the same places and the same fix.
#pragma once

#include <string>
#include <vector>

namespace alloy::jit::cuda_libraries {

// One library as the loaders look for it.
struct LibrarySpec {
  const char* display;                  // "libnvrtc", for messages
  std::vector<std::string> sonames;     // "libnvrtc.so.13", "libnvrtc.so.12", ...
  std::string cu12_wheel;               // CUDA 12 wheels: nvidia/<cu12_wheel>/lib ("cuda_nvrtc")
  const char* override_env;             // a file to load first ("ALLOY_NVRTC_LIBRARY")
  // Libraries the found one loads by name from its own folder, which the
  // loader's path does not cover when that folder is a pip wheel's
  // ("libnvrtc-builtins.so." for NVRTC): loaded first from the same folder.
  const char* companion_prefix = nullptr;
};

// site-packages folders searched for NVIDIA's wheels: $ALLOY_PYTHON_SITE_DIRS
// (colon-separated; the alloy package sets it from sys.path at import), and
// the folder above the one holding liballoy (site-packages when installed).
std::vector<std::string> wheel_roots();

// The folder holding liballoy itself (found with dladdr).
std::string own_library_dir();

// CUDA toolkit roots: $ALLOY_CUDA_HOME, $CUDA_HOME, $CUDA_PATH, the build's
// toolkit, /usr/local/cuda.
std::vector<std::string> toolkit_roots();

// Existing files to try, most preferred first, then the bare sonames.
std::vector<std::string> candidates(const LibrarySpec& lib);

// dlopen()s the first candidate that loads (RTLD_NOW | RTLD_LOCAL). On
// success sets `loaded_path`; on failure fills `error` with every place tried
// and the command that fixes it. Returns the handle or nullptr.
void* open(const LibrarySpec& lib, std::string* loaded_path, std::string* error);

// dlsym(), for bind().
void* symbol(void* lib, const std::string& name);

// Binds `slot` to the symbol `name` of `lib`; a name the library lacks is
// appended to `missing` (comma-separated) and leaves the slot null.
template <typename Fn>
void bind(void* lib, Fn& slot, const std::string& name, std::string& missing) {
  slot = reinterpret_cast<Fn>(symbol(lib, name));
  if (!slot) missing += (missing.empty() ? "" : ", ") + name;
}

// Folders holding the CUDA headers NVRTC compiles against (cuda_fp16.h,
// cuda_bf16.h, cooperative_groups.h), then their CCCL folder: those beside
// `library_path` (the NVRTC that was found) first, else the first complete set
// among the wheels and toolkits above.
std::vector<std::string> header_dirs(const std::string& library_path);

// What to run when nothing is found.
inline constexpr const char* kInstallHint =
    "pip install 'alloy[cuda13]' (NVIDIA's CUDA 13 wheels), or set ALLOY_CUDA_HOME to a CUDA toolkit";

}  // namespace alloy::jit::cuda_libraries
