#include "weight_cache.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

namespace k3bench {
namespace {

// Bump when the generator or the quantiser changes what a seed produces.
constexpr std::uint32_t kGeneratorVersion = 1;
constexpr char kMagic[8] = {'K', '3', 'W', '4', 'B', '6', '4', '\0'};

struct Header {
  char magic[8];
  std::uint32_t version;
  std::uint32_t reserved;
  std::int64_t n, k;
  std::uint64_t seed;
};

std::filesystem::path cache_dir() {
  if (const char* d = std::getenv("K3BENCH_CACHE_DIR")) {
    if (std::string(d) == "off") return {};
    return d;
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "k3bench";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "k3bench";
  return {};
}

bool load(const std::filesystem::path& file, std::int64_t n, std::int64_t k, std::uint64_t seed,
          k3k::W4B64Storage& out) {
  std::ifstream f(file, std::ios::binary);
  if (!f) return false;
  Header h{};
  f.read(reinterpret_cast<char*>(&h), sizeof(h));
  if (!f || std::memcmp(h.magic, kMagic, 8) != 0 || h.version != kGeneratorVersion || h.n != n || h.k != k ||
      h.seed != seed) {
    return false;
  }
  out.n = n;
  out.k = k;
  out.codes = k3k::AlignedBuffer<std::uint8_t>(static_cast<std::size_t>(n * k / 2));
  out.alpha = k3k::AlignedBuffer<float>(static_cast<std::size_t>(n * (k / 64) * 2));
  f.read(reinterpret_cast<char*>(out.codes.data()), static_cast<std::streamsize>(out.codes.size_bytes()));
  f.read(reinterpret_cast<char*>(out.alpha.data()), static_cast<std::streamsize>(out.alpha.size_bytes()));
  return static_cast<bool>(f) && f.peek() == std::char_traits<char>::eof();
}

void store(const std::filesystem::path& dir, const std::filesystem::path& file, const k3k::W4B64Storage& s,
           std::uint64_t seed) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return;  // a cache that cannot be written is only slower
  const auto tmp = dir / fmt::format(".{}.{}.tmp", file.filename().string(), getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    Header h{};
    std::memcpy(h.magic, kMagic, 8);
    h.version = kGeneratorVersion;
    h.n = s.n;
    h.k = s.k;
    h.seed = seed;
    f.write(reinterpret_cast<const char*>(&h), sizeof(h));
    f.write(reinterpret_cast<const char*>(s.codes.data()), static_cast<std::streamsize>(s.codes.size_bytes()));
    f.write(reinterpret_cast<const char*>(s.alpha.data()), static_cast<std::streamsize>(s.alpha.size_bytes()));
    if (!f) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace

k3k::W4B64Storage synthetic_w4b64(std::int64_t n, std::int64_t k, std::uint64_t seed) {
  const auto dir = cache_dir();
  const auto file = dir / fmt::format("w4b64-v{}-{}x{}-seed{}.bin", kGeneratorVersion, n, k, seed);
  k3k::W4B64Storage s;
  if (!dir.empty() && load(file, n, k, seed, s)) return s;
  const auto w = k3k::make_synthetic_weights(n, k, {.seed = seed});
  s = k3k::quantize_w4b64_hqq(w.span(), n, k);
  if (!dir.empty()) store(dir, file, s, seed);
  return s;
}

}  // namespace k3bench
