#!/usr/bin/env bash
# Checks a riscv64 binary or static library for Zicbop prefetch.r words (the software prefetch of
# the streaming kernels, kernels/common/prefetch.h). prefetch.r is the ORI hint with rd = x0 and
# imm[4:0] = 0b00001 (RISC-V CMO spec), so a word w is one when
# (w & 0x01F0FFFF) == 0x00106013 (opcode 0x13, funct3 6, rd 0, imm[4:0] 1).
#   check-zicbop-insns.sh FILE absent              builds without K3_ENABLE_ZICBOP: no such word
#   check-zicbop-insns.sh FILE present [REGEX...]  K3_ENABLE_ZICBOP builds: some word, and for each
#       REGEX some word inside a function whose demangled name matches it (e.g. the attention
#       K/V loops: a knob compiled out of one kernel would otherwise go unnoticed)
set -euo pipefail
objdump=${K3_OBJDUMP:-riscv64-linux-gnu-objdump}
usage="usage: check-zicbop-insns.sh FILE absent|present [FUNCTION_REGEX...]"
file=${1:?$usage}
want=${2:?$usage}
shift 2
# "function<TAB>word" for 32-bit words whose low 7 bits are the OP-IMM opcode; the exact hint mask
# is applied in bash.
hits=()
while IFS=$'\t' read -r fn w; do
  (((0x$w & 0x01F0FFFF) == 0x00106013)) && hits+=("$fn")
done < <("$objdump" -d -C "$file" | awk '
  /^[0-9a-f]+ <\..*>:$/ { next }  # local labels (.LBB*) of relocatable objects: same function
  /^[0-9a-f]+ <.*>:$/ { fn = substr($0, index($0, "<") + 1); sub(/>:$/, "", fn); next }
  length($2) == 8 && $2 ~ /^[0-9a-f]+$/ && substr($2, 7, 2) ~ /^(13|93)$/ { print fn "\t" $2 }')
count=${#hits[@]}
case $want in
  absent)
    [ "$count" -eq 0 ] || { echo "FAIL: $file holds $count prefetch.r words"; exit 1; }
    echo "ok: no prefetch.r in $file" ;;
  present)
    [ "$count" -gt 0 ] || { echo "FAIL: $file holds no prefetch.r word"; exit 1; }
    for re in "$@"; do
      n=0
      for fn in "${hits[@]}"; do [[ $fn =~ $re ]] && n=$((n + 1)); done
      [ "$n" -gt 0 ] || { echo "FAIL: no prefetch.r in a function matching '$re' in $file"; exit 1; }
      echo "ok: $n prefetch.r words in functions matching '$re'"
    done
    echo "ok: $count prefetch.r words in $file" ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
