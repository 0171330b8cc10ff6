#!/usr/bin/env bash
# Files that are not regular files: every command that reads a file refuses a FIFO, a
# directory, a device or a socket at once, naming the file and what it is, instead of
# blocking in open() until a writer comes (a FIFO) or reading something else; every command
# that writes one (-o, --trace, --tsv, --dump-stages) refuses a FIFO or a device there
# instead of blocking until a reader comes or writing into it.
#
#   bash tests/scripts/cli_inputs.sh BUILD [BUILD...]
#
# Each command runs under `timeout 20`: a hang is a failure. A safetensors checkpoint
# directory given to `pccx run -m`, `pccx ref -m` or `pccx fidelity -m` is still taken as one.
set -u
[ $# -ge 1 ] || { echo "usage: cli_inputs.sh BUILD [BUILD...]"; exit 2; }
. "$(dirname "$0")/lib/cli.sh"
CLI_ANY_BUILDS=1 cli_init cli_inputs "$@"

# refused KIND PATH CMD...: CMD exits non-zero within the timeout, saying
# "PATH: not a regular file (KIND)"
refused() {
  local kind=$1 path=$2 rc t0 ms; shift 2
  checks=$((checks + 1))
  t0=$(date +%s%N)
  timeout 20 "$@" </dev/null >"$T/out" 2>"$T/err"
  rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  if [ "$rc" -eq 124 ]; then
    fail "'$*' hung (killed after $ms ms)"
  elif [ "$rc" -eq 0 ]; then
    fail "'$*' exited 0"
  elif ! grep -qF -- "$path: not a regular file ($kind)" "$T/err"; then
    fail "'$*' exited $rc without '$path: not a regular file ($kind)': $(head -c 300 "$T/err")"
  fi
}

mkfifo "$T/fifo"
mkdir "$T/dir"
printf 'memset cache=fmap entry=0 a=32 b=1 c=1\n' >"$T/m.s"
sock=
if command -v python3 >/dev/null 2>&1 &&
   python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \
     "$T/sock" 2>/dev/null; then
  sock=$T/sock
fi

for b in "$@"; do
  pccx=$(cd "$b" && pwd)/bin/pccx
  [ -x "$pccx" ] || { fail "$pccx not built"; continue; }
  "$pccx" asm "$T/m.s" -o "$T/m.bin" || fail "asm of $T/m.s failed"

  for kind in fifo directory "character device" socket; do
    case $kind in
      fifo) f=$T/fifo ;;
      directory) f=$T/dir ;;
      "character device") f=/dev/null ;;
      socket) f=$sock; [ -n "$f" ] || continue ;;
    esac
    refused "$kind" "$f" "$pccx" validate "$f"
    refused "$kind" "$f" "$pccx" dis "$f"
    refused "$kind" "$f" "$pccx" asm "$f" -o "$T/x.bin"
    refused "$kind" "$f" "$pccx" sim "$f"
    refused "$kind" "$f" "$pccx" sim "$T/m.bin" --dtb "$f"
    refused "$kind" "$f" "$pccx" sim "$T/m.bin" --stages "$f"
    refused "$kind" "$f" "$pccx" ref --config tiny --tokenizer "$f" -n 1 -q
    refused "$kind" "$f" "$pccx" fidelity --config tiny --tokenizer "$f" -n 1 -q
    refused "$kind" "$f" "$pccx" synth --config tiny --tokenizer "$f" -o "$T/s.gguf"
    refused "$kind" "$f" "$pccx" tokenize --tokenizer "$f" hello
    refused "$kind" "$f" "$pccx" info --dtb "$f"
    refused "$kind" "$f" "$pccx" run --config tiny --tokenizer "$f" -p hi -n 1
    refused "$kind" "$f" "$pccx" run --config tiny --dtb "$f" -p hi -n 1
    if [ "$kind" != directory ]; then     # a directory is a checkpoint: below
      refused "$kind" "$f" "$pccx" run -m "$f" -p hi -n 1
      refused "$kind" "$f" "$pccx" ref -m "$f" -n 1 -q
      refused "$kind" "$f" "$pccx" fidelity -m "$f" -n 1 -q
    fi
  done

  # the files of a checkpoint directory, and --buf of pccx sim
  mkdir -p "$T/ckpt"
  rm -f "$T/ckpt/config.json"
  mkfifo "$T/ckpt/config.json"
  refused fifo "$T/ckpt/config.json" "$pccx" run -m "$T/ckpt" -p hi -n 1
  refused fifo "$T/ckpt/config.json" "$pccx" ref -m "$T/ckpt" -n 1 -q
  refused fifo "$T/ckpt/config.json" "$pccx" fidelity -m "$T/ckpt" -n 1 -q
  { printf 'PCCXJOB\0\1\0\0\0\1\0\0\0\0\0\0\0\0\0\0\0\1\0\0\0\0\0\0\0'; cat "$T/m.bin"
    printf '\1\0\0\0\3\0\0\0\0\1\0\0\0\0\0\0'; } >"$T/buf.job"
  refused fifo "$T/fifo" "$pccx" sim "$T/buf.job" --buf 1="$T/fifo"

  # outputs: whole files (-o) and streams (--trace, --tsv, --dump-stages' files)
  for kind in fifo "character device"; do
    case $kind in
      fifo) f=$T/fifo ;;
      "character device") f=/dev/null ;;
    esac
    refused "$kind" "$f" "$pccx" asm "$T/m.s" -o "$f"
    refused "$kind" "$f" "$pccx" synth --config tiny -o "$f"
    refused "$kind" "$f" "$pccx" sim "$T/m.bin" --trace "$f"
    refused "$kind" "$f" "$pccx" run --config tiny -p hi -n 1 --trace "$f"
    refused "$kind" "$f" "$pccx" bench --config tiny --tokens 1 --trace "$f"
    refused "$kind" "$f" "$pccx" fidelity --config tiny -n 2 -q --tsv "$f"
  done
  rm -rf "$T/dump"
  mkdir "$T/dump"
  mkfifo "$T/dump/index.tsv"
  refused fifo "$T/dump/index.tsv" "$pccx" ref --config tiny -n 1 -q --dump-stages "$T/dump"
  rm -f "$T/dump/index.tsv"
  mkfifo "$T/dump/p00000.embed.f32"
  refused fifo "$T/dump/p00000.embed.f32" "$pccx" ref --config tiny -n 1 -q \
    --dump-stages "$T/dump"

  # a full disk: the streamed output fails with the cause and leaves no partial file (where a
  # small tmpfs can be mounted: root without a container's restrictions)
  mkdir -p "$T/small"
  if mount -t tmpfs -o size=64k tmpfs "$T/small" 2>/dev/null; then
    for out in "--trace $T/small/t.json" "--tsv $T/small/f.tsv"; do
      checks=$((checks + 1))
      case $out in
        --trace*) cmd=("$pccx" run --config tiny -p hi -n 4 $out) ;;
        *) cmd=("$pccx" fidelity --config tiny -n 16 -q $out) ;;
      esac
      timeout 60 "${cmd[@]}" </dev/null >"$T/out" 2>"$T/err"
      rc=$?
      [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -qF "No space left on device" "$T/err" ||
        fail "'${cmd[*]}' on a full disk exited $rc: $(tail -c 300 "$T/err")"
      [ -z "$(ls -A "$T/small")" ] || fail "'${cmd[*]}' left $(ls "$T/small") on the full disk"
    done
    umount "$T/small"
  else
    echo "cli_inputs: no tmpfs could be mounted: the full-disk checks did not run"
  fi

  # a directory given as a model to pccx run is a checkpoint directory, not refused as one
  checks=$((checks + 1))
  rm -f "$T/ckpt/config.json"
  timeout 20 "$pccx" run -m "$T/ckpt" -p hi -n 1 </dev/null >"$T/out" 2>"$T/err"
  rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "run -m on an empty directory exited $rc"
  grep -qF "$T/ckpt/config.json: cannot open" "$T/err" ||
    fail "run -m on an empty directory: $(head -c 300 "$T/err")"
done

cli_done
