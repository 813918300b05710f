#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds the Release tree (kernels, k3bench,
# tests) and an ASan+UBSan tree of the kernel tests, then runs ctest in both.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup.sh"
jobs=$(nproc)

echo "== build: release (build/test)"
cmake -S "$root" -B "$root/build/test" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build/test" -j"$jobs"
echo "== build: asan+ubsan (build/asan)"
cmake -S "$root" -B "$root/build/asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DK3_SANITIZE=ON \
  -DK3_BUILD_RUNNER=OFF >/dev/null
cmake --build "$root/build/asan" -j"$jobs"

status=0
echo "== tests: release"
(cd "$root/build/test" && ctest --output-on-failure -j"$jobs") || status=1
echo "== tests: asan+ubsan (kernel unit tests)"
(cd "$root/build/asan" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs" -L kernels) || status=1
exit $status
