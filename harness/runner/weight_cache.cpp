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
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/runner/run_settings.h"
#include "k3k/packed_form.h"

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

std::size_t round_up(std::size_t x, std::size_t a) {
  return (x + a - 1) / a * a;
}

// Where the parts of a file sit. Contiguous after the header (read into buffers), or, for a file
// that is mapped and read in place, the header in a page of its own and every part at the next
// 64-byte boundary: views into the mapping are as aligned as the kernels' own buffers.
class PartOffsets {
 public:
  explicit PartOffsets(bool mapped)
      : align_(mapped ? k3k::kBufferAlignment : 1), next_(mapped ? kPage : sizeof(Header)) {}
  std::size_t next(std::size_t bytes) {
    const std::size_t at = round_up(next_, align_);
    next_ = at + bytes;
    return at;
  }
  std::size_t end() const { return next_; }

 private:
  std::size_t align_, next_;
};

std::size_t file_bytes_of(const std::vector<Part>& parts, bool mapped) {
  PartOffsets at(mapped);
  for (const auto& p : parts) at.next(p.bytes);
  return at.end();
}

// False when the file could not be written (a cache that cannot be written is only slower).
bool store_parts(const std::filesystem::path& dir, const std::filesystem::path& file,
                 const Header& h, const std::vector<Part>& parts, bool mapped = false) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return false;
  const auto tmp = dir / fmt::format(".{}.{}.tmp", file.filename().string(), getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(&h), sizeof(h));
    PartOffsets at(mapped);
    std::size_t written = sizeof(h);
    const std::vector<char> zeros(kPage, 0);
    for (const auto& p : parts) {
      const std::size_t offset = at.next(p.bytes);
      for (; written < offset; written += std::min(offset - written, zeros.size()))
        f.write(zeros.data(),
                static_cast<std::streamsize>(std::min(offset - written, zeros.size())));
      f.write(static_cast<const char*>(p.data), static_cast<std::streamsize>(p.bytes));
      written += p.bytes;
    }
    if (!f) {
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

// The two checks a cache file passes before it is used, mapped or read: its size is exactly what
// its shape makes (a file cut short by a full disk is not), and it starts with the header its name
// promises (generator version, layout, shape, seed).
bool has_size(const std::filesystem::path& file, std::size_t bytes) {
  struct stat st {};
  return ::stat(file.c_str(), &st) == 0 && static_cast<std::size_t>(st.st_size) == bytes;
}
bool starts_with(const void* data, const Header& want) {
  return std::memcmp(data, &want, sizeof(want)) == 0;
}

// The whole file mapped read-only, its page tables built now (MAP_POPULATE: in set-up, not in the
// first timed calls), when it has exactly `bytes` bytes and starts with `want`; else null.
std::shared_ptr<const void> map_file(const std::filesystem::path& file, const Header& want,
                                     std::size_t bytes) {
  if (!has_size(file, bytes)) return {};
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return {};
  if (!starts_with(map, want)) {
    ::munmap(map, bytes);
    return {};
  }
  return std::shared_ptr<const void>(
      map, [bytes](const void* p) { ::munmap(const_cast<void*>(p), bytes); });
}

// The whole file read into one buffer of this process (2 MiB aligned and THP-advised, as the
// runner's large buffers are: huge pages where the kernel gives them), under map_file's
// conditions; else null.
std::shared_ptr<const void> read_file(const std::filesystem::path& file, const Header& want,
                                      std::size_t bytes) {
  if (!has_size(file, bytes)) return {};
  auto buffer =
      std::make_shared<k3k::AlignedBuffer<char>>(k3k::AlignedBuffer<char>::for_overwrite(bytes));
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t got = ::read(fd, buffer->data() + done, bytes - done);
    if (got <= 0) break;
    done += static_cast<std::size_t>(got);
  }
  ::close(fd);
  if (done != bytes || !starts_with(buffer->data(), want)) return {};
  return std::shared_ptr<const void>(buffer, buffer->data());
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
  const k3k::W4B64Packed sizes = k3k::unfilled_packing(n, k, {layout, row_tile});
  const RotationLayout at(sizes.codes.size_bytes(), sizes.pairs.size_bytes());
  const std::size_t file_bytes = at.first + static_cast<std::size_t>(copies) * at.stride;
  if (!has_size(file, file_bytes)) {
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
  const std::shared_ptr<const void> owner = map_file(file, h, file_bytes);
  if (!owner) return {};
  // Read-only views: the kernels only read weights.
  char* const map = static_cast<char*>(const_cast<void*>(owner.get()));
  std::vector<k3k::W4B64Packed> out;
  for (std::int64_t c = 0; c < copies; ++c) {
    char* base = map + at.first + static_cast<std::size_t>(c) * at.stride;
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
    k3k::W4B64Packed p = k3k::unfilled_packing(n, k, {layout, row_tile});
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

namespace {

// What a model file is keyed by: the weights' shapes, layouts and rows per tile, and the options.
std::uint64_t model_key(const model::ModelWeights& w, const model::WeightOptions& options) {
  std::uint64_t key = 0xcbf29ce484222325ull;  // FNV-1a over the description and the options
  const std::string text =
      fmt::format("{}|seed {}|hqq {}", w.describe(), options.seed, options.hqq_iterations);
  for (const char ch : text) key = (key ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
  return key;
}

std::vector<Part> parts_of(model::ModelWeights& w) {
  std::vector<Part> parts;
  w.for_each_buffer([&](void* data, std::size_t bytes) { parts.push_back({data, bytes}); });
  return parts;
}

// The weights as views into one image of the model file (made on first use): mapped and read in
// place (weight_load = mmap), as an engine maps its model file, or read whole into one buffer of
// this process (read), as an engine that loads its weights. Filling a buffer per matrix instead
// cost ~1.5 s of set-up per Qwen3-0.6B process on a VM: most matrices are under 2 MiB, so each
// 4 KiB page of ~240 MiB was a page fault, twice (zero-filled, then read). When the file cannot
// be made or loaded, the weights as generated.
model::ModelWeights model_weights_image(const std::filesystem::path& dir,
                                        const k3model::ModelConfig& config,
                                        const model::WeightOptions& options, k3k::KernelPath path,
                                        k3k::WorkerPool& pool) {
  const bool map = run_settings().weight_load == "mmap";
  const auto load = [&](const std::filesystem::path& file, const Header& h, std::size_t bytes) {
    return map ? map_file(file, h, bytes) : read_file(file, h, bytes);
  };
  model::WeightOptions unfilled = options;
  unfilled.unfilled = true;
  model::ModelWeights w = model::make_synthetic_weights(config, unfilled, path, pool);
  const std::uint64_t key = model_key(w, options);
  std::vector<Part> parts = parts_of(w);
  const auto file = dir / fmt::format("model-{:016x}-v{}-image.bin", key, kGeneratorVersion);
  const Header h = header_of(kModelMagic, 1, static_cast<std::int64_t>(parts.size()), 0, key);
  const std::size_t bytes = file_bytes_of(parts, true);
  std::shared_ptr<const void> owner = load(file, h, bytes);
  if (!owner) {
    const BuildTimer building(true);
    model::ModelWeights made = model::make_synthetic_weights(config, options, path, pool);
    if (!store_parts(dir, file, h, parts_of(made), true)) return made;
    owner = load(file, h, bytes);
    if (!owner) return made;
  }
  PartOffsets at(true);
  const char* base = static_cast<const char*>(owner.get());
  w.view_buffers([&](std::size_t n) -> const void* { return base + at.next(n); }, owner);
  return w;
}

}  // namespace

model::ModelWeights cached_model_weights(const k3model::ModelConfig& config,
                                         const model::WeightOptions& options, k3k::KernelPath path,
                                         k3k::WorkerPool& pool) {
  const auto dir = cache_dir();
  if (dir.empty() || options.zero || options.unfilled)
    return model::make_synthetic_weights(config, options, path, pool);
  return model_weights_image(dir, config, options, path, pool);
}

double weight_cache_build_s() {
  return g_build_s;
}

}  // namespace k3runner
