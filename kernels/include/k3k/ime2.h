// The IME2 layer (SpacemiT K3 A100: RVV 1.0 at VLEN 1024 + the IME2 matrix extension). Present
// only in builds with K3_ENABLE_IME2 (macro K3_HAVE_IME2); with K3_IME2_EMULATION each IME2
// instruction runs as a bit-exact software model (macro K3_IME2_EMULATED), for qemu-user and tests.
// Only the W4B64 Linear microkernels use IME2; for every other op the ime2 path runs the RVV
// microkernel. The Linear ops themselves are the dispatched ones of k3k/linear.h
// (KernelPath::kIme2). Layouts, encodings and the open points of the ISA this layer relies on:
// kernels/ime2/README.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "k3k/w4b64.h"

namespace k3k::ime2 {

inline constexpr int kRequiredVlenb = 128;  // the IME2 tile shapes are defined for VLEN 1024

// True when this binary models IME2 instructions in software instead of executing them.
bool emulated();

// marchid of the SpacemiT A100 core (the only K3 core with IME2; X100 is 0x8000000058000002).
inline constexpr std::uint64_t kA100Marchid = 0x8000000041000002ull;
// Environment variable that replaces the /proc/cpuinfo marchid (qemu-user shows the host's
// cpuinfo): K3_IME2_ASSUME_MARCHID=0x8000000041000002 lets emulation runs pass the CPU gate.
inline constexpr const char* kMarchidOverrideEnv = "K3_IME2_ASSUME_MARCHID";

// Emulation builds: IME2 instructions executed (as software models) since process start or the
// last reset, per kind ({"vmadotu i4", n}; kinds never executed are left out), process-wide and
// exact once worker threads are joined. Real builds: always empty (the silicon is not counted).
struct InstructionCount {
  std::string instruction;
  std::uint64_t count = 0;
};
std::vector<InstructionCount> emulated_instruction_counts();
// Emulation builds: instructions the call sites spent calling the model (one `call` per emulated
// instruction: 1 or 2 instructions), counted by qemu but absent from a real build. 0 otherwise.
std::uint64_t emulation_call_instructions();
void reset_emulated_instruction_counts();  // both counters
// Address range [begin, end) of the emulation's code (the software model): instruction counters
// skip it so that only the instructions a real build also runs are counted. {0, 0} when absent.
struct CodeRange {
  std::uintptr_t begin = 0, end = 0;
};
CodeRange emulation_code_range();

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
  std::string instruction;  // e.g. "vmadotu i4"
  std::string name;         // the inputs, e.g. "lane-layout"
  std::string settles;      // the reference's open points this case decides on silicon ("AMBIG-1")
  bool relied_on = true;    // the kernels depend on this behaviour (false: informational probe)
  bool pass = false;        // every output lane equals the model's
  int first_mismatch = -1;  // lane index (C lane p = 8m + n), -1 when all match
  std::int64_t got = 0, want = 0;  // values at first_mismatch
};
// Runs every case; requires unusable_because() == nullopt. In emulation builds the instruction IS
// the model, so this checks the operand plumbing only (callers must say "emulated").
std::vector<SelftestCase> selftest();

// Repacks weights from the kRowTile32 layout into the IME2 operand order (layout kIme2): same
// sizes, same pairs, each 1024-byte (row tile, block) unit permuted. Throws
// std::invalid_argument if `w` is not kRowTile32. Portable (no vector code).
W4B64Packed pack_w4b64(const W4B64Packed& w);
// The inverse: kIme2 -> kRowTile32 (throws std::invalid_argument for another layout).
W4B64Packed unpack_w4b64(const W4B64Packed& w);

// Block scales the `.hp` decode (Accumulation::kFp16BlockScale, k3k/linear.h) accepts: 0 or a
// magnitude in [kHpScaleMin, kHpScaleMax] (fp16-normal, no overflow).
inline constexpr float kHpScaleMin = 0x1p-14f, kHpScaleMax = 0.5f;

}  // namespace k3k::ime2
