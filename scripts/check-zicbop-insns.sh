#!/usr/bin/env bash
# Checks a riscv64 binary or static library for Zicbop prefetch.r words (the software prefetch of
# the streaming kernels, kernels/common/prefetch.h). prefetch.r is the ORI hint with rd = x0 and
# imm[4:0] = 0b00001 (RISC-V CMO spec), so a word w is one when
# (w & 0x01F0FFFF) == 0x00106013 (opcode 0x13, funct3 6, rd 0, imm[4:0] 1).
#   check-zicbop-insns.sh FILE absent    builds without K3_ENABLE_ZICBOP: no such word
#   check-zicbop-insns.sh FILE present   K3_ENABLE_ZICBOP builds: the Linear decode emits them
set -euo pipefail
objdump=${K3_OBJDUMP:-riscv64-linux-gnu-objdump}
file=${1:?usage: check-zicbop-insns.sh FILE absent|present}
want=${2:?usage: check-zicbop-insns.sh FILE absent|present}
# 32-bit words whose low 7 bits are the OP-IMM opcode; then the exact hint mask in bash.
count=0
while read -r w; do
  (((0x$w & 0x01F0FFFF) == 0x00106013)) && count=$((count + 1))
done < <("$objdump" -d "$file" | awk 'length($2) == 8 && $2 ~ /^[0-9a-f]+$/ && substr($2, 7, 2) ~ /^(13|93)$/ { print $2 }')
case $want in
  absent)
    [ "$count" -eq 0 ] || { echo "FAIL: $file holds $count prefetch.r words"; exit 1; }
    echo "ok: no prefetch.r in $file" ;;
  present)
    [ "$count" -gt 0 ] || { echo "FAIL: $file holds no prefetch.r word"; exit 1; }
    echo "ok: $count prefetch.r words in $file" ;;
  *) echo "usage: check-zicbop-insns.sh FILE absent|present" >&2; exit 2 ;;
esac
