// The IME2 layer (SpacemiT K3 A100: RVV 1.0 at VLEN 1024 + the IME2 matrix extension). Present
// only in builds with K3_ENABLE_IME2 (macro K3_HAVE_IME2); with K3_IME2_EMULATION each IME2
// instruction runs as a bit-exact software model (macro K3_IME2_EMULATED), for qemu-user and tests.
// Only the W4B64 Linear kernels use IME2; for every other op the ime2 path of k3k/ops.h runs the
// RVV kernel. Layouts, encodings and the open points of the ISA this layer relies on:
// kernels/ime2/README.md.
#pragma once

#include <optional>
#include <string>

#include "k3k/linear.h"
#include "k3k/quantize.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"

namespace k3k::ime2 {

inline constexpr int kRequiredVlenb = 128;  // the IME2 tile shapes are defined for VLEN 1024

// True when this binary models IME2 instructions in software instead of executing them.
bool emulated();

// nullopt when the IME2 kernels can run on the calling thread's CPU, else why not (no RVV,
// vlenb != 128, or the IME2 probe instruction raised SIGILL). Probed once per process.
std::optional<std::string> unusable_because();

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

}  // namespace k3k::ime2
