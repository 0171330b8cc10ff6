#!/usr/bin/env bash
# The ISA commands of the CLI: pccx asm / dis / validate / isa-table.
#
#   bash tests/scripts/cli_isa.sh BUILD
#
# help of every command; asm -> dis -> asm byte-identical on tests/data/all_ops.s
# (which covers every opcode and CVO function) and on illegal words; assembler
# errors as FILE:LINE:COLUMN with the field; a non-zero exit on every error;
# validate on good and bad job files (written byte by byte with printf).
set -u
. "$(dirname "$0")/lib/cli.sh"
cli_init cli_isa "$@"

# ---- help -------------------------------------------------------------------------------
want_rc 0 "$pccx" --help
has "$T/out" "usage: pccx <command>"
cmds=$(awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { on = 0 }' \
  "$T/out")
for c in asm dis validate isa-table; do
  grep -qx "$c" <<<"$cmds" || fail "pccx --help does not list '$c'"
done
for c in $cmds; do
  want_rc 0 "$pccx" "$c" --help
  has "$T/out" "usage: pccx $c"
  want_rc 0 "$pccx" "$c" -h
done
want_rc 0 "$pccx" -h
want_rc 0 "$pccx" help
want_rc 2 "$pccx"
want_rc 2 "$pccx" no-such-command
has "$T/err" "unknown command 'no-such-command'"

# ---- asm -> dis -> asm on every opcode and CVO function ------------------------------------
want_rc 0 "$pccx" asm tests/data/all_ops.s -o "$T/a.bin"
n_lines=$(grep -cE '^[[:space:]]*([a-z_]+:[[:space:]]*)?(gemv|gemm|memcpy|memset|cvo|\.word) ' \
  tests/data/all_ops.s)
[ "$(stat -c %s "$T/a.bin")" -eq $((8 * n_lines)) ] ||
  fail "all_ops.bin is $(stat -c %s "$T/a.bin") bytes for $n_lines instructions"
want_rc 0 "$pccx" dis "$T/a.bin"
cp "$T/out" "$T/a.s"
want_rc 0 "$pccx" asm "$T/a.s" -o "$T/b.bin"
cmp -s "$T/a.bin" "$T/b.bin" || fail "asm(dis(all_ops)) differs from asm(all_ops)"
want_rc 0 "$pccx" dis "$T/b.bin"
cmp -s "$T/a.s" "$T/out" || fail "dis is not stable: $(diff "$T/a.s" "$T/out" | head -5)"
# coverage, against the names the instruction table itself prints
want_rc 0 "$pccx" isa-table
ops=$(sed -nE 's/^\| 0x[0-9A-F] \| `([a-z]+)` \| [A-D] \|$/\1/p' "$T/out")
funcs=$(sed -nE 's/^\| 0x[0-9A-F] \| `([a-z0-9]+)` \| (unary|scale|binary|reduce|load) \|.*/\1/p' \
  "$T/out")
[ "$(wc -w <<<"$ops")" -eq 5 ] || fail "isa-table lists opcodes '$ops'"
[ "$(wc -w <<<"$funcs")" -eq 16 ] || fail "isa-table lists CVO functions '$funcs'"
for o in $ops; do
  grep -q "^$o " "$T/a.s" || fail "all_ops.s has no $o"
done
for f in $funcs; do
  grep -q "^cvo func=$f " "$T/a.s" || fail "all_ops.s has no cvo func=$f"
done
want_rc 0 "$pccx" validate "$T/a.bin"
has "$T/out" "ok: $n_lines instructions"
has "$T/out" "program file"

# illegal words survive the round trip as .word lines with their reason
{
  printf '\x00\x00\x00\x00\x00\x00\x00\x80'     # 0x8000000000000000: opcode 8 (KICK)
  printf '\x00\x00\x00\x00\x00\x00\x00\x4f'     # CVO function 0xF (smul) of length 0
  printf '\x18\x00\x00\x00\x00\x00\x00\x00'     # GEMV with lanes = 3
  printf '\xef\xcd\xab\x89\x67\x45\x23\xf1'     # opcode 0xF
} >"$T/ill.bin"
want_rc 0 "$pccx" dis "$T/ill.bin"
cp "$T/out" "$T/ill.s"
has "$T/ill.s" ".word 0x8000000000000000  # OPCODE"
has "$T/ill.s" ".word 0x4f00000000000000  # LENGTH"
has "$T/ill.s" ".word 0x0000000000000018  # FIELD_VALUE"
want_rc 0 "$pccx" asm "$T/ill.s" -o "$T/ill2.bin"
cmp -s "$T/ill.bin" "$T/ill2.bin" || fail "asm(dis(illegal words)) differs"
want_fail "$pccx" validate "$T/ill.bin"
has "$T/err" "instruction 0 (word 0x8000000000000000): OPCODE"

# ---- assembler errors: FILE:LINE:COLUMN, the field, the reason ---------------------------------
asm_err() { # asm_err 'line 1\nline 2...' EXPECTED-MESSAGE
  printf "$1" >"$T/e.s"
  rm -f "$T/e.bin"
  want_fail "$pccx" asm "$T/e.s" -o "$T/e.bin"
  has "$T/err" "$T/e.s:$2"
  [ ! -e "$T/e.bin" ] || fail "asm wrote $T/e.bin despite an error"
}
asm_err 'memset cache=fmap entry=0 a=1 b=1 c=1\n# ok\ncvo func=exp src=0 dst=0 len=65536\n' \
  "3:30: field 'len': value does not fit the field (65536 > 16 bits)"
asm_err '\n    gmev dest=0\n' "2:5: unknown mnemonic"
asm_err 'x: memcpy dest=0 src=0 desc=0 fshape=0 +from_host +to_host\n' \
  "1:4: field 'to_host': the instruction is illegal: ROUTE"
asm_err 'cvo func=exp src=0 dst=0 len=0\n' "1:1: field 'len': the instruction is illegal: LENGTH"
asm_err 'gemv dest=0 src=0 wshape=0  # no fshape\n' "1:29: field 'fshape': required field missing"
asm_err 'cvo func=expp src=0 dst=0 len=1\n' "1:10: field 'func': unknown name for this field"
asm_err 'cvo func=exp src=0 dst=0 len=1 src=2\n' "1:32: field 'src': field given twice"
asm_err 'cvo func=exp src=0 dst=0 len=1 bogus=2\n' "1:32: unknown field for this instruction"
asm_err 'cvo func=exp src=0 dst=0 len=1 relu=1\n' "1:32: field 'relu': flag written with a value"
asm_err 'cvo func=exp src=0x1g dst=0 len=1\n' "1:18: field 'src': not a number"
asm_err '.word 18446744073709551616\n' "1:7: not a number"
asm_err 'gemv dest 0\n' "1:10: field 'dest': syntax error"
asm_err '# nothing but comments\n\n; and blank lines\n' ""
has "$T/err" "no instructions"

# ---- exit codes on every kind of error ---------------------------------------------------
want_fail "$pccx" asm "$T/does-not-exist" -o "$T/x.bin"
has "$T/err" "does-not-exist: cannot open"
want_fail "$pccx" dis "$T/does-not-exist"
has "$T/err" "does-not-exist: cannot open"
want_fail "$pccx" validate "$T/does-not-exist"
has "$T/err" "does-not-exist: cannot open"
mkdir "$T/dir"
want_fail "$pccx" asm "$T/dir" -o "$T/x.bin"
has "$T/err" "not a regular file"
want_fail "$pccx" dis "$T/dir"
want_fail "$pccx" validate "$T/dir"
if [ "$(id -u)" -ne 0 ]; then    # root reads anything: the directory case covers it
  cp tests/data/all_ops.s "$T/noread.s" && chmod 000 "$T/noread.s"
  want_fail "$pccx" asm "$T/noread.s" -o "$T/x.bin"
  has "$T/err" "cannot open"
fi
want_fail "$pccx" asm tests/data/all_ops.s -o "$T/no-such-dir/x.bin"
want_rc 2 "$pccx" asm tests/data/all_ops.s
want_rc 2 "$pccx" asm tests/data/all_ops.s -o "$T/x.bin" --bogus
want_rc 2 "$pccx" asm tests/data/all_ops.s tests/data/all_ops.s -o "$T/x.bin"
want_rc 2 "$pccx" dis
want_rc 2 "$pccx" validate
printf '\x01\x02\x03' >"$T/odd.bin"
want_fail "$pccx" dis "$T/odd.bin"
has "$T/err" "3 bytes is not a whole number of 64-bit words"
: >"$T/empty.bin"
want_fail "$pccx" validate "$T/empty.bin"
has "$T/err" "empty program"

# ---- job files, written byte by byte ----------------------------------------------------
le32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $((($1 >> 8) & 255)) \
  $((($1 >> 16) & 255)) $((($1 >> 24) & 255)); }
le64() { le32 $(($1 & 0xffffffff)); le32 $((($1 >> 32) & 0xffffffff)); }
# hdr VERSION N_INSN N_DMA N_STREAM N_BUF RESERVED
hdr() {
  printf 'PCCXJOB\x00'
  printf "$(le32 "$1")$(le32 "$2")$(le32 "$3")$(le32 "$4")$(le32 "$5")$(le32 "$6")"
}
desc() { printf "$(le32 "$1")$(le32 "$2")$(le64 "$3")$(le64 "$4")"; }   # handle flags|port off len
bufrec() { printf "$(le32 "$1")$(le32 "$2")$(le64 "$3")"; }            # handle access size

# x: 16 FP32 (4 words, 64 bytes) in; W: f32 (4, 16), one 64-byte row per port; y: 4 FP32 out
cat >"$T/job.s" <<'EOF'
memset cache=fmap entry=0 a=16 b=1 c=1
memset cache=fmap entry=1 a=4 b=1 c=1
memset cache=weight entry=0 a=4 b=16 c=1
memcpy dest=0 src=0 desc=0 fshape=0 +from_host
gemv dest=0x10 src=0 wshape=0 fshape=0
memcpy dest=0 src=0x10 desc=1 fshape=1 +to_host
EOF
want_rc 0 "$pccx" asm "$T/job.s" -o "$T/job.bin"

# mkjob OUT [version] [reserved] [dma0-length] [port2-length] [buf2-handle] [buf2-access]
mkjob() {
  local out=$1 ver=${2:-1} rsv=${3:-0} dlen=${4:-64} slen=${5:-64} h2=${6:-12} a2=${7:-3}
  {
    hdr "$ver" 6 2 4 3 "$rsv"
    cat "$T/job.bin"
    desc 10 1 0 "$dlen"
    desc 11 2 16 16
    desc 12 0 0 64
    desc 12 1 64 64
    desc 12 2 128 "$slen"
    desc 12 3 192 64
    bufrec 10 1 64
    bufrec 11 2 32
    bufrec "$h2" "$a2" 256
  } >"$out"
}
mkjob "$T/good.job"
[ "$(stat -c %s "$T/good.job")" -eq $((32 + 6 * 8 + 6 * 24 + 3 * 16)) ] ||
  fail "good.job is $(stat -c %s "$T/good.job") bytes"
want_rc 0 "$pccx" validate "$T/good.job"
has "$T/out" "$T/good.job: ok: 6 instructions, 2 host DMA descriptors, 4 stream descriptors"
has "$T/out" "stream bytes per port: 64 64 64 64; host DMA in 64, out 16"
want_rc 0 "$pccx" dis "$T/good.job"
has "$T/out" "# buffer handle=10 size=64 access=r"
has "$T/out" "# buffer handle=12 size=256 access=rw"
has "$T/out" "# dma 1: handle=11 from-device offset=16 length=16"
has "$T/out" "# stream 2: port=2 handle=12 offset=128 length=64"
has "$T/out" "gemv dest=0x00010 src=0x00000 wshape=0 fshape=0"
# a job file's listing assembles back to its instructions
grep -v '^#' "$T/out" >"$T/job2.s"
want_rc 0 "$pccx" asm "$T/job2.s" -o "$T/job2.bin"
cmp -s "$T/job.bin" "$T/job2.bin" || fail "job instructions do not round-trip"

mkjob "$T/dmalen.job" 1 0 48
want_fail "$pccx" validate "$T/dmalen.job"
has "$T/err" "pccx: $T/dmalen.job: instruction 3 (memcpy dest=0x00000 src=0x00000 desc=0 \
fshape=0 +from_host): field desc: DMA_LENGTH"
has "$T/err" "(transfer is 64 bytes, descriptor says 48)"
mkjob "$T/short.job" 1 0 64 48
want_fail "$pccx" validate "$T/short.job"
has "$T/err" "weight-stream port 2: STREAM_MISMATCH"
has "$T/err" "(instructions consume 64 bytes, descriptors provide 48)"
mkjob "$T/long.job" 1 0 64 144
want_fail "$pccx" validate "$T/long.job"
has "$T/err" "BUF_RANGE"
mkjob "$T/ver.job" 2
want_fail "$pccx" validate "$T/ver.job"
has "$T/err" "job file version 2 (expected 1)"
want_fail "$pccx" dis "$T/ver.job"
mkjob "$T/rsv.job" 1 7
want_fail "$pccx" validate "$T/rsv.job"
has "$T/err" "reserved header word is not zero"
mkjob "$T/dup.job" 1 0 64 64 10
want_fail "$pccx" validate "$T/dup.job"
has "$T/err" "buffer handle 10 listed twice"
# a buffer record sim could not create is refused by every reader of job files alike
mkjob "$T/acc.job" 1 0 64 64 12 0xffffffff
for c in validate dis sim; do
  want_fail "$pccx" $c "$T/acc.job"
  has "$T/err" "$T/acc.job: buffer 2 (handle 12): access 0xffffffff has undefined bits 0xfffffffc"
done
mkjob "$T/acc0.job" 1 0 64 64 12 0
want_fail "$pccx" validate "$T/acc0.job"
has "$T/err" "buffer 2 (handle 12): access 0 grants the device neither read nor write"
head -c 20 "$T/good.job" >"$T/trunc.job"
want_fail "$pccx" validate "$T/trunc.job"
has "$T/err" "truncated job header (20 bytes)"
want_fail "$pccx" dis "$T/trunc.job"
head -c 271 "$T/good.job" >"$T/cut.job"
want_fail "$pccx" validate "$T/cut.job"
has "$T/err" "271 bytes but the header's counts need 272"
{ cat "$T/good.job"; printf '\x00'; } >"$T/extra.job"
want_fail "$pccx" validate "$T/extra.job"
has "$T/err" "273 bytes but the header's counts need 272"
{ hdr 1 2000000 0 0 0 0; } >"$T/big.job"
want_fail "$pccx" validate "$T/big.job"
has "$T/err" "counts too large"

cli_done
