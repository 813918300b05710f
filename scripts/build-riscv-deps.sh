#!/usr/bin/env bash
# Builds the riscv64 dependencies that Debian does not ship for this host: Google Benchmark from
# Debian's source package. Cached under build/third_party/riscv64; rebuilt only when missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix="$root/build/third_party/riscv64"
[ -f "$prefix/lib/libbenchmark.a" ] && exit 0

work="$root/build/third_party/src"
mkdir -p "$work"
cd "$work"
if ! ls benchmark_*.orig.tar.* >/dev/null 2>&1; then
  apt-get source --download-only benchmark >/dev/null 2>&1 || {
    echo "build-riscv-deps.sh: 'apt-get source benchmark' failed (deb-src entries: run scripts/setup.sh as root)" >&2
    exit 1
  }
fi
rm -rf benchmark-src && mkdir benchmark-src
tar -xf benchmark_*.orig.tar.* -C benchmark-src --strip-components=1
echo "build-riscv-deps.sh: building Google Benchmark for riscv64" >&2
launcher=()
if command -v ccache >/dev/null; then  # as in CMakeLists.txt: reusable across checkouts
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="env;CCACHE_BASEDIR=$work;CCACHE_NOHASHDIR=1;ccache")
fi
cmake -S benchmark-src -B benchmark-build -G Ninja -DCMAKE_BUILD_TYPE=Release -Wno-dev \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/riscv64-linux-clang.cmake" -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DBENCHMARK_ENABLE_TESTING=OFF -DBENCHMARK_ENABLE_GTEST_TESTS=OFF -DBENCHMARK_ENABLE_WERROR=OFF \
  -DBENCHMARK_ENABLE_LTO=OFF "${launcher[@]}" >"$work/benchmark-configure.log" 2>&1 || { cat "$work/benchmark-configure.log" >&2; exit 1; }
cmake --build benchmark-build -j"$(nproc)" >/dev/null
cmake --install benchmark-build >/dev/null
