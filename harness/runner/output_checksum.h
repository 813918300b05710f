// A deterministic checksum of a case's output, so two builds can be checked for bit-identical
// results (the reports flag a changed checksum where an op's outputs must not change): FNV-1a 64
// over the bytes of the case's output arrays (OpCase::output_names, in that order), taken right
// after the accuracy check computed them. The same hash as the kernel tests' golden outputs.
#pragma once

#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "harness/runner/op_case.h"

namespace k3runner {

// FNV-1a 64 over raw bytes; `h` chains several buffers into one hash.
std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t h = 0xcbf29ce484222325ull);

// {"fnv1a64": "<16 hex digits>", "arrays": [names], "bytes": N}, or null when the case has none
// of its output arrays (probes without outputs, ops whose result stays inside the kernel state).
nlohmann::json output_checksum(const OpCase& c);

}  // namespace k3runner
