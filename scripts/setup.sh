#!/usr/bin/env bash
# Installs, from Debian's archive, every package k3tune needs to build, test and run.
# Idempotent: it asks dpkg first and calls apt-get only for what is missing, so a second run is
# silent and takes well under a second.
set -euo pipefail

# Host build and tests.
packages=(
  cmake ninja-build g++ make git pkg-config
  libbenchmark-dev libgtest-dev libgmock-dev
  libfmt-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  libsqlite3-dev libboost-dev libspdlog-dev
  clang-format
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "setup.sh: missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "setup.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists; refresh them once when the install cannot find a package.
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
