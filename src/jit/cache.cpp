// Disk entry format: "ALLOYCE2" | payload size (8 bytes, little endian) |
// XXH3-128 digest of the payload (16 bytes) | payload. A reader accepts an entry only
// when the size and the checksum match, so a torn write (a crash mid-write, a
// full disk) or a damaged file is rebuilt instead of loaded.
#include "jit/cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "jit/digest.h"

namespace alloy::jit {
namespace {

constexpr char kMagic[8] = {'A', 'L', 'L', 'O', 'Y', 'C', 'E', '2'};
constexpr size_t kHeaderBytes = 8 + 8 + 16;

// One read into a buffer of the file's size (a cache hit is on the path of
// every first launch in a process).
bool read_file(const std::filesystem::path& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0;
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

Cache::Cache(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::filesystem::path Cache::default_dir() {
  if (const char* env = std::getenv("ALLOY_CACHE_DIR")) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "alloy";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "alloy";
  return {};
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
  std::string file, payload;
  if (!read_file(entry_path(key), file)) return nullptr;
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
