// Disk entry format: "ALLOYCE2" | payload size (8 bytes, little endian) |
// XXH3-128 digest of the payload (16 bytes) | payload. A reader accepts an entry only
// when the size and the checksum match, so a torn write (a crash mid-write, a
// full disk) or a damaged file is rebuilt instead of loaded.
//
// Trust: entries hold code this process runs (shared objects it dlopens,
// cubins it loads). The cache directory is created 0700; a directory owned by
// another user or writable by group or others is not used at all (a warning,
// then a private directory); an entry file owned by another user or writable
// by group or others is never loaded (a warning, then a rebuild that replaces
// it). So ALLOY_CACHE_DIR=/tmp/shared with files planted by someone else runs
// none of them.
#include "jit/cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <thread>

#include "jit/digest.h"

namespace alloy::jit {
namespace {

constexpr char kMagic[8] = {'A', 'L', 'L', 'O', 'Y', 'C', 'E', '2'};
constexpr size_t kHeaderBytes = 8 + 8 + 16;

// Why `st` may not be trusted, or empty (see the trust rules above).
std::string untrusted_reason(const struct stat& st) {
  if (st.st_uid != ::geteuid()) return "owned by uid " + std::to_string(st.st_uid) + ", not this user";
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
  return {};
}

void warn(const std::string& message) {
  static std::mutex mutex;
  static size_t warned = 0;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned++ < 20) std::fprintf(stderr, "[alloy cache] %s\n", message.c_str());
}

// One read into a buffer of the file's size (a cache hit is on the path of
// every first launch in a process). `untrusted` gets why the opened file may
// not be trusted (checked on the descriptor that is read, so a file swapped
// in after the check is not the one read); the content is then not read.
bool read_file(const std::filesystem::path& path, std::string& out, std::string* untrusted = nullptr) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (ok && untrusted) {
    *untrusted = untrusted_reason(st);
    if (!untrusted->empty()) {
      ::close(fd);
      return false;
    }
  }
  if (ok) {
    out.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (ok && done < out.size()) {
      ssize_t n = ::read(fd, out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      ok = n > 0;
      if (ok) done += static_cast<size_t>(n);
    }
  }
  ::close(fd);
  return ok;
}

std::string encode_entry(const std::string& payload) {
  std::string out(kMagic, 8);
  uint64_t size = payload.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((size >> (8 * i)) & 0xff);
  auto sum = digest(payload);
  out.append(reinterpret_cast<const char*>(sum.data()), sum.size());
  out += payload;
  return out;
}

// The payload of a well-formed entry, or false.
bool decode_entry(const std::string& file, std::string& payload) {
  if (file.size() < kHeaderBytes || std::memcmp(file.data(), kMagic, 8) != 0) return false;
  uint64_t size = 0;
  for (int i = 0; i < 8; ++i) size |= static_cast<uint64_t>(static_cast<unsigned char>(file[8 + i])) << (8 * i);
  if (size != file.size() - kHeaderBytes) return false;
  payload.assign(file, kHeaderBytes, std::string::npos);
  auto sum = digest(payload);
  return std::memcmp(sum.data(), file.data() + 16, sum.size()) == 0;
}

// A memory entry that is already built.
std::shared_future<Cache::Bytes> ready_future(Cache::Bytes bytes) {
  std::promise<Cache::Bytes> ready;
  ready.set_value(std::move(bytes));
  return ready.get_future().share();
}

}  // namespace

std::string why_untrusted(const std::filesystem::path& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return "cannot be examined: " + std::string(std::strerror(errno));
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  return untrusted_reason(st);
}

std::filesystem::path make_private_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = (std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / (prefix + "XXXXXX")).string();
  if (!::mkdtemp(pattern.data())) return {};  // mkdtemp makes it 0700
  return pattern;
}

bool write_file_atomically(const std::filesystem::path& path, const std::string& content) {
  static std::atomic<unsigned long> counter{0};
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  std::ostringstream tmp_name;
  tmp_name << ".tmp-" << path.filename().string() << "-" << getpid() << "-"
           << std::hash<std::thread::id>()(std::this_thread::get_id()) << "-" << counter.fetch_add(1);
  std::filesystem::path tmp = path.parent_path() / tmp_name.str();
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  bool ok = done == content.size();
  ok = (::close(fd) == 0) && ok;
  if (ok) ok = ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

namespace {

// `dir`, created mode 0700 if missing, when it may be trusted; else why not.
std::string prepare_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir.parent_path(), ec);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return "cannot be created: " + std::string(std::strerror(errno));
  }
  return why_untrusted(dir);
}

// The user's own cache directory, whatever ALLOY_CACHE_DIR says.
std::filesystem::path user_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "alloy";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "alloy";
  return {};
}

}  // namespace

Cache::Cache(std::filesystem::path dir) : dir_(std::move(dir)) {
  if (dir_.empty()) return;
  std::string why = prepare_dir(dir_);
  if (why.empty() || why.rfind("cannot be created", 0) == 0) return;  // not creatable: stores fail, are ignored
  std::filesystem::path fallback = user_cache_dir();
  if (fallback.empty() || fallback == dir_ || !prepare_dir(fallback).empty()) fallback.clear();
  warn("the cache directory " + dir_.string() + " is " + why + ": nothing in it is loaded or written. Kernels are " +
       (fallback.empty() ? std::string("kept in memory only") : "cached in " + fallback.string() + " instead") +
       "; point ALLOY_CACHE_DIR at a directory of your own (mode 0700).");
  dir_ = fallback;
}

std::filesystem::path Cache::default_dir() {
  if (const char* env = std::getenv("ALLOY_CACHE_DIR")) return env;
  return user_cache_dir();
}

Cache& Cache::global() {
  static Cache cache(default_dir());
  return cache;
}

std::filesystem::path Cache::entry_path(const std::string& key) const { return dir_ / (key + ".bin"); }

std::filesystem::path Cache::side_path(const std::string& key, const std::string& suffix) const {
  return dir_ / (key + suffix);
}

void Cache::clear_memory() {
  std::lock_guard<std::mutex> lock(mutex_);
  memory_.clear();
}

Cache::Stats Cache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

Cache::Bytes Cache::load_entry(const std::string& key) {
  if (dir_.empty()) return nullptr;
  std::string file, payload, untrusted;
  if (!read_file(entry_path(key), file, &untrusted)) {
    if (!untrusted.empty()) {
      warn("not loading " + entry_path(key).string() + ": it is " + untrusted + "; rebuilding it.");
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.untrusted_entries;
    }
    return nullptr;
  }
  if (!decode_entry(file, payload)) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.corrupt_entries;
    return nullptr;
  }
  return std::make_shared<const std::string>(std::move(payload));
}

void Cache::store_entry(const std::string& key, const std::string& payload, const std::vector<SideFile>& side_files) {
  if (dir_.empty()) return;
  // Side files first: whoever finds the entry also finds them.
  for (const auto& f : side_files) write_file_atomically(side_path(key, f.suffix), f.content);
  write_file_atomically(entry_path(key), encode_entry(payload));
}

Cache::Bytes Cache::find(const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = memory_.find(key);
    if (it != memory_.end()) {
      ++stats_.memory_hits;
      return it->second.get();
    }
  }
  Bytes bytes = load_entry(key);
  if (!bytes) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.disk_hits;
  memory_.emplace(key, ready_future(bytes));
  return bytes;
}

void Cache::put(const std::string& key, std::string payload) {
  auto bytes = std::make_shared<const std::string>(std::move(payload));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    memory_[key] = ready_future(bytes);
  }
  store_entry(key, *bytes, {});
}

Cache::Bytes Cache::get_or_build(const std::string& key, const Builder& build) {
  std::promise<Bytes> promise;
  std::shared_future<Bytes> future;
  bool owner = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = memory_.find(key);
    if (it != memory_.end()) {
      ++stats_.memory_hits;
      future = it->second;
    } else {
      future = promise.get_future().share();
      memory_.emplace(key, future);
      owner = true;
    }
  }
  if (!owner) return future.get();  // waits for the build in flight; rethrows its error

  try {
    Bytes bytes = load_entry(key);
    if (bytes) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++stats_.disk_hits;
    } else {
      std::vector<SideFile> side_files;
      bytes = std::make_shared<const std::string>(build(side_files));
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++stats_.builds;
      }
      store_entry(key, *bytes, side_files);
    }
    promise.set_value(bytes);
    return bytes;
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      memory_.erase(key);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
}

}  // namespace alloy::jit
