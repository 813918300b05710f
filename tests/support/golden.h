// Golden output hashes: every op's output bytes on seeded inputs, hashed (FNV-1a 64) and compared
// with the committed value for this build's configuration (architecture, layer, vlenb), so that a
// change which alters a single output bit on any layer fails.
//
// Data file: tests/data/golden_outputs.txt, one `<config> <case> <hash>` per line, '#' comments.
// Regenerate (only when an output is meant to change): run the test binary with
//   K3_GOLDEN_WRITE=<path of the data file>
// in every tree that runs it (host; riscv64 under qemu-user at each VLEN); each run replaces the
// lines of the configurations it ran and keeps the others.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace k3test::golden {

// FNV-1a 64 over raw bytes; `h` chains several buffers into one hash.
std::uint64_t fnv1a(const void* data, std::size_t bytes, std::uint64_t h = 0xcbf29ce484222325ull);

// "<arch>-<layer>-vlenb<N>", e.g. "riscv64-rvv-vlenb128" or "x86_64-generic-vlenb0".
std::string config(const char* layer);

// Compares hash with the committed value of (config, case) (gtest failure when absent or
// different), or records it when K3_GOLDEN_WRITE is set.
void check(const std::string& config, const std::string& name, std::uint64_t hash);

}  // namespace k3test::golden
