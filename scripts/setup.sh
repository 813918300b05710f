#!/usr/bin/env bash
# Installs, from Debian's archive, every package k3tune needs to build, test and run, and vendors
# the report's JavaScript from the npm registry (see vendor_js below).
# Idempotent: it asks dpkg first and calls apt-get only for what is missing, and npm only when the
# vendored lock file differs, so a second run is silent and takes well under a second.
set -euo pipefail

# Host build and tests.
packages=(
  cmake ninja-build g++ make git pkg-config
  libbenchmark-dev libgtest-dev libgmock-dev
  libfmt-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  libsqlite3-dev libboost-dev libspdlog-dev libssl-dev
  # The tuner: parameter constraints (muParser) and the tuning-table JSON Schema (valijson).
  libmuparser-dev libvalijson-dev
  clang-format ccache jq sqlite3 gawk
  # riscv64 cross builds (RVV layer), run under qemu-user; dpkg-dev for `apt-get source`.
  clang-16 g++-riscv64-linux-gnu qemu-user dpkg-dev
  # The tuning-table fuzzer (scripts/fuzz-table.sh): libFuzzer and clang-16's sanitizer runtimes.
  libfuzzer-16-dev libclang-rt-16-dev
  # The board farm: the OpenSSH client drives boards; the farm tests start their own sshd.
  openssh-client openssh-server
  # A farm scheduled by Slurm ([farm] scheduler = "slurm"): the clients (sbatch, squeue, sinfo,
  # scontrol); the Slurm tests start their own munged, slurmctld and slurmd (tests/support/
  # slurm-cluster.sh), so the packages' services are not needed running.
  slurm-client slurmctld slurmd munge
  # Reports: the browser test opens report.html in headless chromium (fonts for its screenshot).
  chromium fonts-dejavu-core
  # The nightly's text rendered in report.html: cmark-gfm with its tables extension.
  libcmark-gfm-dev libcmark-gfm-extensions-dev
  # The lab around the farm: pdudaemon power-cycles dead boards (the tests run it on loopback
  # with its localcmdline driver); Google Benchmark's compare.py (libbenchmark-tools, which needs
  # scipy) reads the runs `k3tune db export` writes.
  pdudaemon libbenchmark-tools python3-scipy
  # k3tune asks pdudaemon's HTTP listener for a power cycle with curl (harness/host/farm/pdu_client.h).
  curl
)
# Node.js runs npm (vendoring) and the browser test's driver. Debian's nodejs (18) is enough; a
# newer one already on the machine (e.g. from NodeSource, which bundles npm) is used as it is.
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)

# Google Benchmark for riscv64 is built from Debian's source package (scripts/build-riscv-deps.sh),
# which needs deb-src entries. They are derived from the machine's own binary-package sources,
# so the same mirror serves both.
ensure_deb_src() {
  local src=/etc/apt/sources.list.d/k3tune-deb-src.sources
  local src_list=/etc/apt/sources.list.d/k3tune-deb-src.list
  [ -f "$src" ] || [ -f "$src_list" ] && return 1
  grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && return 1
  grep -qs '^deb-src ' /etc/apt/sources.list && return 1
  [ "$(id -u)" -eq 0 ] || { echo "setup.sh: deb-src entries needed (run as root)" >&2; exit 1; }
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    sed -E 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > "$src"
  else
    grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' > "$src_list"
  fi
  return 0
}

root=$(cd "$(dirname "$0")/.." && pwd)

# The report's scripts, pinned with their integrity hashes by reports/js/package-lock.json: Vega
# and Vega-Lite (inlined into every report.html) and playwright-core (drives chromium in the
# report's browser test), installed from the npm registry into build/third_party/js, never
# committed. Reinstalled only when the lock file changed.
vendor_js() {
  local dir="$root/build/third_party/js"
  if cmp -s "$root/reports/js/package-lock.json" "$dir/package-lock.json" &&
     [ -f "$dir/node_modules/vega/build/vega.min.js" ] &&
     [ -f "$dir/node_modules/vega-lite/build/vega-lite.min.js" ] &&
     [ -d "$dir/node_modules/playwright-core" ]; then
    return 0
  fi
  echo "setup.sh: vendoring the report scripts into $dir (npm ci)" >&2
  mkdir -p "$dir"
  cp "$root/reports/js/package.json" "$root/reports/js/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
}

install_packages() {
  missing=()
  for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
      missing+=("$p")
    fi
  done
  added_src=0
  ensure_deb_src && added_src=1
  if [ ${#missing[@]} -eq 0 ]; then
    [ $added_src -eq 1 ] && apt-get update -qq
    return 0
  fi

  if [ "$(id -u)" -ne 0 ]; then
    echo "setup.sh: missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # A fresh machine has no package lists; refresh them once when the install cannot find a package.
  [ $added_src -eq 1 ] && apt-get update -qq
  if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

install_packages
vendor_js
