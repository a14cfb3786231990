// The content-addressed cache: memory and disk hits, distinct keys for
// distinct inputs, corrupt or truncated entries rebuilt, one build for many
// concurrent callers (threads and processes), failed builds not remembered.
#include <algorithm>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "jit/cuda_compile.h"
#include "jit/digest.h"
#include "jit/nvrtc.h"
#include "test_cpu_util.h"

namespace alloy::jit::test {
namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = test_cache_dir() / name;
  std::filesystem::remove_all(dir);
  return dir;
}

std::string constant_kernel(int value) {
  return translation_unit(R"(
template <typename T>
ALLOY_KERNEL_FN void custom_kernel_const(T* out, uint3 thread_position_in_grid) {
  out[thread_position_in_grid.x] = T()" + std::to_string(value) + R"();
}
)",
                          R"(
  alloy_msl::cpu::run<false>(L, [&](const alloy_msl::ThreadIds& t) {
    custom_kernel_const<float>(static_cast<float*>(L->buffers[0]), t.thread_position_in_grid);
  });)");
}

Cache::Builder counting_builder(std::atomic<int>& builds, std::string payload) {
  return [&builds, payload](std::vector<Cache::SideFile>& side) {
    ++builds;
    side.push_back({".txt", "side:" + payload});
    return payload;
  };
}

TEST(Cache, MemoryThenDiskHit) {
  auto dir = fresh_dir("hits");
  std::atomic<int> builds{0};
  const std::string key = digest_hex("hits-key");
  {
    Cache c(dir);
    EXPECT_EQ(*c.get_or_build(key, counting_builder(builds, "payload-1")), "payload-1");
    EXPECT_EQ(*c.get_or_build(key, counting_builder(builds, "other")), "payload-1");
    EXPECT_EQ(c.stats().memory_hits, 1u);
    EXPECT_EQ(c.stats().builds, 1u);
  }
  Cache c2(dir);  // a new process's view: memory empty, disk full
  EXPECT_EQ(*c2.get_or_build(key, counting_builder(builds, "other")), "payload-1");
  EXPECT_EQ(c2.stats().disk_hits, 1u);
  EXPECT_EQ(builds.load(), 1);
  std::ifstream side(c2.side_path(key, ".txt"));
  std::string text((std::istreambuf_iterator<char>(side)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "side:payload-1");
}

TEST(Cache, FindSeesWhatPutStored) {
  auto dir = fresh_dir("find-put");
  const std::string key = digest_hex("find-key");
  {
    Cache c(dir);
    EXPECT_EQ(c.find(key), nullptr);
    c.put(key, "plan bytes");
    ASSERT_NE(c.find(key), nullptr);
    EXPECT_EQ(*c.find(key), "plan bytes");
    EXPECT_EQ(c.stats().memory_hits, 2u);
  }
  Cache c2(dir);  // another process: from disk
  ASSERT_NE(c2.find(key), nullptr);
  EXPECT_EQ(*c2.find(key), "plan bytes");
  EXPECT_EQ(c2.stats().disk_hits, 1u);
  // A damaged file is no entry.
  std::ofstream(c2.entry_path(key), std::ios::binary | std::ios::trunc) << "ALLOYCE2 torn";
  Cache c3(dir);
  EXPECT_EQ(c3.find(key), nullptr);
  EXPECT_EQ(c3.stats().corrupt_entries, 1u);
}

TEST(Cache, CorruptOrTruncatedEntryIsRebuilt) {
  auto dir = fresh_dir("corrupt");
  std::atomic<int> builds{0};
  const std::string key = digest_hex("corrupt-key");
  std::string payload(100000, 'x');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = char('a' + i % 23);
  Cache(dir).get_or_build(key, counting_builder(builds, payload));
  auto path = Cache(dir).entry_path(key);
  auto full = std::filesystem::file_size(path);

  std::filesystem::resize_file(path, full / 2);  // a torn write
  Cache c1(dir);
  EXPECT_EQ(*c1.get_or_build(key, counting_builder(builds, payload)), payload);
  EXPECT_EQ(c1.stats().corrupt_entries, 1u);
  EXPECT_EQ(builds.load(), 2);
  EXPECT_EQ(std::filesystem::file_size(path), full);  // replaced by a whole entry

  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(full - 10);
    f.put('#');  // one flipped byte in the payload
  }
  Cache c2(dir);
  EXPECT_EQ(*c2.get_or_build(key, counting_builder(builds, payload)), payload);
  EXPECT_EQ(c2.stats().corrupt_entries, 1u);
  EXPECT_EQ(builds.load(), 3);

  Cache c3(dir);  // and the rebuilt entry is good
  EXPECT_EQ(*c3.get_or_build(key, counting_builder(builds, payload)), payload);
  EXPECT_EQ(c3.stats().disk_hits, 1u);
  EXPECT_EQ(builds.load(), 3);
}

TEST(Cache, ConcurrentCallersShareOneBuild) {
  Cache c(fresh_dir("concurrent"));
  std::atomic<int> builds{0};
  const std::string key = digest_hex("concurrent-key");
  std::vector<std::thread> threads;
  std::vector<Cache::Bytes> got(16);
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      got[i] = c.get_or_build(key, [&](std::vector<Cache::SideFile>&) {
        ++builds;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return std::string("built");
      });
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(builds.load(), 1);
  for (auto& g : got) EXPECT_EQ(g.get(), got[0].get());
}

TEST(Cache, FailedBuildIsNotRemembered) {
  Cache c(fresh_dir("failed"));
  const std::string key = digest_hex("failed-key");
  EXPECT_THROW(c.get_or_build(key, [](std::vector<Cache::SideFile>&) -> std::string { throw std::runtime_error("x"); }),
               std::runtime_error);
  EXPECT_EQ(*c.get_or_build(key, [](std::vector<Cache::SideFile>&) { return std::string("ok"); }), "ok");
}

TEST(Cache, ProcessesWritingOneEntryAtOnce) {
  auto dir = fresh_dir("processes");
  const std::string key = digest_hex("process-key");
  std::string payload(1 << 20, 'p');
  std::vector<pid_t> kids;
  for (int i = 0; i < 6; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      Cache c(dir);
      auto b = c.get_or_build(key, [&](std::vector<Cache::SideFile>&) { return payload; });
      _exit(*b == payload ? 0 : 1);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  Cache c(dir);
  std::atomic<int> builds{0};
  EXPECT_EQ(*c.get_or_build(key, counting_builder(builds, "rebuilt")), payload);
  EXPECT_EQ(builds.load(), 0);
  for (auto& e : std::filesystem::directory_iterator(dir))  // no temporary files left behind
    EXPECT_EQ(e.path().filename().string().rfind(".tmp", 0), std::string::npos) << e.path();
}

TEST(CacheCpu, KernelHitStoresSourceAndDistinctSourcesDiffer) {
  Cache c(fresh_dir("cpu"));
  auto k1 = compile(constant_kernel(1), {}, &c);
  auto k1b = compile(constant_kernel(1), {}, &c);
  auto k2 = compile(constant_kernel(2), {}, &c);
  EXPECT_EQ(k1.get(), k1b.get());
  EXPECT_NE(k1->key(), k2->key());
  EXPECT_EQ(c.stats().builds, 2u);
  std::vector<float> out(5, 0.0f);
  launch(*k1, {out.data()}, {5}, {4});
  EXPECT_EQ(out, std::vector<float>(5, 1.0f));
  launch(*k2, {out.data()}, {5}, {4});
  EXPECT_EQ(out, std::vector<float>(5, 2.0f));
  EXPECT_TRUE(std::filesystem::exists(c.entry_path(k1->key())));
  std::ifstream src(c.side_path(k1->key(), ".cpp"));
  std::string text((std::istreambuf_iterator<char>(src)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, constant_kernel(1));
}

TEST(CacheCpu, KeyCoversOptions) {
  const std::string s = constant_kernel(3);
  CompileOptions safe, fast, extra;
  fast.math_mode = "fast";
  extra.extra_flags = {"-DALLOY_TEST_FLAG=1"};
  EXPECT_EQ(cpu_cache_key(s, safe), cpu_cache_key(s, safe));
  EXPECT_NE(cpu_cache_key(s, safe), cpu_cache_key(s, fast));
  EXPECT_NE(cpu_cache_key(s, safe), cpu_cache_key(s, extra));
  EXPECT_NE(cpu_cache_key(s, safe), cpu_cache_key(s + " ", safe));
  CompileOptions bad;
  bad.math_mode = "turbo";
  EXPECT_THROW(cpu_cache_key(s, bad), std::invalid_argument);
  // The optimization level (kernels split into regions take -O3) is a flag
  // of its own and part of the key; a level g++ does not have is refused.
  CompileOptions o3;
  o3.optimization = 3;
  EXPECT_NE(cpu_cache_key(s, safe), cpu_cache_key(s, o3));
  const std::vector<std::string> flags = host_compile_flags(o3);
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-O3"), flags.end());
  EXPECT_EQ(std::find(flags.begin(), flags.end(), "-O2"), flags.end());
  CompileOptions o9;
  o9.optimization = 9;
  EXPECT_THROW(host_compile_flags(o9), std::invalid_argument);
}

TEST(CacheCpu, ConcurrentCompilesFromThreads) {
  Cache c(fresh_dir("cpu-concurrent"));
  const std::string s = constant_kernel(4);
  std::vector<std::shared_ptr<CpuKernel>> got(6);
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) threads.emplace_back([&, i] { got[i] = compile_cpu(s, {}, &c); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.stats().builds, 1u);
  for (auto& k : got) EXPECT_EQ(k.get(), got[0].get());
  std::vector<float> out(3, 0.0f);
  launch(*got[0], {out.data()}, {3}, {3});
  EXPECT_EQ(out, std::vector<float>(3, 4.0f));
}

TEST(CacheCpu, CompileErrorCarriesTheLog) {
  Cache c(fresh_dir("cpu-error"));
  try {
    compile_cpu(translation_unit("int f() { return undeclared_name; }", ""), {}, &c);
    FAIL() << "bad source compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log().find("undeclared_name"), std::string::npos) << e.log();
    EXPECT_NE(e.log().find("source:1"), std::string::npos) << e.log();
  }
  EXPECT_EQ(c.stats().builds, 0u);
}

}  // namespace
}  // namespace alloy::jit::test

namespace alloy::jit::test {
namespace {

bool nvrtc_is_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libnvrtc") != std::string::npos) return true;
  return false;
}

// A process whose kernels all come from the disk cache must not pay for
// loading NVRTC (milliseconds): the key names NVRTC by its file instead.
TEST(CacheKey, CudaKeyDoesNotLoadNvrtc) {
  if (nvrtc_is_mapped()) GTEST_SKIP() << "an earlier test in this process loaded NVRTC";
  // Where the toolkit keeps NVRTC (the test's own look, not the library's).
  bool toolkit_has_nvrtc = false;
  for (const char* dir : {"/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"}) {
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(dir, ec))
      toolkit_has_nvrtc |= f.path().filename().string().rfind("libnvrtc.so", 0) == 0;
  }
  if (!toolkit_has_nvrtc) GTEST_SKIP() << "no NVRTC under /usr/local/cuda";
  EXPECT_EQ(nvrtc_identity().rfind("file ", 0), 0u) << nvrtc_identity();
  NvrtcOptions opts;
  opts.arch = "sm_90";
  std::string key = cuda_cache_key("extern \"C\" __global__ void k() {}", opts);
  EXPECT_EQ(key.size(), 32u);
  EXPECT_FALSE(nvrtc_is_mapped());
  opts.arch = "sm_80";
  EXPECT_NE(cuda_cache_key("extern \"C\" __global__ void k() {}", opts), key);
}


// ---- trust: a cache nobody else can write (issue 17, item 4)

namespace trust {  // helpers of the CacheTrust tests

// A shared object whose loading leaves a marker file: what a planted entry
// would do if it were ever run.
std::string planted_shared_object(const std::filesystem::path& work, const std::filesystem::path& marker) {
  std::filesystem::create_directories(work);
  auto src = work / "planted.cpp", so = work / "planted.so";
  std::ofstream(src) << "#include <cstdio>\n__attribute__((constructor)) static void planted() { "
                        "std::FILE* f = std::fopen(\"" << marker.string() << "\", \"w\"); if (f) std::fclose(f); }\n";
  std::string cmd = "c++ -shared -fPIC -o " + so.string() + " " + src.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(so, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A well-formed, checksummed entry for `key` holding `payload`, written at
// `dir` the way another user would leave it.
void plant_entry(const std::filesystem::path& dir, const std::string& key, const std::string& payload) {
  auto staging = fresh_dir("trust-staging");
  Cache(staging).put(key, payload);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(staging / (key + ".bin"), dir / (key + ".bin"),
                             std::filesystem::copy_options::overwrite_existing);
}

mode_t mode_of(const std::filesystem::path& p) {
  struct stat st;
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

}  // namespace trust

TEST(CacheTrust, DirectoryIsCreatedPrivate) {
  auto dir = fresh_dir("trust-private") / "nested" / "cache";
  Cache c(dir);
  EXPECT_EQ(c.dir(), dir);
  EXPECT_EQ(trust::mode_of(dir), 0700u);
  c.put(digest_hex("private-key"), "bytes");
  EXPECT_EQ(trust::mode_of(c.entry_path(digest_hex("private-key"))) & 022u, 0u);
}

TEST(CacheTrust, EntryWritableByOthersIsNotLoadedButRebuilt) {
  auto dir = fresh_dir("trust-entry");
  const std::string key = digest_hex("trust-entry-key");
  std::atomic<int> builds{0};
  Cache(dir).get_or_build(key, counting_builder(builds, "ours"));
  auto path = Cache(dir).entry_path(key);
  trust::plant_entry(dir, key, "planted");
  std::filesystem::permissions(path, std::filesystem::perms::group_write | std::filesystem::perms::others_write,
                               std::filesystem::perm_options::add);
  Cache c(dir);
  EXPECT_EQ(c.find(key), nullptr);
  EXPECT_EQ(c.stats().untrusted_entries, 1u);
  EXPECT_EQ(*c.get_or_build(key, counting_builder(builds, "rebuilt")), "rebuilt");
  EXPECT_EQ(builds.load(), 2);
  EXPECT_EQ(trust::mode_of(path) & 022u, 0u);  // replaced by a file of ours
  Cache again(dir);
  EXPECT_EQ(*again.find(key), "rebuilt");
}

TEST(CacheTrust, EntryOwnedByAnotherUserIsNotLoaded) {
  if (::geteuid() != 0) GTEST_SKIP() << "making a file of another user needs root";
  auto dir = fresh_dir("trust-owner");
  const std::string key = digest_hex("trust-owner-key");
  trust::plant_entry(dir, key, "planted by uid 65534");
  ASSERT_EQ(::chown(Cache(dir).entry_path(key).c_str(), 65534, 65534), 0);
  Cache c(dir);
  EXPECT_EQ(c.find(key), nullptr);
  EXPECT_EQ(c.stats().untrusted_entries, 1u);
}

TEST(CacheTrust, SharedDirectoryIsNotUsedAndItsPlantedKernelNeverRuns) {
  auto root = fresh_dir("trust-shared");
  auto shared = root / "shared", home_cache = root / "xdg";
  auto marker = root / "PLANTED_CODE_RAN";
  const std::string source = constant_kernel(7);
  const std::string key = cpu_cache_key(source, {});
  trust::plant_entry(shared, key, trust::planted_shared_object(root / "work", marker));
  std::filesystem::permissions(shared, std::filesystem::perms::all);  // 0777, as /tmp/shared would be
  // The fallback is the user's own cache directory: here, one of the test's.
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  std::string saved = old_xdg ? old_xdg : "";
  ::setenv("XDG_CACHE_HOME", home_cache.c_str(), 1);
  {
    Cache c(shared);
    EXPECT_EQ(c.dir(), home_cache / "alloy");
    auto k = compile(source, {}, &c);
    std::vector<float> out(4, 0.0f);
    launch(*k, {out.data()}, {4}, {4});
    EXPECT_EQ(out, std::vector<float>(4, 7.0f));
    EXPECT_EQ(c.stats().builds, 1u);
  }
  if (old_xdg) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1); else ::unsetenv("XDG_CACHE_HOME");
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a planted cache entry was loaded";
  // The same planted entry in a private directory of ours, but group-writable: not run either.
  auto own = root / "own";
  trust::plant_entry(own, key, trust::planted_shared_object(root / "work2", marker));
  std::filesystem::permissions(own, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace);
  std::filesystem::permissions(own / (key + ".bin"), std::filesystem::perms::group_write,
                               std::filesystem::perm_options::add);
  Cache c2(own);
  auto k2 = compile(source, {}, &c2);
  EXPECT_EQ(c2.stats().untrusted_entries, 1u);
  EXPECT_FALSE(std::filesystem::exists(marker)) << "a group-writable cache entry was loaded";
}

}  // namespace
}  // namespace alloy::jit::test
