#!/usr/bin/env bash
# The option parser every pccx sub-command uses (host/cli/options.c), through the commands:
#
#   bash tests/scripts/cli_options.sh BUILD
#
# --opt VALUE and --opt=VALUE, -o VALUE and -oVALUE, "--", the last of a repeated option;
# one message format for unknown options, missing and bad values, flags given a value,
# missing and unexpected arguments, each followed by the usage and exit status 2 (numerics: 1);
# --help generated from the tables, listing every option.
set -u
. "$(dirname "$0")/lib/cli.sh"
cli_init cli_options "$@"
# usage_error STATUS 'MESSAGE' 'USAGE' CMD...: exactly the message, then the usage line(s)
usage_error() {
  local st=$1 msg=$2 usage=$3; shift 3
  want_rc "$st" "$@"
  [ "$(head -n 1 "$T/err")" = "$msg" ] || fail "'$*' said '$(head -n 1 "$T/err")', not '$msg'"
  [ "$(sed -n 2p "$T/err")" = "$usage" ] || fail "'$*': second line '$(sed -n 2p "$T/err")'"
  [ ! -s "$T/out" ] || fail "'$*' wrote to stdout"
}

printf 'memset cache=fmap entry=0 a=32 b=1 c=1\n' >"$T/m.s"
want_rc 0 "$pccx" asm "$T/m.s" -o "$T/m.bin"

# ---- forms of an option and its value -----------------------------------------------------
want_rc 0 "$pccx" asm "$T/m.s" -o"$T/m2.bin"
cmp -s "$T/m.bin" "$T/m2.bin" || fail "-oFILE and -o FILE differ"
want_rc 0 "$pccx" asm -o /nonexistent/m3.bin "$T/m.s" -o "$T/m3.bin"
cmp -s "$T/m.bin" "$T/m3.bin" || fail "the last -o does not win"
cp "$T/m.bin" "$T/-m.bin"
want_rc 0 "$pccx" dis -- "$T/-m.bin"
has "$T/out" "memset cache=fmap"
cd "$T" && want_rc 0 "$pccx" validate -- -m.bin && cd "$top" || exit 1
has "$T/out" "-m.bin: ok: 1 instructions"
want_rc 0 "$pccx" sim --timeout=100000 --max-buffers=1K "$T/m.bin"
has "$T/out" "1 instructions issued"
want_rc 0 "$pccx" ref --config=tiny -q -n2 --kernel=ref --threads 1 -px
want_rc 0 "$pccx" ref --config tiny -q -n 2 --temp 0 --top-k=5 --min-p 0.1 --rep-penalty 1
want_rc 0 "$pccx" run --config tiny -p hi -n 2 --temp=0 --top-p 0.5 --max-ctx=64

# ---- errors: one format, then the usage ---------------------------------------------------
u='usage: pccx sim JOB [options]'
usage_error 2 "pccx sim: unknown option '--frob'" "$u" "$pccx" sim "$T/m.bin" --frob
usage_error 2 "pccx sim: unknown option '--frob'" "$u" "$pccx" sim "$T/m.bin" --frob=1
usage_error 2 "pccx sim: unknown option '-x'" "$u" "$pccx" sim "$T/m.bin" -x
usage_error 2 "pccx sim: --timeout needs a value (CYCLES)" "$u" "$pccx" sim "$T/m.bin" --timeout
usage_error 2 "pccx sim: bad --timeout '0': expected a whole number of at least 1" "$u" \
  "$pccx" sim "$T/m.bin" --timeout 0
usage_error 2 "pccx sim: bad --timeout '010x': expected a whole number of at least 1" "$u" \
  "$pccx" sim "$T/m.bin" --timeout 010x
usage_error 2 "pccx sim: --no-validate takes no value" "$u" "$pccx" sim "$T/m.bin" --no-validate=1
usage_error 2 "pccx sim: bad --buf '7': expected HANDLE=FILE" "$u" "$pccx" sim "$T/m.bin" --buf 7
usage_error 2 "pccx sim: missing JOB" "$u" "$pccx" sim
usage_error 2 "pccx sim: unexpected argument 'extra'" "$u" "$pccx" sim "$T/m.bin" extra
usage_error 2 "pccx asm: -o FILE.bin is required" "usage: pccx asm FILE.s -o FILE.bin" \
  "$pccx" asm "$T/m.s"
usage_error 2 "pccx isa-table: unexpected argument 'x'" "usage: pccx isa-table" \
  "$pccx" isa-table x
usage_error 2 "pccx ref: bad --kernel 'fast': expected one of auto, ref, avx2, avx512vnni" \
  "usage: pccx ref (--config NAME | -m MODEL) [options]" "$pccx" ref --config tiny --kernel fast
usage_error 2 "pccx ref: bad -n '1e3': expected a whole number from 0 to 1000000" \
  "usage: pccx ref (--config NAME | -m MODEL) [options]" "$pccx" ref --config tiny -n 1e3
usage_error 2 "pccx ref: bad --temp 'hot': expected a number" \
  "usage: pccx ref (--config NAME | -m MODEL) [options]" "$pccx" ref --config tiny --temp hot
usage_error 2 "pccx ref: sampler config: top_k = -1 (must be >= 0; 0 = off)" \
  "usage: pccx ref (--config NAME | -m MODEL) [options]" "$pccx" ref --config tiny --top-k -1
usage_error 2 "pccx ref: give either --config NAME or -m MODEL" \
  "usage: pccx ref (--config NAME | -m MODEL) [options]" "$pccx" ref
usage_error 2 "pccx bench --ref: bad --threads '257': expected a whole number from 0 to 256" \
  "usage: pccx bench --ref [--config NAME | -m MODEL] [-n TOKENS] [options]" \
  "$pccx" bench --ref --threads 257
usage_error 2 "pccx tokenize: --tokenizer FILE is required" \
  "usage: pccx tokenize --tokenizer FILE [options] TEXT" "$pccx" tokenize hello
# numerics has always ended a usage error with status 1
usage_error 1 "pccx numerics: bad -j '0': expected a whole number from 1 to 64" \
  "usage: pccx numerics [--exhaustive | --stride N] [--fn NAME[,NAME...]] [-j N]" \
  "$pccx" numerics -j 0

# ---- help from the tables -------------------------------------------------------------------
want_rc 0 "$pccx" sim --help
for o in --dtb --buf --out --trace --stages --timeout --max-buffers --no-validate "-h, --help"; do
  grep -qE -- "^  (JOB|$o)" "$T/out" || fail "pccx sim --help does not list $o"
done
want_rc 0 "$pccx" run -p --help      # -h/--help anywhere, even where a value goes
has "$T/out" "usage: pccx run"
for o in --temp --top-k --top-p --min-p --rep-penalty; do
  for c in run ref; do
    want_rc 0 "$pccx" "$c" --help
    grep -qE -- "^  $o " "$T/out" || fail "pccx $c --help does not list $o"
  done
done
want_rc 0 "$pccx" ref --help
has "$T/out" "model shape: e4b, e2b, tiny, tiny-vocab"
has "$T/out" "Q4 host kernel: auto, ref, avx2, avx512vnni"

cli_done
