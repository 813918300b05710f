#!/usr/bin/env bash
# Builds the TCG plugin that counts executed guest instructions (scripts/qemu-insn-count/insn_count.c)
# against qemu-plugin.h from Debian's qemu source package (the header is not in any binary package).
# Cached at build/third_party/qemu-plugin/libinsn_count.so; rebuilt only when missing or older than
# its source. Prints the plugin's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
third="$root/build/third_party"
plugin="$third/qemu-plugin/libinsn_count.so"
source="$root/scripts/qemu-insn-count/insn_count.c"
if [ ! -f "$plugin" ] || [ "$source" -nt "$plugin" ]; then
  mkdir -p "$third/src/qemu" "$third/qemu-plugin"
  (cd "$third/src/qemu" && { ls qemu_*.orig.tar.* >/dev/null 2>&1 || apt-get source --download-only qemu >/dev/null 2>&1; }) ||
    { echo "build-qemu-plugin.sh: 'apt-get source qemu' failed (deb-src entries: run scripts/setup.sh as root)" >&2; exit 1; }
  header=$(find "$third/src/qemu" -path '*/include/qemu/qemu-plugin.h' | head -n 1)
  if [ -z "$header" ]; then
    tar -xf "$third"/src/qemu/qemu_*.orig.tar.* -C "$third/src/qemu" --wildcards '*/include/qemu/qemu-plugin.h'
    header=$(find "$third/src/qemu" -path '*/include/qemu/qemu-plugin.h' | head -n 1)
  fi
  gcc -O2 -shared -fPIC -I"$(dirname "$(dirname "$header")")" "$source" -o "$plugin"
fi
echo "$plugin"
