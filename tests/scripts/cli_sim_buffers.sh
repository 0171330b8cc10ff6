#!/usr/bin/env bash
# pccx sim and the buffers a job file declares.
#
#   bash tests/scripts/cli_sim_buffers.sh BUILD
#
# A job file declares its buffers' sizes; pccx sim must neither zero-fill what the
# instructions never reach nor take whatever a 56-byte file asks for: a 2^34-byte buffer is
# refused at once (under a 4 GiB address-space limit, so zero-filling it cannot pass) naming
# the buffer, its size and --max-buffers; one above the DMA space is refused at once too; a
# 3 GiB buffer the job barely touches runs without its memory becoming resident.
set -u
. "$(dirname "$0")/lib/cli.sh"
cli_init cli_sim_buffers "$@"
# small: the last maxrss command stayed under 256 MiB resident (nothing was zero-filled)
small() { [ "$kb" -lt $((256 << 10)) ] || fail "peaked at $kb KiB resident: $(head -c 300 "$T/err")"; }

# maxrss CMD...: run it (status in $rc) and set $kb to its peak resident set in KiB
maxrss() {
  checks=$((checks + 1))
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f %M -o "$T/rss" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    kb=$(tail -n 1 "$T/rss")
  else
    python3 - "$T" "$@" <<'EOF'
import resource, subprocess, sys
t = sys.argv[1]
with open(t + "/out", "w") as o, open(t + "/err", "w") as e:
    rc = subprocess.call(sys.argv[2:], stdout=o, stderr=e)
open(t + "/rss", "w").write("%d %d\n" % (rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
EOF
    read -r rc kb <"$T/rss"
  fi
}

le32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $((($1 >> 8) & 255)) \
  $((($1 >> 16) & 255)) $((($1 >> 24) & 255)); }
le64() { le32 $(($1 & 0xffffffff)); le32 $((($1 >> 32) & 0xffffffff)); }
hdr() {   # hdr N_INSN N_DMA N_STREAM N_BUF
  printf 'PCCXJOB\x00'
  printf "$(le32 1)$(le32 "$1")$(le32 "$2")$(le32 "$3")$(le32 "$4")$(le32 0)"
}
desc() { printf "$(le32 "$1")$(le32 "$2")$(le64 "$3")$(le64 "$4")"; }   # handle flags|port off len
bufrec() { printf "$(le32 "$1")$(le32 "$2")$(le64 "$3")"; }            # handle access size

# ---- help ---------------------------------------------------------------------------------
want_rc 0 "$pccx" sim --help
has "$T/out" "--max-buffers BYTES"

# ---- one MEMSET and buffers that nothing touches --------------------------------------------
printf 'memset cache=fmap entry=0 a=32 b=1 c=1\n' >"$T/m.s"
want_rc 0 "$pccx" asm "$T/m.s" -o "$T/m.bin"
# bufjob OUT SIZE...: the MEMSET and one read-write buffer per SIZE (handles 1, 2, ...)
bufjob() {
  local out=$1 h=0 s; shift
  { hdr 1 0 0 $#; cat "$T/m.bin"; for s in "$@"; do h=$((h + 1)); bufrec $h 3 "$s"; done; } >"$out"
}
bufjob "$T/b34.job" $((1 << 34))
[ "$(stat -c %s "$T/b34.job")" -eq 56 ] || fail "b34.job is $(stat -c %s "$T/b34.job") bytes"
# 2^34 bytes: refused before anything is allocated. Under a 4 GiB address-space limit a
# zero-filled allocation fails too, but not with this message.
# (A sanitizer build reserves terabytes of address space and cannot run under the limit.)
as_limit=$((4 << 20))
{ ( ulimit -v $as_limit; exec "$pccx" --help ) >/dev/null 2>&1; } 2>/dev/null || as_limit=unlimited
maxrss bash -c 'ulimit -v "$0" && exec "$@"' "$as_limit" "$pccx" sim "$T/b34.job"
[ "$rc" -eq 1 ] || fail "sim of a 2^34-byte buffer exited $rc (address space $as_limit KiB)"
small
has "$T/err" "$T/b34.job: buffer 0 (handle 1) declares 17179869184 bytes, more than the limit \
of 4294967296 bytes on the job's buffers (--max-buffers BYTES raises it)"
# raised, the 32-bit DMA space of the default device refuses it, also at once
maxrss "$pccx" sim --max-buffers 16G "$T/b34.job"
[ "$rc" -eq 1 ] || fail "sim --max-buffers 16G of a 2^34-byte buffer exited $rc"
small
has "$T/err" "$T/b34.job: buffer 0 (handle 1): sim buffer: 17179869184 bytes do not fit below \
the 32-bit DMA limit"
bufjob "$T/b32.job" $((1 << 32))
maxrss "$pccx" sim "$T/b32.job"
[ "$rc" -eq 1 ] || fail "sim of a 2^32-byte buffer exited $rc"
small
has "$T/err" "$T/b32.job: buffer 0 (handle 1): sim buffer: 4294967296 bytes do not fit"
# the buffer that crosses the limit is named, with what came before it
bufjob "$T/two.job" $((3 << 30)) $((2 << 30))
want_rc 1 "$pccx" sim "$T/two.job"
has "$T/err" "$T/two.job: buffer 1 (handle 2) declares 2147483648 bytes, which with the \
3221225472 bytes of the buffers before it is more than the limit of 4294967296 bytes"
bufjob "$T/k.job" 2048
want_rc 1 "$pccx" sim --max-buffers 1K "$T/k.job"
has "$T/err" "declares 2048 bytes, more than the limit of 1024 bytes"
want_rc 0 "$pccx" sim --max-buffers 2K "$T/k.job"
want_rc 0 "$pccx" sim --max-buffers 0x800 "$T/k.job"
for bad in 0 -1 " 5" 1X 1KB "" 16777216T 0x; do
  want_rc 2 "$pccx" sim --max-buffers "$bad" "$T/k.job"
  has "$T/err" "bad --max-buffers"
done

# 3 GiB that no instruction touches: runs, and the memory is never resident
bufjob "$T/b3g.job" $((3 << 30))
maxrss "$pccx" sim "$T/b3g.job"
[ "$rc" -eq 0 ] || fail "sim of an untouched 3 GiB buffer exited $rc: $(head -c 300 "$T/err")"
[ "$kb" -lt $((256 << 10)) ] || fail "sim of an untouched 3 GiB buffer peaked at $kb KiB resident"
echo "untouched 3 GiB buffer: peak RSS $kb KiB"

# ---- a job that reads and writes a few bytes of large buffers --------------------------------
cat >"$T/job.s" <<'EOF'
memset cache=fmap entry=0 a=16 b=1 c=1
memset cache=fmap entry=1 a=4 b=1 c=1
memset cache=weight entry=0 a=4 b=16 c=1
memcpy dest=0 src=0 desc=0 fshape=0 +from_host
gemv dest=0x10 src=0 wshape=0 fshape=0
memcpy dest=0 src=0x10 desc=1 fshape=1 +to_host
EOF
want_rc 0 "$pccx" asm "$T/job.s" -o "$T/job.bin"
gemvjob() {   # gemvjob OUT IN-SIZE OUT-SIZE WEIGHT-SIZE
  {
    hdr 6 2 4 3
    cat "$T/job.bin"
    desc 10 1 0 64
    desc 11 2 16 16
    desc 12 0 0 64
    desc 12 1 64 64
    desc 12 2 128 64
    desc 12 3 192 64
    bufrec 10 1 "$2"
    bufrec 11 2 "$3"
    bufrec 12 1 "$4"
  } >"$1"
}
# x = 16 FP32 ones, W = 4 x 16 FP32 twos (f32: one 64-byte row per port)
for i in $(seq 16); do printf '\x00\x00\x80\x3f'; done >"$T/x.bin"
for i in $(seq 64); do printf '\x00\x00\x00\x40'; done >"$T/w.bin"
gemvjob "$T/small.job" 64 32 256
want_rc 0 "$pccx" sim "$T/small.job" --buf 10="$T/x.bin" --buf 12="$T/w.bin" --out 11="$T/y1"
gemvjob "$T/large.job" $((1 << 30)) 32 $((2 << 30))
maxrss "$pccx" sim "$T/large.job" --buf 10="$T/x.bin" --buf 12="$T/w.bin" --out 11="$T/y2"
[ "$rc" -eq 0 ] || fail "sim of the GEMV job with 3 GiB of buffers exited $rc: \
$(head -c 300 "$T/err")"
[ "$kb" -lt $((256 << 10)) ] || fail "sim of the GEMV job with 3 GiB of buffers peaked at \
$kb KiB resident"
cmp -s "$T/y1" "$T/y2" || fail "the GEMV result differs with large buffers"
echo "GEMV job with 3 GiB of buffers, 352 bytes of them used: peak RSS $kb KiB"

cli_done
