#include "harness/runner/dump.h"

#include <bit>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace k3runner {

static_assert(std::endian::native == std::endian::little, "dumps are written in native order");

void write_dump(const std::string& dir, const nlohmann::json& header, const std::vector<DumpArray>& arrays) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("--dump: cannot create directory '" + dir + "': " + ec.message());
  nlohmann::json manifest = header;
  manifest["byte_order"] = "little-endian";
  manifest["arrays"] = nlohmann::json::array();
  for (const auto& a : arrays) {
    const std::string file = a.name + ".bin";
    std::ofstream out(std::filesystem::path(dir) / file, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(a.data), a.bytes);
    if (!out) throw std::runtime_error("--dump: cannot write '" + (std::filesystem::path(dir) / file).string() + "'");
    manifest["arrays"].push_back(
        {{"name", a.name}, {"file", file}, {"dtype", a.dtype}, {"shape", a.shape}, {"layout", a.layout}, {"bytes", a.bytes}});
  }
  std::ofstream m(std::filesystem::path(dir) / "manifest.json", std::ios::trunc);
  m << manifest.dump(2) << "\n";
  if (!m) throw std::runtime_error("--dump: cannot write manifest.json in '" + dir + "'");
}

}  // namespace k3runner
