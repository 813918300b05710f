// Tables for the tuning-table tests: a board fingerprint, an entry, a valid table to break one
// field at a time, and the loader's parse with this test board.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "k3k/tuning.h"

namespace k3k::tuning_test {

using nlohmann::json;

inline BoardFingerprint test_board() {
  BoardFingerprint b;
  b.cpus = 2;
  b.tcm_backend = "emulated";
  b.tcm_blocks = 8;
  b.tcm_block_bytes = 393216;
  return b;
}

inline json fingerprint_of(const BoardFingerprint& b) {
  return {
      {"marchid", b.marchid ? json(*b.marchid) : json(nullptr)},
      {"vlen", b.vlen_bits ? json(*b.vlen_bits) : json(nullptr)},
      {"cpu_model", "test"},
      {"cpus", b.cpus},
      {"tcm",
       {{"backend", b.tcm_backend}, {"blocks", b.tcm_blocks}, {"block_bytes", b.tcm_block_bytes}}}};
}

inline json entry(const std::string& op, const std::string& path, json cls, json params) {
  cls["path"] = path;
  std::string id = op + "/" + path;
  for (const auto& [k, v] : cls.items())
    if (k != "path") id += "/" + k + v.dump();
  return {{"id", id},
          {"op", op},
          {"class", cls},
          {"params", params},
          {"evidence", {{"mean", 1.0}, {"processes", 8}}}};
}

inline json valid_table(const BoardFingerprint& b = test_board(), const std::string& path = "generic") {
  return {{"schema", std::string(rules::kTuningTableSchema)},
          {"kernel_abi", kKernelAbiVersion},
          {"created_at", "2026-11-30T23:45:43Z"},
          {"source", {{"objective", "time"}, {"proxy", false}, {"sessions", json::array()}}},
          {"board", {{"fingerprint", fingerprint_of(b)}}},
          {"gates",
           {{"tcm_decode", {{"use", "threshold"}, {"k_min", 4096}, {"b_min_bytes", 1 << 20}}}}},
          {"entries",
           {entry("linear_decode", path, {{"k", 256}, {"n", 96}}, {{"tile_n", 32}, {"workers", 1}}),
            entry("linear_prefill", path, {{"m_bucket", 8}, {"k", 256}, {"n", 96}},
                  {{"tile_n", 64}})}}};
}

inline std::unique_ptr<TuningTable> parse(const json& t, std::string& problem,
                                   const BoardFingerprint& b = test_board()) {
  return TuningTable::parse(t.dump(), b, problem);
}

}  // namespace k3k::tuning_test
