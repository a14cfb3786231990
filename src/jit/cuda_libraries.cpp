#include "jit/cuda_libraries.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace alloy::jit::cuda_libraries {

namespace {

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string parent(const std::string& p) {
  size_t k = p.find_last_of('/');
  return k == std::string::npos ? std::string(".") : p.substr(0, k);
}

void add_unique(std::vector<std::string>& v, std::string s) {
  if (s.empty()) return;
  for (const auto& x : v) {
    if (x == s) return;
  }
  v.push_back(std::move(s));
}


// A folder with the headers NVRTC needs: the half types, cooperative groups
// and the CCCL headers they include (nv/target), there or in its cccl/
// (a framework's wheels may bring the first without the last, as PyTorch's do).
bool is_header_dir(const std::string& d) {
  return exists(d + "/cuda_fp16.h") && exists(d + "/cuda_bf16.h") && exists(d + "/cooperative_groups.h") &&
         (exists(d + "/nv/target") || exists(d + "/cccl/nv/target"));
}

// A CUDA 12 wheel set: headers in cuda_runtime, CCCL in cuda_cccl.
bool is_cu12_header_set(const std::string& nvidia) {
  const std::string inc = nvidia + "/cuda_runtime/include";
  return exists(inc + "/cuda_fp16.h") && exists(inc + "/cuda_bf16.h") &&
         (exists(inc + "/nv/target") || exists(nvidia + "/cuda_cccl/include/nv/target"));
}

// `inc` and its CCCL folder (the wheels and CUDA 13 keep CCCL in include/cccl;
// CUDA 12 wheels in their own package, `cccl_elsewhere`).
std::vector<std::string> with_cccl(const std::string& inc, const std::string& cccl_elsewhere = {}) {
  std::vector<std::string> out{inc};
  if (is_dir(inc + "/cccl")) {
    out.push_back(inc + "/cccl");
  } else if (!cccl_elsewhere.empty() && is_dir(cccl_elsewhere)) {
    out.push_back(cccl_elsewhere);
  }
  return out;
}

}  // namespace

std::string own_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_library_dir), &info) == 0 || !info.dli_fname) return {};
  char* real = realpath(info.dli_fname, nullptr);
  std::string path = real ? real : info.dli_fname;
  std::free(real);
  return parent(path);
}

std::vector<std::string> wheel_roots() {
  std::vector<std::string> roots;
  if (const char* v = std::getenv("ALLOY_PYTHON_SITE_DIRS"); v && *v) {
    std::string_view dirs = v;
    while (!dirs.empty()) {
      size_t k = dirs.find(':');
      add_unique(roots, std::string(dirs.substr(0, k)));
      dirs = k == std::string_view::npos ? std::string_view() : dirs.substr(k + 1);
    }
  }
  // Installed as a wheel, liballoy lives in site-packages/alloy/.
  if (std::string own = own_library_dir(); !own.empty()) add_unique(roots, parent(own));
  std::vector<std::string> with_nvidia;
  for (const auto& r : roots) {
    if (is_dir(r + "/nvidia")) with_nvidia.push_back(r);
  }
  return with_nvidia;
}

std::vector<std::string> toolkit_roots() {
  std::vector<std::string> roots;
  for (const char* env : {"ALLOY_CUDA_HOME", "CUDA_HOME", "CUDA_PATH"}) {
    if (const char* v = std::getenv(env); v && *v) add_unique(roots, v);
  }
#ifdef ALLOY_CUDA_INCLUDE_DIR
  // May be a CMake list ("a;b"); each entry is an include dir, its parent a root.
  std::string_view dirs = ALLOY_CUDA_INCLUDE_DIR;
  while (!dirs.empty()) {
    size_t k = dirs.find(';');
    std::string d(dirs.substr(0, k));
    if (!d.empty()) add_unique(roots, parent(d));
    dirs = k == std::string_view::npos ? std::string_view() : dirs.substr(k + 1);
  }
#endif
  add_unique(roots, "/usr/local/cuda");
  return roots;
}

std::vector<std::string> candidates(const LibrarySpec& lib) {
  std::vector<std::string> out;
  if (lib.override_env) {
    if (const char* v = std::getenv(lib.override_env); v && *v) add_unique(out, v);
  }
  // An explicit toolkit outranks the wheels; the implicit ones come after.
  const char* explicit_home = std::getenv("ALLOY_CUDA_HOME");
  auto toolkit_files = [&](const std::string& root) {
    for (const auto& so : lib.sonames) {
      for (const char* libdir : {"/lib64/", "/lib/", "/targets/x86_64-linux/lib/"}) {
        if (exists(root + libdir + so)) add_unique(out, root + libdir + so);
      }
    }
  };
  if (explicit_home && *explicit_home) toolkit_files(explicit_home);
  for (const auto& site : wheel_roots()) {
    for (const auto& so : lib.sonames) {
      if (exists(site + "/nvidia/cu13/lib/" + so)) add_unique(out, site + "/nvidia/cu13/lib/" + so);
      if (!lib.cu12_wheel.empty() && exists(site + "/nvidia/" + lib.cu12_wheel + "/lib/" + so)) {
        add_unique(out, site + "/nvidia/" + lib.cu12_wheel + "/lib/" + so);
      }
    }
  }
  for (const auto& root : toolkit_roots()) toolkit_files(root);
  for (const auto& so : lib.sonames) add_unique(out, so);
  return out;
}

// Loads the files beside `path` whose names start with `prefix`, so that the
// library at `path`, asking for them by name later, gets these (the loader
// matches an already loaded library by its soname).
void load_companions(const std::string& path, const char* prefix) {
  const size_t slash = path.rfind('/');
  if (!prefix || slash == std::string::npos) return;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(path.substr(0, slash), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) dlopen(e.path().c_str(), RTLD_NOW | RTLD_LOCAL);  // kept for the process
  }
}

void* open(const LibrarySpec& lib, std::string* loaded_path, std::string* error) {
  std::string tried;
  for (const std::string& c : candidates(lib)) {
    if (exists(c)) load_companions(c, lib.companion_prefix);
    if (void* handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      if (loaded_path) *loaded_path = c;
      return handle;
    }
    tried += (tried.empty() ? "" : ", ") + c;
  }
  if (error) {
    std::string sites;
    for (const auto& s : wheel_roots()) sites += (sites.empty() ? "" : ", ") + s;
    *error = std::string(lib.display) + " not found (tried " + tried + "; NVIDIA wheels looked for under " +
             (sites.empty() ? std::string("no site-packages with an nvidia/ folder") : sites) +
             "). Fix: " + kInstallHint + ".";
  }
  return nullptr;
}

void* symbol(void* lib, const std::string& name) { return dlsym(lib, name.c_str()); }

std::vector<std::string> header_dirs(const std::string& library_path) {
  // Beside the library: <root>/lib64/libnvrtc.so -> <root>/include (toolkit
  // and CUDA 13 wheels alike: nvidia/cu13/lib -> nvidia/cu13/include).
  if (library_path.find('/') != std::string::npos) {
    std::string root = parent(parent(library_path));
    if (is_header_dir(root + "/include")) return with_cccl(root + "/include");
    // CUDA 12 wheels: nvidia/cuda_nvrtc/lib; the headers are in cuda_runtime.
    std::string nvidia = parent(root);
    if (is_cu12_header_set(nvidia)) {
      return with_cccl(nvidia + "/cuda_runtime/include", nvidia + "/cuda_cccl/include");
    }
  }
  const char* explicit_home = std::getenv("ALLOY_CUDA_HOME");
  if (explicit_home && *explicit_home && is_header_dir(std::string(explicit_home) + "/include")) {
    return with_cccl(std::string(explicit_home) + "/include");
  }
  for (const auto& site : wheel_roots()) {
    if (is_header_dir(site + "/nvidia/cu13/include")) return with_cccl(site + "/nvidia/cu13/include");
    if (is_cu12_header_set(site + "/nvidia")) {
      return with_cccl(site + "/nvidia/cuda_runtime/include", site + "/nvidia/cuda_cccl/include");
    }
  }
  for (const auto& root : toolkit_roots()) {
    if (is_header_dir(root + "/include")) return with_cccl(root + "/include");
  }
  return {};
}

}  // namespace alloy::jit::cuda_libraries
