// --dump: the files alone are enough to reproduce the Linear output outside the tool.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k3bench_process.h"

namespace {

template <typename T>
std::vector<T> read_array(const std::filesystem::path& dir, const nlohmann::json& manifest, const std::string& name) {
  for (const auto& a : manifest["arrays"]) {
    if (a["name"] != name) continue;
    std::ifstream f(dir / a["file"].get<std::string>(), std::ios::binary);
    std::vector<T> v(a["bytes"].get<std::size_t>() / sizeof(T));
    f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
    EXPECT_TRUE(f.good()) << name;
    return v;
  }
  ADD_FAILURE() << "array " << name << " missing from manifest";
  return {};
}

TEST(K3benchDump, LinearPrefillReproducibleFromDumpedFiles) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "k3bench_dump_test";
  std::filesystem::remove_all(dir);
  const int m = 3, n = 40, k = 128;
  auto r = k3test::run_k3bench("--op linear_prefill --shape m=3,n=40,k=128 --params workers=2 --reps 1 "
                               "--min-time 0.001 --json --dump " + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream mf(dir / "manifest.json");
  const auto manifest = nlohmann::json::parse(mf);
  EXPECT_EQ(manifest["op"], "linear_prefill");
  EXPECT_EQ(manifest["byte_order"], "little-endian");

  const auto codes = read_array<std::uint8_t>(dir, manifest, "weight_codes");
  const auto alpha = read_array<float>(dir, manifest, "weight_alpha");
  const auto a = read_array<float>(dir, manifest, "activations");
  const auto qa = read_array<std::int8_t>(dir, manifest, "activation_codes");
  const auto sa = read_array<float>(dir, manifest, "activation_scale");
  const auto bias = read_array<float>(dir, manifest, "bias");
  const auto out = read_array<float>(dir, manifest, "output");
  ASSERT_EQ(codes.size(), std::size_t(n * k / 2));
  ASSERT_EQ(alpha.size(), std::size_t(n * k / 64 * 2));
  ASSERT_EQ(out.size(), std::size_t(m * n));

  // Recompute independently from the documented storage form: first element in the high nibble,
  // alpha = (beta, scale), w = scale * (q - 8) + beta, y = sa * sum(qa * w) + bias.
  double worst = 0.0, worst_quant = 0.0, scale_y = 0.0;
  for (int row = 0; row < m; ++row) {
    for (int col = 0; col < n; ++col) {
      double y = 0.0, y_float = 0.0;
      for (int kk = 0; kk < k; ++kk) {
        const std::uint8_t byte = codes[col * (k / 2) + kk / 2];
        const int q = kk % 2 == 0 ? byte >> 4 : byte & 0x0F;
        const double beta = alpha[(col * (k / 64) + kk / 64) * 2], s = alpha[(col * (k / 64) + kk / 64) * 2 + 1];
        const double w = s * (q - 8) + beta;
        y += double(qa[row * k + kk]) * w;
        y_float += double(a[row * k + kk]) * w;
      }
      y = y * sa[row] + bias[col];
      y_float += bias[col];
      worst = std::max(worst, std::fabs(y - out[row * n + col]));
      worst_quant = std::max(worst_quant, std::fabs(y_float - out[row * n + col]));
      scale_y = std::max(scale_y, std::fabs(y));
    }
  }
  // Same int8 codes: only float32 rounding separates the kernel from this float64 sum.
  EXPECT_LT(worst, 1e-5 * scale_y);
  // Against the float activations the int8 quantisation error (<= 0.5 sa per element) appears.
  EXPECT_LT(worst_quant, 0.05 * scale_y);
  EXPECT_GT(worst_quant, worst);
  std::filesystem::remove_all(dir);
}

}  // namespace

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The on-disk weight cache must be invisible in the results: a cold run, a warm run and a run
// over a damaged cache file dump identical quantised weights and outputs.
TEST(K3benchWeightCache, ColdWarmAndDamagedCacheGiveIdenticalWeights) {
  const auto base = std::filesystem::temp_directory_path() / ("k3bench_cache_test_" + std::to_string(getpid()));
  std::filesystem::remove_all(base);
  const std::string env = "K3BENCH_CACHE_DIR=" + (base / "cache").string();
  const std::string args = "--op linear_decode --shape n=64,k=192 --params copies=1 --reps 1 --min-time 0.001 --json --dump ";
  std::vector<std::string> codes, outputs;
  for (int run = 0; run < 3; ++run) {
    if (run == 2) {  // damage the cached file: truncate it to half
      for (const auto& e : std::filesystem::directory_iterator(base / "cache")) {
        std::filesystem::resize_file(e.path(), std::filesystem::file_size(e.path()) / 2);
      }
    }
    const auto dir = base / ("run" + std::to_string(run));
    auto r = k3test::run_k3bench(args + dir.string(), env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    codes.push_back(read_file(dir / "weight_codes.bin") + read_file(dir / "weight_alpha.bin"));
    outputs.push_back(read_file(dir / "output.bin"));
    if (run == 0) {
      ASSERT_FALSE(std::filesystem::is_empty(base / "cache"));
    }
  }
  EXPECT_FALSE(codes[0].empty());
  EXPECT_EQ(codes[0], codes[1]);
  EXPECT_EQ(codes[0], codes[2]);
  EXPECT_EQ(outputs[0], outputs[1]);
  EXPECT_EQ(outputs[0], outputs[2]);
  std::filesystem::remove_all(base);
}

// A whole model's weights come from one image of the cache file, mapped (--weight-load mmap)
// or read into one buffer (read): the logits of both, of a cold cache (the image made in that
// process), of a damaged image and of no cache at all (weights generated in the process) are
// the same bits.
TEST(K3benchWeightCache, AModelsImageMappedOrReadGivesTheGeneratedWeights) {
  const auto base =
      std::filesystem::temp_directory_path() / ("k3bench_model_cache_" + std::to_string(getpid()));
  std::filesystem::remove_all(base);
  const std::string cache = "K3BENCH_CACHE_DIR=" + (base / "cache").string();
  const std::string args = "--model " + std::string(K3_TEST_MODELS_DIR) +
                           "/tiny-qwen3.5.toml --pp 8 --tg 4 --reps 1 --warmup 0 --json ";
  const auto checksums = [&](const std::string& env, const std::string& load) {
    const auto r = k3test::run_k3bench(args + "--weight-load " + load, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    std::vector<std::string> out;
    for (const auto& t : j["results"]) out.push_back(t["logits_checksum"].dump());
    return out;
  };
  const auto generated = checksums("K3BENCH_CACHE_DIR=off", "read");
  ASSERT_EQ(generated.size(), 2u);
  EXPECT_EQ(checksums(cache, "mmap"), generated) << "cold: the image made in this process";
  std::vector<std::filesystem::path> images;
  for (const auto& e : std::filesystem::directory_iterator(base / "cache"))
    if (e.path().filename().string().ends_with("-image.bin")) images.push_back(e.path());
  ASSERT_EQ(images.size(), 1u);
  EXPECT_GT(std::filesystem::file_size(images[0]), 4096u) << "a header page, then the buffers";
  EXPECT_EQ(checksums(cache, "mmap"), generated) << "mapped";
  EXPECT_EQ(checksums(cache, "read"), generated) << "read into one buffer";
  std::filesystem::resize_file(images[0], std::filesystem::file_size(images[0]) - 64);
  EXPECT_EQ(checksums(cache, "mmap"), generated) << "a damaged image is made again";
  EXPECT_EQ(checksums(cache, "read"), generated);
  std::filesystem::remove_all(base);
}

}  // namespace
