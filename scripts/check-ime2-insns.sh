#!/usr/bin/env bash
# Checks a riscv64 binary or static library for IME2 instructions (custom-1 opcode 0x2B, which
# objdump prints as .4byte words).
#   check-ime2-insns.sh FILE absent    no custom-1 word at all (builds without K3_ENABLE_IME2,
#                                      and emulation builds)
#   check-ime2-insns.sh FILE present   the W4A8 Linear operations are there: vmadotu i4
#                                      (funct7 0x61, funct3 0) and vmadotsu i4 (funct7 0x61, funct3 2)
#   check-ime2-insns.sh --only-ime2-objects DIR|OBJ...
#                                      of the given object files (directories: every *.o below),
#                                      only those built from kernels/ime2/ (a path containing
#                                      /ime2/) hold custom-1 words
set -euo pipefail
objdump=${K3_OBJDUMP:-riscv64-linux-gnu-objdump}
custom1_words() {
  "$objdump" -d "$1" | awk 'length($2) == 8 && $2 ~ /^[0-9a-f]+$/ && (substr($2, 7, 2) == "2b" || substr($2, 7, 2) == "ab") { print $2 }'
}
if [ "${1:-}" = --only-ime2-objects ]; then
  shift
  mapfile -t objs < <(for a in "$@"; do if [ -d "$a" ]; then find "$a" -name '*.o' | sort; else echo "$a"; fi; done)
  [ ${#objs[@]} -gt 0 ] || { echo "FAIL: no object files in: $*"; exit 1; }
  status=0
  for obj in "${objs[@]}"; do
    count=$(custom1_words "$obj" | grep -c . || true)
    case $obj in
      */ime2/*) [ "$count" -gt 0 ] && echo "ime2 object: $count IME2 words in ${obj##*/k3kernels.dir/}" ;;
      *) if [ "$count" -ne 0 ]; then echo "FAIL: $count IME2 words outside the IME2 layer: $obj"; status=1; fi ;;
    esac
  done
  [ $status -eq 0 ] && echo "ok: IME2 words only in kernels/ime2 objects (${#objs[@]} objects checked)"
  exit $status
fi
file=${1:?usage: check-ime2-insns.sh FILE absent|present}
want=${2:?usage: check-ime2-insns.sh FILE absent|present}
words=$(custom1_words "$file")
count=$(printf '%s' "$words" | grep -c . || true)
ops=$(for w in $words; do printf '%08x\n' $(( 0x$w & 0xFE00707F )); done | sort | uniq -c)
case $want in
  absent)
    if [ "$count" -ne 0 ]; then
      echo "FAIL: $file holds $count IME2 (custom-1) instruction words:"; echo "$ops"; exit 1
    fi
    echo "ok: no IME2 instruction in $file" ;;
  present)
    for op in c200002b c200202b; do
      if ! grep -q " $op\$" <<<"$ops"; then
        echo "FAIL: $file lacks IME2 operation $op (funct7|funct3|opcode); found:"; echo "${ops:-none}"; exit 1
      fi
    done
    echo "ok: $count IME2 instruction words in $file:"; echo "$ops" ;;
  *) echo "usage: check-ime2-insns.sh FILE absent|present" >&2; exit 2 ;;
esac
