// Build provenance: SHA-256 of the runner binary (its identity in the database), the source
// revision and dirty state, and what a CMake build tree was configured with.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace k3bench {

// Lower-case hex SHA-256 of a file's bytes (OpenSSL EVP). Throws UserError when unreadable.
std::string sha256_file(const std::string& path);
std::string sha256_text(const std::string& text);

struct SourceState {
  std::string revision = "unknown";  // full commit hash
  std::optional<bool> dirty;         // tracked files modified; nullopt outside a git checkout
};
SourceState source_state(const std::string& root);

struct BuildTreeInfo {
  std::string compiler;          // path and first line of --version
  std::string flags;             // CMAKE_CXX_FLAGS + CMAKE_CXX_FLAGS_<TYPE>
  nlohmann::json cmake_options;  // CMAKE_BUILD_TYPE, CMAKE_TOOLCHAIN_FILE, K3_* from CMakeCache.txt
};
BuildTreeInfo read_build_tree(const std::string& build_dir);

// Runs a command and returns its stdout (empty on failure); for short tool queries only.
std::string capture(const std::string& shell_command);

}  // namespace k3bench
