#include "harness/host/bench/provenance.h"

#include <openssl/evp.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "harness/host/bench/user_error.h"

namespace k3bench {
namespace {

std::string hex(const unsigned char* d, unsigned n) {
  std::string out;
  for (unsigned i = 0; i < n; ++i) out += fmt::format("{:02x}", d[i]);
  return out;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

std::string capture(const std::string& shell_command) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(shell_command.c_str(), "r"), pclose);
  if (!p) return "";
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), p.get())) out.append(buf.data(), n);
  return out;
}

std::string sha256_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError(fmt::format("{}: cannot read (for its SHA-256)", path));
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> md(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(md.get(), EVP_sha256(), nullptr);
  std::array<char, 1 << 16> buf{};
  while (f) {
    f.read(buf.data(), buf.size());
    EVP_DigestUpdate(md.get(), buf.data(), static_cast<std::size_t>(f.gcount()));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_DigestFinal_ex(md.get(), digest, &n);
  return hex(digest, n);
}

std::string sha256_text(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_Digest(text.data(), text.size(), digest, &n, EVP_sha256(), nullptr);
  return hex(digest, n);
}

SourceState source_state(const std::string& root) {
  SourceState s;
  const std::string rev =
      trim(capture(fmt::format("git -C '{}' rev-parse HEAD 2>/dev/null", root)));
  if (rev.empty()) return s;
  s.revision = rev;
  // Tracked files only: untracked scratch files do not change what gets compiled.
  s.dirty = !trim(capture(fmt::format(
                      "git -C '{}' status --porcelain --untracked-files=no 2>/dev/null", root)))
                 .empty();
  return s;
}

BuildTreeInfo read_build_tree(const std::string& build_dir) {
  BuildTreeInfo info;
  info.cmake_options = nlohmann::json::object();
  std::ifstream f(build_dir + "/CMakeCache.txt");
  std::string line, cxx, build_type, flags, flags_type;
  std::map<std::string, std::string> all;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#' || line[0] == '/') continue;
    const auto colon = line.find(':'), eq = line.find('=');
    if (colon == std::string::npos || eq == std::string::npos || colon > eq) continue;
    all[line.substr(0, colon)] = line.substr(eq + 1);
  }
  for (const auto& [k, v] : all) {
    if (k.rfind("K3_", 0) == 0 || k == "CMAKE_BUILD_TYPE" || k == "CMAKE_TOOLCHAIN_FILE" ||
        k == "CMAKE_GENERATOR") {
      info.cmake_options[k] = v;
    }
  }
  cxx = all["CMAKE_CXX_COMPILER"];
  // A toolchain file sets the compiler outside the cache; CMake records it per CMake version.
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(build_dir + "/CMakeFiles", ec)) {
    std::ifstream cc(e.path() / "CMakeCXXCompiler.cmake");
    while (cc && std::getline(cc, line)) {
      const std::string key = "set(CMAKE_CXX_COMPILER \"";
      if (line.rfind(key, 0) == 0 && cxx.empty())
        cxx = line.substr(key.size(), line.size() - key.size() - 2);
    }
  }
  build_type = all["CMAKE_BUILD_TYPE"];
  std::string upper = build_type;
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  info.flags = trim(all["CMAKE_CXX_FLAGS"] + " " + all["CMAKE_CXX_FLAGS_" + upper]);
  const std::string version = capture(fmt::format("'{}' --version 2>/dev/null | head -n1", cxx));
  info.compiler = trim(cxx + " (" + trim(version) + ")");
  return info;
}

}  // namespace k3bench
