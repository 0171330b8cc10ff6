#!/usr/bin/env bash
# pccx bench --sparse: a sparse layer's W_up three ways on the simulator (docs/sim.md, "Why a
# device extension and not the host"). Not its speed: that each way reads exactly the rows it
# must (the command checks its own byte counts and fails otherwise), that fewer rows mean
# fewer bytes (rowmask < host < dense), that the host way issues more GEMVs than the pieces,
# that the figures do not depend on the machine, and the refusals.
# Usage: tests/scripts/cli_bench_sparse.sh BUILD
. "$(dirname "$0")/lib/cli.sh"
cli_init cli_bench_sparse "$@"

# field N of the line of way W (rowmask, host, dense) in $T/out
field() { awk -v w="$1" -v n="$2" '$1 == w { print $n; exit }' "$T/out"; }

for c in tiny e2b; do
  want_rc 0 "$pccx" bench --sparse --config "$c" --seed 7
  for w in rowmask host dense; do
    checks=$((checks + 1))
    [ -n "$(field $w 2)" ] || fail "bench --sparse --config $c: no '$w' line: $(cat "$T/out")"
  done
  rb=$(field rowmask 6) hb=$(field host 6) db=$(field dense 6) hg=$(field host 10)
  checks=$((checks + 1))
  [ "$rb" -lt "$hb" ] && [ "$hb" -lt "$db" ] ||
    fail "$c: bytes of weights rowmask $rb, host $hb, dense $db: not increasing"
  checks=$((checks + 1))
  [ "$hg" -gt 4 ] || fail "$c: the host way issued $hg GEMVs"
  has "$T/out" "of which the activation to the host"
  # cycles and bytes are the simulator's: the same again (the scan's time aside)
  grep -v "scan" "$T/out" >"$T/first"
  want_rc 0 "$pccx" bench --sparse --config "$c" --seed 7
  checks=$((checks + 1))
  grep -v "scan" "$T/out" | cmp -s - "$T/first" || fail "$c: a second run printed other figures"
done

want_fail "$pccx" bench --sparse --config gemma-2b
has "$T/err" "config 'gemma-2b' has no sparse FFN layers"
want_fail "$pccx" bench --sparse --config nosuch
has "$T/err" "config 'nosuch': unknown"
want_rc 2 "$pccx" bench --sparse --seed x

cli_done
