// The op kernels compiled ahead of time: the set covers every kernel form the
// catalog names; the archive the build made holds a cubin of the right
// architecture for every module of the set; and the run-time lookup honours
// ALLOY_AOT=require / =0, ALLOY_AOT_KERNELS and ALLOY_AOT_LOG. No GPU needed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "backend/cuda/aot_kernels.h"
#include "backend/cuda/kernels.h"
#include "jit/cuda_libraries.h"
#include "jit/digest.h"

#ifndef ALLOY_AOT_ARCHIVE_PATH
#define ALLOY_AOT_ARCHIVE_PATH ""
#endif

namespace alloy::cuda {
namespace {

// The archive as the library finds it: $ALLOY_AOT_KERNELS, else beside
// liballoy (the build folder here; the GPU machine's copy there). Empty when
// this build compiles no AOT kernels.
std::string archive_path() {
  if (std::string(ALLOY_AOT_ARCHIVE_PATH).empty()) return "";
  if (const char* env = std::getenv("ALLOY_AOT_KERNELS"); env && *env) return env;
  return jit::cuda_libraries::own_library_dir() + "/alloy_kernels.aot";
}

TEST(AotKernels, SetCoversEveryCatalogForm) {
  std::set<std::string> sources;
  for (const auto& e : aot_kernel_set()) {
    EXPECT_TRUE(sources.insert(e.source).second) << "two modules of the set share a source: " << e.key;
  }
  for (const auto& e : kernel_catalog()) {
    EXPECT_TRUE(sources.count(e.source)) << "the AOT set lacks the catalog's " << e.key;
  }
}

TEST(AotKernels, ArchiveHoldsACubinOfEachArchitectureForEveryModule) {
  const std::string path = archive_path();
  if (path.empty()) GTEST_SKIP() << "this build compiles no AOT kernels (ALLOY_AOT_ARCHS empty or no toolkit)";
  std::string why;
  auto archive = jit::AotArchive::open(path, aot_fingerprint(kernel_compile_options("sm_90")), &why);
  ASSERT_TRUE(archive) << why;
  ASSERT_FALSE(archive->cubin_archs().empty() && archive->ptx_archs().empty());
  const auto set = aot_kernel_set();
  for (int sm : archive->cubin_archs()) {
    size_t missing = 0;
    for (const auto& e : set) {
      auto img = archive->find(jit::digest_hex(e.source), sm);
      if (!img || img->ptx || img->sm != sm) {
        if (++missing <= 5) ADD_FAILURE() << "no sm_" << sm << " cubin for " << e.key;
        continue;
      }
      ASSERT_EQ(jit::cubin_sm_arch(img->bytes), sm) << e.key;
    }
    EXPECT_EQ(missing, 0u) << "sm_" << sm;
  }
  for (int sm : archive->ptx_archs()) {
    auto img = archive->find(jit::digest_hex(set.front().source), sm + 1000);  // a future GPU
    ASSERT_TRUE(img && img->ptx) << "compute_" << sm;
    EXPECT_NE(std::string(img->bytes).find(".entry"), std::string::npos);
  }
}

// Runs `body` in a child process with the environment `env` (the lookup reads
// its settings once per process); returns the child's exit status.
template <typename F>
int in_child(const std::vector<std::pair<std::string, std::string>>& env, F body) {
  pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    int code = 99;
    try {
      code = body();
    } catch (...) {
      code = 98;
    }
    _exit(code);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(AotKernels, LookupFollowsTheEnvironment) {
  const std::string path = archive_path();
  if (path.empty()) GTEST_SKIP() << "this build compiles no AOT kernels";
  const auto opts = kernel_compile_options("sm_90");
  const auto set = aot_kernel_set();
  const CatalogEntry& known = set.front();
  const std::string unknown = known.source + "\n// not in the archive\n";
  // Found: a cubin for sm_90 (and for sm_89 the sm_86/sm_80 one, if built).
  EXPECT_EQ(in_child({{"ALLOY_AOT_KERNELS", path}}, [&] {
              auto img = aot_image(known.key, known.source, opts);
              return img && jit::cubin_sm_arch(img->bytes) == 90 ? 0 : 1;
            }), 0);
  // Not found: nothing, and the miss is logged.
  const auto log = std::filesystem::temp_directory_path() / ("alloy_aot_log_" + std::to_string(getpid()));
  std::filesystem::remove(log);
  EXPECT_EQ(in_child({{"ALLOY_AOT_KERNELS", path}, {"ALLOY_AOT_LOG", log.string()}}, [&] {
              return aot_image("fam/unknown/k", unknown, opts) ? 1 : 0;
            }), 0);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "fam/unknown/k sm_90\n");
  std::filesystem::remove(log);
  // require: a miss is an error naming the kernel.
  EXPECT_EQ(in_child({{"ALLOY_AOT_KERNELS", path}, {"ALLOY_AOT", "require"}}, [&] {
              try {
                aot_image("fam/unknown/k", unknown, opts);
              } catch (const std::runtime_error& e) {
                return std::string(e.what()).find("'fam/unknown/k'") != std::string::npos ? 0 : 2;
              }
              return 1;
            }), 0);
  // ALLOY_AOT=0: the archive is not used.
  EXPECT_EQ(in_child({{"ALLOY_AOT_KERNELS", path}, {"ALLOY_AOT", "0"}}, [&] {
              return aot_image(known.key, known.source, opts) ? 1 : 0;
            }), 0);
  // An archive that is not there: nothing, and the status says why.
  EXPECT_EQ(in_child({{"ALLOY_AOT_KERNELS", "/nonexistent/alloy_kernels.aot"}}, [&] {
              if (aot_image(known.key, known.source, opts)) return 1;
              return aot_status().find("cannot be opened") != std::string::npos ? 0 : 2;
            }), 0);
}

}  // namespace
}  // namespace alloy::cuda
