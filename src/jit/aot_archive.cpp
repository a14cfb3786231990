#include "jit/aot_archive.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_d_stableOutBuffer (image_bytes)
#include <zstd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
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

// The first `count` space-separated fields of `line`; false when it has fewer.
// (std::istringstream per line made opening the archive's 4,700-line index
// take several milliseconds of a cold start.)
bool split_fields(std::string_view line, std::string_view* fields, size_t count) {
  size_t pos = 0;
  for (size_t i = 0; i < count; ++i) {
    while (pos < line.size() && line[pos] == ' ') ++pos;
    if (pos >= line.size()) return false;
    const size_t end = std::min(line.find(' ', pos), line.size());
    fields[i] = line.substr(pos, end - pos);
    pos = end;
  }
  return true;
}

// `text`, all of it a decimal number, into `*n`.
template <class N>
bool parse_number(std::string_view text, N* n) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *n);
  return error == std::errc() && end == text.data() + text.size();
}

// "<word> <n>" -> n, or false.
bool count_line(std::string_view line, std::string_view word, size_t* n) {
  std::string_view f[2];
  return split_fields(line, f, 2) && f[0] == word && parse_number(f[1], n);
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
    std::string_view f[3];
    if (!split_fields(line, f, 3) || !parse_number(f[0], &b.offset) || !parse_number(f[1], &b.compressed) ||
        !parse_number(f[2], &b.size))
      return fail("has a malformed block line");
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
    // <source digest> <sm> <cubin|ptx> <block> <offset> <size> <checksum> <key>
    std::string_view f[7];
    Raw r;
    if (!split_fields(line, f, 7) || !parse_number(f[1], &r.e.sm) || (f[2] != "cubin" && f[2] != "ptx") ||
        !parse_number(f[3], &r.e.block) || !parse_number(f[4], &r.e.offset) || !parse_number(f[5], &r.e.size) ||
        r.e.block >= n_blocks) {
      return fail("has a malformed index line " + std::to_string(i + 1));
    }
    r.digest = std::string(f[0]);
    r.e.checksum = std::string(f[6]);
    const std::string_view kind = f[2];
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

struct AotArchive::Decoded {
  std::unique_ptr<char[]> bytes;  // the block's full size; [0, done) decompressed
  uint64_t size = 0, done = 0;
  ZSTD_DCtx* stream = nullptr;    // until the block is whole (or failed)
  size_t consumed = 0;            // compressed bytes read so far
  bool failed = false;
  ~Decoded() { ZSTD_freeDCtx(stream); }
};

std::optional<std::string> AotArchive::image_bytes(const Entry& e) const {
  std::lock_guard<std::mutex> lock(mutex_);
  // Under the lock throughout: the image is copied out before it is released.
  Decoded* d = nullptr;
  for (size_t i = 0; i < recent_.size(); ++i) {
    if (recent_[i].first == e.block) {
      std::rotate(recent_.begin() + static_cast<std::ptrdiff_t>(i), recent_.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                  recent_.end());
      d = recent_.back().second.get();
      break;
    }
  }
  const Block& b = blocks_[e.block];
  if (!d) {
    if (recent_.size() == kRecentBlocks) recent_.erase(recent_.begin());
    recent_.emplace_back(e.block, std::make_unique<Decoded>());
    d = recent_.back().second.get();
    d->size = b.size;
    d->bytes.reset(new char[b.size]);  // not zeroed: every byte read is decompressed first
    d->stream = ZSTD_createDCtx();
    d->failed = d->stream == nullptr;
    // Decompress straight into the block's buffer, which then serves as the
    // window: without it zstd keeps a window of its own as large as the block.
    // (An experimental parameter of the stable call; a libzstd without it
    // refuses it and decompresses through its own buffer.)
    if (d->stream) ZSTD_DCtx_setParameter(d->stream, ZSTD_d_stableOutBuffer, 1);
  }
  const uint64_t need = e.offset + e.size;  // within the block (checked at open)
  // Compressed input in steps, so that decompression stops soon after `need`.
  constexpr size_t kStep = 64 << 10;
  while (d->done < need && !d->failed) {
    ZSTD_inBuffer in{map_ + images_start_ + b.offset, std::min<size_t>(b.compressed, d->consumed + kStep),
                     d->consumed};
    ZSTD_outBuffer out{d->bytes.get(), d->size, d->done};
    const size_t left = ZSTD_decompressStream(d->stream, &out, &in);
    const bool stuck = in.pos == d->consumed && out.pos == d->done;
    d->consumed = in.pos;
    d->done = out.pos;
    if (ZSTD_isError(left) || (left == 0 && d->done != d->size) ||
        (stuck && (in.pos == b.compressed || out.pos == d->size))) {
      d->failed = true;  // bytes already decompressed stay usable (each image has its checksum)
    } else if (left == 0) {
      ZSTD_freeDCtx(d->stream);
      d->stream = nullptr;
    }
  }
  if (d->done < need) return std::nullopt;
  return std::string(d->bytes.get() + e.offset, e.size);
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
    std::optional<std::string> bytes = image_bytes(*e);
    if (bytes && digest_hex(*bytes) == e->checksum) return AotImage{std::move(*bytes), e->sm, e->ptx};
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
