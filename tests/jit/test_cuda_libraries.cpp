// The CUDA library locator: the order of the places it tries (explicit
// setting, NVIDIA's pip wheels, toolkits, the loader's path) and the error
// that names them all. Fake files in a temporary folder stand in for the
// libraries: candidates() only needs them to exist.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "jit/cuda_libraries.h"

namespace {

namespace fs = std::filesystem;
using alloy::jit::cuda_libraries::LibrarySpec;

struct ScopedEnv {
  std::string name;
  std::string old;
  bool had;
  ScopedEnv(const char* n, const std::string& value) : name(n) {
    const char* v = std::getenv(n);
    had = v != nullptr;
    if (had) old = v;
    if (value.empty()) {
      unsetenv(n);
    } else {
      setenv(n, value.c_str(), 1);
    }
  }
  ~ScopedEnv() {
    if (had) {
      setenv(name.c_str(), old.c_str(), 1);
    } else {
      unsetenv(name.c_str());
    }
  }
};

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "";
}

fs::path fresh_dir(const char* name) {
  fs::path d = fs::temp_directory_path() / (std::string("alloy_cudalib_") + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

const LibrarySpec kFake{"liballoyfake", {"liballoyfake.so.13", "liballoyfake.so.12"}, "alloyfake",
                        "ALLOY_FAKE_LIBRARY"};

TEST(CudaLibraries, WheelsComeBeforeToolkitsAndSonamesLast) {
  fs::path site = fresh_dir("site"), home = fresh_dir("home");
  touch(site / "nvidia/cu13/lib/liballoyfake.so.13");
  touch(site / "nvidia/alloyfake/lib/liballoyfake.so.12");  // CUDA 12's per-library wheel
  touch(home / "lib64/liballoyfake.so.13");
  ScopedEnv sites("ALLOY_PYTHON_SITE_DIRS", site.string());
  ScopedEnv cuda_home("CUDA_HOME", home.string());
  ScopedEnv explicit_home("ALLOY_CUDA_HOME", "");
  ScopedEnv override_file("ALLOY_FAKE_LIBRARY", "");
  auto c = alloy::jit::cuda_libraries::candidates(kFake);
  ASSERT_GE(c.size(), 5u);
  EXPECT_EQ(c[0], (site / "nvidia/cu13/lib/liballoyfake.so.13").string());
  EXPECT_EQ(c[1], (site / "nvidia/alloyfake/lib/liballoyfake.so.12").string());
  EXPECT_EQ(c[2], (home / "lib64/liballoyfake.so.13").string());
  EXPECT_EQ(c[c.size() - 2], "liballoyfake.so.13");
  EXPECT_EQ(c.back(), "liballoyfake.so.12");
  fs::remove_all(site);
  fs::remove_all(home);
}

TEST(CudaLibraries, ExplicitSettingsComeFirst) {
  fs::path site = fresh_dir("site2"), home = fresh_dir("home2");
  touch(site / "nvidia/cu13/lib/liballoyfake.so.13");
  touch(home / "lib64/liballoyfake.so.13");
  ScopedEnv sites("ALLOY_PYTHON_SITE_DIRS", site.string());
  ScopedEnv explicit_home("ALLOY_CUDA_HOME", home.string());
  ScopedEnv override_file("ALLOY_FAKE_LIBRARY", "/some/where/liballoyfake.so");
  auto c = alloy::jit::cuda_libraries::candidates(kFake);
  ASSERT_GE(c.size(), 3u);
  EXPECT_EQ(c[0], "/some/where/liballoyfake.so");
  EXPECT_EQ(c[1], (home / "lib64/liballoyfake.so.13").string());
  EXPECT_EQ(c[2], (site / "nvidia/cu13/lib/liballoyfake.so.13").string());
  fs::remove_all(site);
  fs::remove_all(home);
}

TEST(CudaLibraries, NotFoundNamesEveryPlaceAndTheFix) {
  fs::path site = fresh_dir("site3");
  touch(site / "nvidia/cu13/lib/liballoyfake.so.13");  // exists, but is no library
  ScopedEnv sites("ALLOY_PYTHON_SITE_DIRS", site.string());
  ScopedEnv override_file("ALLOY_FAKE_LIBRARY", "");
  std::string path, error;
  EXPECT_EQ(alloy::jit::cuda_libraries::open(kFake, &path, &error), nullptr);
  EXPECT_TRUE(path.empty());
  EXPECT_NE(error.find("liballoyfake not found"), std::string::npos) << error;
  EXPECT_NE(error.find((site / "nvidia/cu13/lib/liballoyfake.so.13").string()), std::string::npos) << error;
  EXPECT_NE(error.find("liballoyfake.so.12"), std::string::npos) << error;
  EXPECT_NE(error.find(site.string()), std::string::npos) << error;
  EXPECT_NE(error.find("pip install 'alloy[cuda13]'"), std::string::npos) << error;
  fs::remove_all(site);
}

void fake_headers(const fs::path& inc, const fs::path& cccl) {
  touch(inc / "cuda_fp16.h");
  touch(inc / "cuda_bf16.h");
  touch(inc / "cooperative_groups.h");
  touch(cccl / "nv/target");
}

TEST(CudaLibraries, HeadersBesideTheLibraryWin) {
  fs::path site = fresh_dir("site4");
  fake_headers(site / "nvidia/cu13/include", site / "nvidia/cu13/include/cccl");
  auto dirs = alloy::jit::cuda_libraries::header_dirs((site / "nvidia/cu13/lib/libnvrtc.so.13").string());
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_EQ(dirs[0], (site / "nvidia/cu13/include").string());
  EXPECT_EQ(dirs[1], (site / "nvidia/cu13/include/cccl").string());
  // CUDA 12's wheels keep the headers in cuda_runtime and CCCL in cuda_cccl.
  fs::path site12 = fresh_dir("site12");
  fake_headers(site12 / "nvidia/cuda_runtime/include", site12 / "nvidia/cuda_cccl/include");
  dirs = alloy::jit::cuda_libraries::header_dirs((site12 / "nvidia/cuda_nvrtc/lib/libnvrtc.so.12").string());
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_EQ(dirs[0], (site12 / "nvidia/cuda_runtime/include").string());
  EXPECT_EQ(dirs[1], (site12 / "nvidia/cuda_cccl/include").string());
  fs::remove_all(site);
  fs::remove_all(site12);
}

TEST(CudaLibraries, IncompleteWheelHeadersAreSkipped) {
  // A framework's wheels may bring NVRTC and the half headers but not CCCL
  // (PyTorch's do): the next complete set (here a toolkit) serves instead.
  fs::path site = fresh_dir("site5"), home = fresh_dir("home5");
  touch(site / "nvidia/cu13/include/cuda_fp16.h");
  touch(site / "nvidia/cu13/include/cuda_bf16.h");
  touch(site / "nvidia/cu13/include/cooperative_groups.h");
  fake_headers(home / "include", home / "include");
  ScopedEnv sites("ALLOY_PYTHON_SITE_DIRS", site.string());
  ScopedEnv explicit_home("ALLOY_CUDA_HOME", "");
  ScopedEnv cuda_home("CUDA_HOME", home.string());
  auto dirs = alloy::jit::cuda_libraries::header_dirs((site / "nvidia/cu13/lib/libnvrtc.so.13").string());
  ASSERT_FALSE(dirs.empty());
  EXPECT_EQ(dirs[0], (home / "include").string());
  fs::remove_all(site);
  fs::remove_all(home);
}

// NVRTC from a pip wheel opens libnvrtc-builtins by name, and a wheel's
// folder is on no loader path: the companion is loaded first from the same
// folder. Here a library that, when loaded, opens its companion by name.
TEST(CudaLibraries, CompanionsBesideTheLibraryAreLoadedFirst) {
  fs::path site = fresh_dir("companion");
  fs::path lib = site / "nvidia" / "cu13" / "lib";
  fs::create_directories(lib);
  auto build = [&](const std::string& code, const std::string& name, const std::string& soname) {
    fs::path src = site / (name + ".cpp");
    std::ofstream(src) << code;
    std::string cmd = "c++ -shared -fPIC -Wl,-soname," + soname + " -o " + (lib / name).string() + " " +
                      src.string() + " -ldl";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  };
  build("extern \"C\" int companion_value() { return 42; }\n", "liballoyfakebuiltins.so.13.0",
        "liballoyfakebuiltins.so.13.0");
  build("#include <dlfcn.h>\nextern \"C\" int found = 0;\n__attribute__((constructor)) static void probe() {"
        " found = dlopen(\"liballoyfakebuiltins.so.13.0\", RTLD_NOW) != nullptr; }\n",
        "liballoyfake.so.13", "liballoyfake.so.13");
  ScopedEnv sites("ALLOY_PYTHON_SITE_DIRS", site.string());
  LibrarySpec with{"liballoyfake", {"liballoyfake.so.13"}, "alloyfake", "ALLOY_FAKE_LIBRARY",
                   "liballoyfakebuiltins.so."};
  std::string path, error;
  void* h = alloy::jit::cuda_libraries::open(with, &path, &error);
  ASSERT_NE(h, nullptr) << error;
  EXPECT_EQ(path, (lib / "liballoyfake.so.13").string());
  auto* found = static_cast<int*>(alloy::jit::cuda_libraries::symbol(h, "found"));
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(*found, 1) << "the library could not open its companion by name";
}

}  // namespace
