// The IME2 layer (SpacemiT K3 A100: RVV 1.0 at VLEN 1024 + the IME2 matrix extension). Present
// only in builds with K3_ENABLE_IME2 (macro K3_HAVE_IME2); with K3_IME2_EMULATION each IME2
// instruction runs as a bit-exact software model (macro K3_IME2_EMULATED), for qemu-user and tests.
// Only the W4B64 Linear kernels use IME2; for every other op the ime2 path of k3k/ops.h runs the
// RVV kernel. Layouts, encodings and the open points of the ISA this layer relies on:
// kernels/ime2/README.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"

namespace k3k::ime2 {

inline constexpr int kRequiredVlenb = 128;  // the IME2 tile shapes are defined for VLEN 1024

// True when this binary models IME2 instructions in software instead of executing them.
bool emulated();

// marchid of the SpacemiT A100 core (the only K3 core with IME2; X100 is 0x8000000058000002).
inline constexpr std::uint64_t kA100Marchid = 0x8000000041000002ull;
// Environment variable that replaces the /proc/cpuinfo marchid (qemu-user shows the host's
// cpuinfo): K3_IME2_ASSUME_MARCHID=0x8000000041000002 lets emulation runs pass the CPU gate.
inline constexpr const char* kMarchidOverrideEnv = "K3_IME2_ASSUME_MARCHID";

// The gate, checked in this order: RVV (hwcap V), marchid = A100 (from /proc/cpuinfo for the
// calling thread's CPU, or the override), vlenb = 128, and in real builds one vmadotu executed
// under a SIGILL handler. Evaluated once per process.
struct Gate {
  std::optional<std::string> refused;  // which check failed and why; nullopt = IME2 usable
  std::string passed;                  // when usable: how the checks passed (names an override)
};
const Gate& gate();

// gate().refused: nullopt when the IME2 kernels can run on the calling thread's CPU.
std::optional<std::string> unusable_because();

// One case of selftest(): an IME2 instruction the kernels use, run on fixed documented inputs
// (kernels/ime2/selftest.cpp) and compared bit for bit with its software model.
struct SelftestCase {
  std::string instruction;   // e.g. "vmadotu i4"
  std::string name;          // the inputs, e.g. "lane-layout"
  std::string settles;       // the reference's open points this case decides on silicon ("AMBIG-1")
  bool relied_on = true;     // the kernels depend on this behaviour (false: informational probe)
  bool pass = false;         // every output lane equals the model's
  int first_mismatch = -1;   // lane index (C lane p = 8m + n), -1 when all match
  std::int64_t got = 0, want = 0;  // values at first_mismatch
};
// Runs every case; requires unusable_because() == nullopt. In emulation builds the instruction IS
// the model, so this checks the operand plumbing only (callers must say "emulated").
std::vector<SelftestCase> selftest();

// Repacks weights from the kRowTile32 layout into the IME2 operand order (layout kIme2): same
// sizes, same scale/beta arrays, each 1024-byte (row tile, block) unit permuted. Throws
// std::invalid_argument if `w` is not kRowTile32. Portable (no vector code).
W4B64Packed pack_w4b64(const W4B64Packed& w);

// Same contracts as k3k::generic (k3k/linear.h); weights in either layout (kIme2 is the fast one,
// kRowTile32 is transposed into IME2 order per block in registers). Integer parts are exact;
// float results are within the Linear reference bound. Require unusable_because() == nullopt.
void linear_prefill_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                          float* out, WorkerPool& pool, const LinearTiling& tiling = {});
void linear_decode_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                         float* out, WorkerPool& pool, const LinearTiling& tiling = {});

// How the decode kernel accumulates a 64-block. kInt32 (what every dispatch path uses): exact
// int32 dot products, the Linear reference bound. kFp16BlockScale: the `.hp` block-scale
// instructions accumulate s * sum x*(q-8) in fp16 per block, then fp32 across blocks; only when
// asked for, with its own looser bound (kernels/ime2/README.md §3.1):
//   |y - Y| <= Linear bound + |sa| * sum_b gamma16_6 * |s_b| * sum_{k in b} (lo_k + 16 |hi_k|) * |q_k - 8|
// with gamma16_6 = 6u / (1 - 6u), u = 2^-10, lo/hi the activation nibbles. Needs kIme2 weights and
// every block scale 0 or in [2^-14, 0.5] (fp16-normal, no overflow); otherwise std::domain_error
// is thrown after the call (outputs unspecified).
enum class Accumulation { kInt32, kFp16BlockScale };
void linear_decode_w4b64(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep,
                         float* out, WorkerPool& pool, const LinearTiling& tiling, Accumulation accumulation);
inline constexpr float kHpScaleMin = 0x1p-14f, kHpScaleMax = 0.5f;

}  // namespace k3k::ime2
