#include "harness/runner/weight_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace k3runner {
namespace {

// Bump when the generator, the quantiser or a packing changes what a seed produces.
constexpr std::uint32_t kGeneratorVersion = 2;  // 2: fp16 (beta, scale) pairs
constexpr char kStorageMagic[8] = {'K', '3', 'W', '4', 'B', '6', '4', '\0'};
constexpr char kPackedMagic[8] = {'K', '3', 'W', '4', 'P', 'K', 'D', '\0'};
constexpr char kRotationMagic[8] = {'K', '3', 'W', '4', 'R', 'O', 'T', '\0'};
constexpr char kModelMagic[8] = {'K', '3', 'W', '4', 'M', 'D', 'L', '\0'};
constexpr std::size_t kPage = 4096;

struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t layout;  // storage form: 0; packed: W4B64Layout + 1, plus rows per tile << 8
  std::int64_t n, k;
  std::uint64_t seed;
};

// The packed form's id in file names and headers: layout + 1, and its rows per tile.
std::uint32_t layout_id_of(k3k::W4B64Layout layout, int row_tile) {
  return (static_cast<std::uint32_t>(layout) + 1) | static_cast<std::uint32_t>(row_tile) << 8;
}

std::filesystem::path cache_dir() {
  if (const char* d = std::getenv("K3BENCH_CACHE_DIR")) {
    if (std::string(d) == "off") return {};
    return d;
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "k3bench";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::filesystem::path(h) / ".cache" / "k3bench";
  return {};
}

// A byte range to copy into a buffer.
struct Part {
  void* data;
  std::size_t bytes;
};

// The file's bytes after the header, in order, into `parts`. False (and nothing usable) when the
// file is absent, short, long, or its header differs.
bool load_parts(const std::filesystem::path& file, const Header& want,
                const std::vector<Part>& parts) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::size_t payload = 0;
  for (const auto& p : parts) payload += p.bytes;
  struct stat st {};
  bool ok =
      ::fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) == sizeof(Header) + payload;
  Header h{};
  ok = ok && ::read(fd, &h, sizeof(h)) == static_cast<ssize_t>(sizeof(h)) &&
       std::memcmp(&h, &want, sizeof(h)) == 0;
  for (const auto& p : parts) {
    std::size_t done = 0;
    while (ok && done < p.bytes) {
      const ssize_t got = ::read(fd, static_cast<char*>(p.data) + done, p.bytes - done);
      ok = got > 0;
      if (ok) done += static_cast<std::size_t>(got);
    }
  }
  ::close(fd);
  return ok;
}

void store_parts(const std::filesystem::path& dir, const std::filesystem::path& file,
                 const Header& h, const std::vector<Part>& parts) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return;  // a cache that cannot be written is only slower
  const auto tmp = dir / fmt::format(".{}.{}.tmp", file.filename().string(), getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(&h), sizeof(h));
    for (const auto& p : parts)
      f.write(static_cast<const char*>(p.data), static_cast<std::streamsize>(p.bytes));
    if (!f) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

Header header_of(const char (&magic)[8], std::uint32_t layout, std::int64_t n, std::int64_t k,
                 std::uint64_t seed) {
  Header h{};
  std::memcpy(h.magic, magic, 8);
  h.version = kGeneratorVersion;
  h.layout = layout;
  h.n = n;
  h.k = k;
  h.seed = seed;
  return h;
}

std::size_t round_up(std::size_t x, std::size_t a) {
  return (x + a - 1) / a * a;
}

// A packing of (n, k) in `layout` with its arrays allocated at the sizes that layout gives them,
// not yet filled: what the cache's files are read into, and what says where a rotation file's
// copies sit without reading any of them.
k3k::W4B64Packed unfilled_packing(std::int64_t n, std::int64_t k, k3k::W4B64Layout layout,
                                  int row_tile) {
  k3k::W4B64Packed p;
  p.n = n;
  p.k = k;
  p.layout = layout;
  p.row_tile = row_tile;
  const auto tiles = static_cast<std::size_t>(p.row_tiles());
  p.codes = k3k::AlignedBuffer<std::uint8_t>::for_overwrite(
      tiles * static_cast<std::size_t>(p.tile_code_bytes()));
  p.pairs = k3k::AlignedBuffer<k3k::fp16_t>::for_overwrite(
      2 * tiles * static_cast<std::size_t>(p.tile_pairs()));
  return p;
}

// Where one copy's arrays sit inside the rotation file (each 64-byte aligned, copies page aligned).
struct RotationLayout {
  std::size_t codes_bytes, pair_bytes;
  std::size_t pair_off, stride, first;
  RotationLayout(std::size_t codes, std::size_t pairs)
      : codes_bytes(codes),
        pair_bytes(pairs),
        pair_off(round_up(codes_bytes, k3k::kBufferAlignment)),
        stride(round_up(pair_off + pair_bytes, kPage)),
        first(kPage) {}
};

std::vector<Part> parts_of(k3k::W4B64Storage& s) {
  return {{s.codes.data(), s.codes.size_bytes()}, {s.alpha.data(), s.alpha.size_bytes()}};
}
// Time spent on cache misses, for weight_cache_build_s(). Nested misses (a packed miss builds the
// storage form too) are counted once: only the outermost build adds its time. Without a cache
// directory every process generates its weights: that is per-process set-up, not a cold cache,
// and is not counted here.
double g_build_s = 0;
int g_build_depth = 0;
class BuildTimer {
 public:
  explicit BuildTimer(bool filling_the_cache)
      : counted_(filling_the_cache), start_(std::chrono::steady_clock::now()) {
    if (counted_) ++g_build_depth;
  }
  ~BuildTimer() {
    if (counted_ && --g_build_depth == 0)
      g_build_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  BuildTimer(const BuildTimer&) = delete;
  BuildTimer& operator=(const BuildTimer&) = delete;

 private:
  bool counted_;
  std::chrono::steady_clock::time_point start_;
};

std::vector<Part> parts_of(k3k::W4B64Packed& p) {
  return {{p.codes.data(), p.codes.size_bytes()}, {p.pairs.data(), p.pairs.size_bytes()}};
}

}  // namespace

std::vector<k3k::W4B64Packed> synthetic_w4b64_rotation(
    std::int64_t n, std::int64_t k, std::uint64_t seed, k3k::W4B64Layout layout, int row_tile,
    std::int64_t copies, const std::function<k3k::W4B64Packed(k3k::W4B64Packed)>& repack) {
  const auto dir = cache_dir();
  if (dir.empty() || copies < 1) return {};
  const auto layout_id = layout_id_of(layout, row_tile);
  const auto file = dir / fmt::format("w4b64-rotation{}-v{}-{}x{}-seed{}-copies{}.bin", layout_id,
                                      kGeneratorVersion, n, k, seed, copies);
  const Header h = header_of(kRotationMagic, layout_id, n, k, seed);
  // The sizes come from the shape: a file already there is mapped without reading the packed
  // weights (a megabyte or more per process, most of a warm decode process's set-up).
  const k3k::W4B64Packed sizes = unfilled_packing(n, k, layout, row_tile);
  const RotationLayout at(sizes.codes.size_bytes(), sizes.pairs.size_bytes());
  const std::size_t file_bytes = at.first + static_cast<std::size_t>(copies) * at.stride;
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || static_cast<std::size_t>(st.st_size) != file_bytes) {
    const BuildTimer building(true);
    const k3k::W4B64Packed one = synthetic_w4b64_packed(n, k, seed, layout, row_tile, repack);
    if (one.codes.size_bytes() != at.codes_bytes || one.pairs.size_bytes() != at.pair_bytes)
      throw std::logic_error("weight cache: the packing's sizes are not those of its layout");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const auto tmp = dir / fmt::format(".{}.{}.tmp", file.filename().string(), getpid());
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      std::vector<char> header(at.first, 0);
      std::memcpy(header.data(), &h, sizeof(h));
      f.write(header.data(), static_cast<std::streamsize>(header.size()));
      std::vector<char> copy(at.stride, 0);
      std::memcpy(copy.data(), one.codes.data(), at.codes_bytes);
      std::memcpy(copy.data() + at.pair_off, one.pairs.data(), at.pair_bytes);
      for (std::int64_t c = 0; c < copies; ++c)
        f.write(copy.data(), static_cast<std::streamsize>(copy.size()));
      if (!f) {
        std::filesystem::remove(tmp, ec);
        return {};
      }
    }
    std::filesystem::rename(tmp, file, ec);
    if (ec) {
      std::filesystem::remove(tmp, ec);
      return {};
    }
  }
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  // MAP_POPULATE: the page tables are built here, in set-up, not by the first timed calls.
  void* map = ::mmap(nullptr, file_bytes, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return {};
  if (std::memcmp(map, &h, sizeof(h)) != 0) {
    ::munmap(map, file_bytes);
    return {};
  }
  const std::shared_ptr<const void> owner(
      map, [file_bytes](const void* p) { ::munmap(const_cast<void*>(p), file_bytes); });
  std::vector<k3k::W4B64Packed> out;
  for (std::int64_t c = 0; c < copies; ++c) {
    auto* base = static_cast<char*>(map) + at.first + static_cast<std::size_t>(c) * at.stride;
    k3k::W4B64Packed p;
    p.n = n;
    p.k = k;
    p.layout = layout;
    p.row_tile = row_tile;
    p.codes = k3k::AlignedBuffer<std::uint8_t>::view_of(reinterpret_cast<std::uint8_t*>(base),
                                                        sizes.codes.size(), owner);
    p.pairs = k3k::AlignedBuffer<k3k::fp16_t>::view_of(
        reinterpret_cast<k3k::fp16_t*>(base + at.pair_off), sizes.pairs.size(), owner);
    out.push_back(std::move(p));
  }
  return out;
}

k3k::W4B64Storage synthetic_w4b64(std::int64_t n, std::int64_t k, std::uint64_t seed) {
  const auto dir = cache_dir();
  const auto file = dir / fmt::format("w4b64-v{}-{}x{}-seed{}.bin", kGeneratorVersion, n, k, seed);
  const Header h = header_of(kStorageMagic, 0, n, k, seed);
  k3k::W4B64Storage s;
  s.n = n;
  s.k = k;
  s.codes = k3k::AlignedBuffer<std::uint8_t>(static_cast<std::size_t>(n * k / 2));
  s.alpha = k3k::AlignedBuffer<float>(static_cast<std::size_t>(n * (k / 64) * 2));
  if (!dir.empty() && load_parts(file, h, parts_of(s))) return s;
  const BuildTimer building(!dir.empty());
  const auto w = k3k::make_synthetic_weights(n, k, {.seed = seed});
  s = k3k::quantize_w4b64_hqq(w.span(), n, k);
  if (!dir.empty()) store_parts(dir, file, h, parts_of(s));
  return s;
}

k3k::W4B64Packed synthetic_w4b64_packed(
    std::int64_t n, std::int64_t k, std::uint64_t seed, k3k::W4B64Layout layout, int row_tile,
    const std::function<k3k::W4B64Packed(k3k::W4B64Packed)>& repack) {
  const auto dir = cache_dir();
  const auto layout_id = layout_id_of(layout, row_tile);
  const auto file = dir / fmt::format("w4b64-packed{}-v{}-{}x{}-seed{}.bin", layout_id,
                                      kGeneratorVersion, n, k, seed);
  const Header h = header_of(kPackedMagic, layout_id, n, k, seed);
  if (!dir.empty()) {
    // Allocated at the layout's sizes and filled from the file in one pass (no zero-fill first).
    k3k::W4B64Packed p = unfilled_packing(n, k, layout, row_tile);
    if (load_parts(file, h, parts_of(p))) return p;
  }
  const BuildTimer building(!dir.empty());
  k3k::W4B64Packed p = repack(k3k::pack_w4b64_generic(synthetic_w4b64(n, k, seed)));
  if (p.layout != layout || p.row_tile != row_tile) {
    throw std::logic_error(
        "weight cache: the repacking produced another layout than the one cached");
  }
  if (!dir.empty()) store_parts(dir, file, h, parts_of(p));
  return p;
}

model::ModelWeights cached_model_weights(const k3model::ModelConfig& config,
                                         const model::WeightOptions& options, k3k::KernelPath path,
                                         k3k::WorkerPool& pool) {
  const auto dir = cache_dir();
  if (dir.empty() || options.zero)
    return model::make_synthetic_weights(config, options, path, pool);
  // The shapes, layouts and rows per tile, from weights of the same shapes (zero: no generation).
  model::WeightOptions zero = options;
  zero.zero = true;
  model::ModelWeights w = model::make_synthetic_weights(config, zero, path, pool);
  std::uint64_t key = 0xcbf29ce484222325ull;  // FNV-1a over the description and the options
  const std::string text =
      fmt::format("{}|seed {}|hqq {}", w.describe(), options.seed, options.hqq_iterations);
  for (const char ch : text) key = (key ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
  std::vector<Part> parts;
  w.for_each_buffer([&](void* data, std::size_t bytes) { parts.push_back({data, bytes}); });
  const auto file = dir / fmt::format("model-{:016x}-v{}.bin", key, kGeneratorVersion);
  const Header h = header_of(kModelMagic, 0, static_cast<std::int64_t>(parts.size()), 0, key);
  if (load_parts(file, h, parts)) return w;
  const BuildTimer building(true);
  w = model::make_synthetic_weights(config, options, path, pool);
  parts.clear();
  w.for_each_buffer([&](void* data, std::size_t bytes) { parts.push_back({data, bytes}); });
  store_parts(dir, file, h, parts);
  return w;
}

double weight_cache_build_s() {
  return g_build_s;
}

}  // namespace k3runner
