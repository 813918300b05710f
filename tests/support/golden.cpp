#include "support/golden.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "k3k/dispatch.h"

namespace k3test::golden {

namespace {

using Key = std::pair<std::string, std::string>;  // (config, case)

std::map<Key, std::string> read_file(const std::string& path) {
  std::map<Key, std::string> values;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string config, name, hash;
    if (fields >> config >> name >> hash) values[{config, name}] = hash;
  }
  return values;
}

const char* write_path() {
  return std::getenv("K3_GOLDEN_WRITE");
}

// Values computed in this run (write mode), merged into the file when the run ends.
std::map<Key, std::string>& recorded() {
  static std::map<Key, std::string> r;
  return r;
}

class Writer : public ::testing::Environment {
 public:
  void TearDown() override {
    if (write_path() == nullptr || recorded().empty()) return;
    std::map<Key, std::string> all = read_file(write_path());
    for (const auto& [key, hash] : recorded()) all[key] = hash;
    std::ofstream out(write_path(), std::ios::trunc);
    out << "# Golden output hashes (FNV-1a 64 of the output bytes): <arch>-<layer>-vlenb<N> <case> "
           "<hash>.\n# Written by the GoldenOutputs tests with K3_GOLDEN_WRITE=<this file>; see "
           "tests/support/golden.h.\n";
    for (const auto& [key, hash] : all)
      out << key.first << ' ' << key.second << ' ' << hash << '\n';
    std::printf("golden: wrote %zu values (%zu from this run) to %s\n", all.size(),
                recorded().size(), write_path());
  }
};

[[maybe_unused]] const ::testing::Environment* const kWriter =
    ::testing::AddGlobalTestEnvironment(new Writer);

std::string hex(std::uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

std::uint64_t fnv1a(const void* data, std::size_t bytes, std::uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string config(const char* layer) {
#if defined(__riscv)
  const char* arch = "riscv64";
#elif defined(__x86_64__)
  const char* arch = "x86_64";
#elif defined(__aarch64__)
  const char* arch = "aarch64";
#else
  const char* arch = "other";
#endif
  return std::string(arch) + "-" + layer + "-vlenb" + std::to_string(k3k::cpu_features().vlenb);
}

void check(const std::string& config, const std::string& name, std::uint64_t hash) {
  if (write_path() != nullptr) {
    recorded()[{config, name}] = hex(hash);
    return;
  }
  static const std::map<Key, std::string> committed = read_file(K3_GOLDEN_DATA);
  const auto it = committed.find({config, name});
  if (it == committed.end()) {
    ADD_FAILURE() << "no golden value for " << config << " " << name << " in " << K3_GOLDEN_DATA
                  << " (regenerate with K3_GOLDEN_WRITE, see tests/support/golden.h)";
    return;
  }
  EXPECT_EQ(it->second, hex(hash)) << config << " " << name << ": output bytes changed";
}

}  // namespace k3test::golden
