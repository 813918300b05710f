// The build variants, read from the one table that defines them: CMakePresets.json at the source
// root. `k3tune build --variant V` configures preset V (`cmake --preset V`), scripts/test.sh its
// test trees (the presets named test*), `k3tune count` finds its default runners there, and every
// runner path in a build tree is spelled by runner_binary(). Presets of kind "runner" (vendor
// field k3tune.kind) are the variants `k3tune build` and targets name.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace k3targets {

struct BuildPreset {
  std::string name;
  std::string description;
  std::string binary_dir;  // absolute, ${sourceDir} and ${presetName} expanded
  std::string kind;        // "runner" | "test" | "" (vendor field k3tune.kind)
  std::string count_path;  // the kernel path `k3tune count` counts with this tree by default
  std::string toolchain_file;
  std::map<std::string, std::string> cache;  // inherited variables resolved
};

struct PresetError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Every visible preset of <root>/CMakePresets.json, in file order, inheritance resolved. Throws
// PresetError naming the file and the preset when the table is unreadable or inconsistent.
std::vector<BuildPreset> load_build_presets(const std::string& root);

// The preset called `name`; PresetError listing the known names when there is none.
BuildPreset find_build_preset(const std::string& root, const std::string& name);

// Names of the presets of kind "runner": the variants of `k3tune build --variant`.
std::vector<std::string> runner_variants(const std::string& root);

// The k3bench binary inside a build tree.
std::string runner_binary(const std::string& binary_dir);

// The runner of variant `variant` (the runner preset's tree).
std::string variant_runner(const std::string& root, const std::string& variant);

}  // namespace k3targets
