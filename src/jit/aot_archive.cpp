#include "jit/aot_archive.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "jit/digest.h"

namespace alloy::jit {

namespace {

constexpr std::string_view kMagic = "ALLOY-AOT 2\n";
// Images are grouped into blocks of about this many bytes before compression.
constexpr size_t kBlockBytes = size_t(2) << 20;
// zstd level: 9 compresses 57 MB of cubins in about 2 s to within 20% of 19.
constexpr int kLevel = 9;
// Decompressed blocks kept per archive.
constexpr size_t kRecentBlocks = 8;

// The next line of `text` from `*pos` (without its newline); false at the end.
bool next_line(std::string_view text, size_t* pos, std::string_view* line) {
  if (*pos >= text.size()) return false;
  size_t end = text.find('\n', *pos);
  if (end == std::string_view::npos) return false;
  *line = text.substr(*pos, end - *pos);
  *pos = end + 1;
  return true;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// "<word> <n>" -> n, or false.
bool count_line(std::string_view line, std::string_view word, size_t* n) {
  if (!starts_with(line, std::string(word) + " ")) return false;
  *n = std::strtoull(std::string(line.substr(word.size() + 1)).c_str(), nullptr, 10);
  return true;
}

}  // namespace

AotArchive::~AotArchive() {
  if (map_) munmap(const_cast<char*>(map_), map_size_);
}

std::unique_ptr<AotArchive> AotArchive::open(const std::string& path, std::string_view fingerprint,
                                             std::string* why) {
  auto fail = [&](const std::string& reason) -> std::unique_ptr<AotArchive> {
    if (why) *why = path + ": " + reason;
    return nullptr;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("cannot be opened");
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    ::close(fd);
    return fail("is not a regular, non-empty file");
  }
  void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) return fail("cannot be mapped");
  std::unique_ptr<AotArchive> a(new AotArchive());
  a->map_ = static_cast<const char*>(m);
  a->map_size_ = static_cast<size_t>(st.st_size);
  const std::string_view text(a->map_, a->map_size_);
  if (!starts_with(text, kMagic)) return fail("is not an Alloy kernel archive (or one of another format version)");
  size_t pos = kMagic.size();
  std::string_view line;
  if (!next_line(text, &pos, &line) || !starts_with(line, "fingerprint ")) return fail("has no fingerprint");
  if (line.substr(12) != fingerprint) {
    return fail("was built for other kernel headers or options (fingerprint " + std::string(line.substr(12)) +
                ", this library's " + std::string(fingerprint) + ")");
  }
  size_t n_blocks = 0, n = 0;
  if (!next_line(text, &pos, &line) || !count_line(line, "blocks", &n_blocks)) return fail("has no block count");
  for (size_t i = 0; i < n_blocks; ++i) {
    Block b{};
    if (!next_line(text, &pos, &line)) return fail("is truncated in its block table");
    std::istringstream in{std::string(line)};
    if (!(in >> b.offset >> b.compressed >> b.size)) return fail("has a malformed block line");
    a->blocks_.push_back(b);
  }
  if (!next_line(text, &pos, &line) || !count_line(line, "entries", &n)) return fail("has no entry count");
  struct Raw {
    std::string digest;
    Entry e;
  };
  std::vector<Raw> raw;
  raw.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!next_line(text, &pos, &line)) return fail("is truncated in its index");
    std::istringstream in{std::string(line)};
    Raw r;
    std::string kind;
    if (!(in >> r.digest >> r.e.sm >> kind >> r.e.block >> r.e.offset >> r.e.size >> r.e.checksum) ||
        (kind != "cubin" && kind != "ptx") || r.e.block >= n_blocks) {
      return fail("has a malformed index line " + std::to_string(i + 1));
    }
    const Block& b = a->blocks_[r.e.block];
    if (r.e.offset > b.size || r.e.size > b.size - r.e.offset) {
      return fail("has an index line " + std::to_string(i + 1) + " outside its block");
    }
    r.e.ptx = kind == "ptx";
    raw.push_back(std::move(r));
  }
  if (!next_line(text, &pos, &line) || line != "data") return fail("has no data section");
  a->images_start_ = pos;
  const size_t data_size = a->map_size_ - pos;
  for (const Block& b : a->blocks_) {
    if (b.offset > data_size || b.compressed > data_size - b.offset) return fail("is truncated in its images");
  }
  for (Raw& r : raw) {
    auto& archs = r.e.ptx ? a->ptx_archs_ : a->cubin_archs_;
    if (std::find(archs.begin(), archs.end(), r.e.sm) == archs.end()) archs.push_back(r.e.sm);
    a->by_digest_[r.digest].push_back(std::move(r.e));
  }
  std::sort(a->cubin_archs_.begin(), a->cubin_archs_.end());
  std::sort(a->ptx_archs_.begin(), a->ptx_archs_.end());
  a->count_ = n;
  return a;
}

std::shared_ptr<const std::string> AotArchive::block(uint64_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < recent_.size(); ++i) {
    if (recent_[i].first == index) {
      auto hit = recent_[i];
      recent_.erase(recent_.begin() + static_cast<std::ptrdiff_t>(i));
      recent_.push_back(hit);
      return hit.second;
    }
  }
  const Block& b = blocks_[index];
  auto out = std::make_shared<std::string>(b.size, '\0');
  const size_t got = ZSTD_decompress(out->data(), out->size(), map_ + images_start_ + b.offset, b.compressed);
  if (ZSTD_isError(got) || got != b.size) return nullptr;
  if (recent_.size() == kRecentBlocks) recent_.erase(recent_.begin());
  recent_.emplace_back(index, out);
  return out;
}

std::optional<AotImage> AotArchive::find(std::string_view source_digest, int sm) const {
  auto it = by_digest_.find(std::string(source_digest));
  if (it == by_digest_.end()) return std::nullopt;
  // Preference: exact cubin > same-major older cubin (newest first) > PTX
  // not newer than the device (newest first). An image failing its checksum
  // is passed over for the next choice.
  auto rank = [&](const Entry& e) -> int {
    if (e.sm > sm) return -1;
    if (!e.ptx && e.sm == sm) return 3000;
    if (!e.ptx && e.sm / 10 == sm / 10) return 2000 + e.sm;
    if (e.ptx) return 1000 + e.sm;
    return -1;  // a cubin of an older major version does not run
  };
  std::vector<const Entry*> choices;
  for (const Entry& e : it->second) {
    if (rank(e) >= 0) choices.push_back(&e);
  }
  std::sort(choices.begin(), choices.end(), [&](const Entry* x, const Entry* y) { return rank(*x) > rank(*y); });
  for (const Entry* e : choices) {
    auto b = block(e->block);
    if (!b) continue;
    std::string bytes = b->substr(e->offset, e->size);
    if (digest_hex(bytes) == e->checksum) return AotImage{std::move(bytes), e->sm, e->ptx};
  }
  return std::nullopt;
}

void AotArchiveWriter::add(const std::string& key, const std::string& source_digest, int sm, bool ptx,
                           std::string image) {
  items_.push_back({key, source_digest, sm, ptx, std::move(image)});
}

void AotArchiveWriter::write(const std::string& path, std::string_view fingerprint) const {
  // Blocks in the order the items came (the set's order keeps a family's
  // kernels together, which is what makes the blocks compress).
  std::vector<std::string> compressed;
  std::string blocks_index, entries_index;
  std::string raw;
  uint64_t data_offset = 0;
  auto flush = [&] {
    if (raw.empty()) return;
    std::string z(ZSTD_compressBound(raw.size()), '\0');
    const size_t got = ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), kLevel);
    if (ZSTD_isError(got)) throw std::runtime_error(std::string("[aot] zstd: ") + ZSTD_getErrorName(got));
    z.resize(got);
    blocks_index += std::to_string(data_offset) + " " + std::to_string(z.size()) + " " + std::to_string(raw.size()) +
                    "\n";
    data_offset += z.size();
    compressed.push_back(std::move(z));
    raw.clear();
  };
  for (const Item& it : items_) {
    if (!raw.empty() && raw.size() + it.image.size() > kBlockBytes) flush();
    entries_index += it.source_digest + " " + std::to_string(it.sm) + (it.ptx ? " ptx " : " cubin ") +
                     std::to_string(compressed.size()) + " " + std::to_string(raw.size()) + " " +
                     std::to_string(it.image.size()) + " " + digest_hex(it.image) + " " + it.key + "\n";
    raw += it.image;
  }
  flush();
  std::string index;
  index += kMagic;
  index += "fingerprint " + std::string(fingerprint) + "\n";
  index += "blocks " + std::to_string(compressed.size()) + "\n" + blocks_index;
  index += "entries " + std::to_string(items_.size()) + "\n" + entries_index;
  index += "data\n";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("[aot] cannot write " + tmp);
    out.write(index.data(), static_cast<std::streamsize>(index.size()));
    for (const std::string& z : compressed) out.write(z.data(), static_cast<std::streamsize>(z.size()));
    if (!out) throw std::runtime_error("[aot] writing " + tmp + " failed");
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace alloy::jit
