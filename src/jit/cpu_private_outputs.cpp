#include "jit/cpu_private_outputs.h"

#include <alloy/detail/thread_pool.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include <sys/mman.h>
#include <unistd.h>

namespace alloy::jit {
namespace {

// Zeroed blocks kept between launches, at most kCachedBytes in all.
constexpr std::size_t kCachedBytes = std::size_t(1) << 30;
// Elements merged per task.
constexpr std::size_t kMergePiece = std::size_t(1) << 16;
constexpr std::size_t kHugePage = std::size_t(2) << 20;

// A copy's memory comes straight from the kernel (mmap: zero until
// written), starting on a page, and from 2 MB on it is advised onto
// transparent huge pages. A kernel adds into its copy wherever its output
// would take the add, so the copy needs the output's alignment: a calloc'd
// block starts 16 bytes past a cache line, and the seed VJP's 256-byte
// pixels then each span five lines and half its 32-byte vector adds split
// one (measured: its grad about 5% slower). Where the system has huge pages
// they also spare the TLB those scattered adds (not measurable on the
// development machine, whose VM gives none). The launch's own outputs are
// 64-byte aligned and advised huge too (backend/cpu/allocator.cpp).
std::size_t mapped_bytes(std::size_t want) {
  const std::size_t unit = want >= kHugePage ? kHugePage : std::size_t(::sysconf(_SC_PAGESIZE));
  return (std::max<std::size_t>(want, 1) + unit - 1) / unit * unit;
}
void* map_zeroed(std::size_t want) {
  const std::size_t len = mapped_bytes(want);
  const int prot = PROT_READ | PROT_WRITE, flags = MAP_PRIVATE | MAP_ANONYMOUS;
  if (len < kHugePage) {
    void* p = ::mmap(nullptr, len, prot, flags, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  // Over-map by a huge page and trim both ends, so the block starts on one.
  void* raw = ::mmap(nullptr, len + kHugePage, prot, flags, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto begin = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (begin + kHugePage - 1) / kHugePage * kHugePage;
  if (aligned > begin) ::munmap(raw, aligned - begin);
  if (const std::uintptr_t end = begin + len + kHugePage; end > aligned + len)
    ::munmap(reinterpret_cast<void*>(aligned + len), end - (aligned + len));
  ::madvise(reinterpret_cast<void*>(aligned), len, MADV_HUGEPAGE);  // advice only
  return reinterpret_cast<void*>(aligned);
}
void unmap(void* p, std::size_t want) { ::munmap(p, mapped_bytes(want)); }

struct ZeroedCache {
  std::mutex mutex;
  std::vector<std::pair<void*, std::size_t>> blocks;  // (data, capacity), all zero
  std::size_t bytes = 0;

  static ZeroedCache& global() {
    static ZeroedCache* c = new ZeroedCache;  // never destroyed: workers may run at exit
    return *c;
  }

  // The smallest cached block of at least `bytes`, or a new one (the
  // kernel's zero pages, faulted in on first write).
  std::pair<void*, std::size_t> take(std::size_t want) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto best = blocks.end();
      for (auto it = blocks.begin(); it != blocks.end(); ++it)
        if (it->second >= want && (best == blocks.end() || it->second < best->second)) best = it;
      if (best != blocks.end()) {
        auto b = *best;
        blocks.erase(best);
        bytes -= b.second;
        return b;
      }
    }
    void* p = map_zeroed(want);
    if (!p) throw std::bad_alloc();
    return {p, want};
  }

  void give(void* p, std::size_t capacity) {
    std::lock_guard<std::mutex> lock(mutex);
    if (bytes + capacity > kCachedBytes) {
      unmap(p, capacity);
      return;
    }
    blocks.emplace_back(p, capacity);
    bytes += capacity;
  }
};

// out[i] += copy[i], copy[i] = 0 over [begin, end), skipping runs of zeros
// (parts of the copy no add touched are only read).
template <class T, class Add>
void merge_range(T* out, T* copy, std::size_t begin, std::size_t end, Add add) {
  constexpr std::size_t kRun = 16;
  for (std::size_t i = begin; i < end; i += kRun) {
    const std::size_t n = std::min(kRun, end - i);
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    Bits bits = 0;  // any bit set, -0.0f included
    for (std::size_t k = 0; k < n; ++k) bits |= __builtin_bit_cast(Bits, copy[i + k]);
    if (!bits) continue;
    for (std::size_t k = 0; k < n; ++k) {
      out[i + k] = add(out[i + k], copy[i + k]);
      copy[i + k] = T(0);
    }
  }
}

void merge_piece(const PrivateOutput& o, void* out, void* copy, std::size_t begin, std::size_t end) {
  switch (o.kind) {
    case PrivateOutput::Kind::Float32:
      merge_range(static_cast<float*>(out), static_cast<float*>(copy), begin, end,
                  [](float a, float b) { return a + b; });
      break;
    case PrivateOutput::Kind::Int32:  // int and uint: the same wrapping sum
      merge_range(static_cast<uint32_t*>(out), static_cast<uint32_t*>(copy), begin, end,
                  [](uint32_t a, uint32_t b) { return uint32_t(a + b); });
      break;
    case PrivateOutput::Kind::Int64:
      merge_range(static_cast<uint64_t*>(out), static_cast<uint64_t*>(copy), begin, end,
                  [](uint64_t a, uint64_t b) { return uint64_t(a + b); });
      break;
  }
}

}  // namespace

bool worth_private_outputs(const std::vector<PrivateOutput>& outputs, unsigned long long threads,
                           std::size_t workers) {
  if (outputs.empty() || workers < 2) return !outputs.empty();  // one worker: plain adds, no copies
  std::size_t elements = 0, bytes = 0;
  for (const PrivateOutput& o : outputs) {
    elements += o.elements;
    bytes += o.bytes();
  }
  // A copy costs a pass over its outputs at the end (read it, add it in,
  // zero it again); an add it saves is a compare-and-swap loop. Measured on
  // the seed's grid_sample VJP (4 adds a thread, 2 workers; docs/benchmarks.md,
  // 2026-11-29): at 4 output elements a thread copies were faster (1.5-1.7x
  // at 32 MB, up to 1.3x at 512 MB); at 8 and 16 they were 1.3x and 1.05x
  // slower, so the line is drawn at 6. Copies larger than the zeroed cache
  // are page-faulted afresh at every launch.
  return elements <= 6ull * threads && bytes * (workers - 1) <= kCachedBytes;
}

PrivateOutputs::PrivateOutputs(void* const* buffers, std::size_t buffer_count, std::vector<PrivateOutput> outputs,
                               std::size_t slots)
    : own_(buffers), outputs_(std::move(outputs)), tables_(std::max<std::size_t>(slots, 1)),
      copies_(tables_.size()), busy_(tables_.size(), false), used_(tables_.size(), false) {
  for (auto& t : tables_) t.assign(buffers, buffers + buffer_count);
}

PrivateOutputs::~PrivateOutputs() {
  for (std::size_t s = 1; s < copies_.size(); ++s) {
    for (Copy& c : copies_[s]) {
      if (!c.data) continue;
      if (merged_ || !used_[s]) ZeroedCache::global().give(c.data, c.capacity);
      else unmap(c.data, c.capacity);  // a failed launch: its copies are not zero
    }
  }
}

std::size_t PrivateOutputs::acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t s = 0;
  while (s < busy_.size() && busy_[s]) ++s;
  if (s == busy_.size()) {  // more chunks at once than the pool has threads (nested pools): one more slot
    tables_.emplace_back(tables_[0]);
    copies_.emplace_back();
    busy_.push_back(false);
    used_.push_back(false);
  }
  if (s > 0 && copies_[s].empty()) {
    copies_[s].resize(outputs_.size());
    for (std::size_t j = 0; j < outputs_.size(); ++j) {
      auto [data, capacity] = ZeroedCache::global().take(outputs_[j].bytes());
      copies_[s][j] = {data, capacity};
      tables_[s][outputs_[j].buffer] = data;
    }
  }
  busy_[s] = true;
  used_[s] = true;
  return s;
}

void* const* PrivateOutputs::buffers(std::size_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);  // acquire() may be growing tables_
  return tables_[slot].data();
}

void PrivateOutputs::release(std::size_t slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  busy_[slot] = false;
}

void PrivateOutputs::merge(detail::ThreadPool& pool) {
  struct Piece {
    std::size_t output, begin, end;
  };
  std::vector<Piece> pieces;
  for (std::size_t j = 0; j < outputs_.size(); ++j)
    for (std::size_t b = 0; b < outputs_[j].elements; b += kMergePiece)
      pieces.push_back({j, b, std::min(outputs_[j].elements, b + kMergePiece)});
  std::vector<std::size_t> slots;
  for (std::size_t s = 1; s < copies_.size(); ++s)
    if (used_[s] && !copies_[s].empty()) slots.push_back(s);
  if (!slots.empty()) {
    pool.parallel_for(pieces.size(), [&](std::size_t p) {
      const Piece& piece = pieces[p];
      for (std::size_t s : slots)
        merge_piece(outputs_[piece.output], own_[outputs_[piece.output].buffer], copies_[s][piece.output].data,
                    piece.begin, piece.end);
    });
  }
  merged_ = true;
}

}  // namespace alloy::jit
