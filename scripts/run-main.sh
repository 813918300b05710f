#!/usr/bin/env bash
# The main job: the nightly's quick profile on the built-in local farm (this machine plus
# qemu-user "boards" at VLEN 256 and 1024). Installs what is missing (scripts/setup.sh), builds
# Google Benchmark for riscv64 and the qemu counting plugin once, builds the k3tune CLI, links
# `k3tune` and `k3bench` into ~/.local/bin, then runs
#   k3tune nightly --profile quick
# (build the host, rvv and ime2-emu runners; deploy + probe; bench two Qwen3-0.6B shapes on every
# board; tune on the host (time) and under qemu (instruction counts); write and verify tables;
# the verdict against the previous nightly; the report) and ends with where the report, tables
# and database are. Extra arguments go to `k3tune nightly` (e.g. --resume nightly/<stamp>).
# Exit code: the nightly's (0 ok, 1 a step failed, 3 cells failed, 4 regression).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
bash "$root/scripts/setup.sh"
bash "$root/scripts/build-riscv-deps.sh"
bash "$root/scripts/build-qemu-plugin.sh" >/dev/null
bash "$root/scripts/k3tune" --build
bin="$HOME/.local/bin"
mkdir -p "$bin"
ln -sf "$root/scripts/k3tune" "$bin/k3tune"
ln -sf "$root/scripts/k3bench" "$bin/k3bench"
case ":$PATH:" in
  *":$bin:"*) ;;
  *) echo "run-main: k3tune and k3bench are in $bin; add it to PATH: export PATH=\"$bin:\$PATH\"" ;;
esac
status=0
"$root/scripts/k3tune" nightly --profile quick "$@" || status=$?
echo "run-main: $(( $(date +%s) - start )) s in all (setup, builds, nightly)"
exit $status
