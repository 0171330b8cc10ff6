#!/usr/bin/env bash
# The main job, as far as the stack goes today: assemble, disassemble and validate a v002
# program with the ISA tools, then run whatever later components provide (see README).
set -euo pipefail
build=${1:-build}
pccx="$build/bin/pccx"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/rmsnorm.s" <<'ASM'
# RMSNorm of a 2048-element BF16 vector x (L2 word 0x100) by weights w (0x200) into y (0x300);
# word 0x010 holds the FP32 epsilon in its slot 0, 0x020 is scratch for the scalars.
cvo func=sumsq src=0x00100 dst=0x00020 len=2048 +recip_scale
cvo func=add   src=0x00010 dst=0x00020 len=0 +sreg
cvo func=rsqrt src=0x00000 dst=0x00020 len=0 +sreg
cvo func=scale src=0x00100 dst=0x00300 len=2048
cvo func=mul   src=0x00200 dst=0x00300 len=2048
ASM
echo "== pccx asm"
"$pccx" asm "$tmp/rmsnorm.s" -o "$tmp/rmsnorm.bin"
echo "$(($(stat -c %s "$tmp/rmsnorm.bin") / 8)) words written"
echo "== pccx dis"
"$pccx" dis "$tmp/rmsnorm.bin"
echo "== pccx validate"
"$pccx" validate "$tmp/rmsnorm.bin"
echo "== an illegal word is refused with its reason"
printf 'cvo func=mul src=0x00200 dst=0x00300 len=2048 +accm\n' >"$tmp/bad.s"
"$pccx" asm "$tmp/bad.s" -o "$tmp/bad.bin" || true
