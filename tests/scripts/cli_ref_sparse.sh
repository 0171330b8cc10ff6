#!/usr/bin/env bash
# The reference on its own reads only the kept W_up rows and W_down columns of the sparse
# layers (PCCX_REF_EXEC_FEATURES): pccx ref gives the text it gives with the dense FFN (which
# --dump-stages keeps, its stages compared as they are), and pccx bench --ref reads fewer bytes
# than with --no-rowmask, says which way it ran, times both with --vs-dense, and refuses the
# two flags together. The bits themselves: tests/unit/test_reference.c.
#
#   bash tests/scripts/cli_ref_sparse.sh BUILD
set -u
. "$(dirname "$0")/lib/cli.sh"
cli_init cli_ref_sparse "$@"

# the MB streamed per token in $T/out
streamed() { awk '$1 == "streamed" { print $4; exit }' "$T/out"; }
# the NPU ops per token in $T/out
ops() { awk '$1 == "NPU" { print $5; exit }' "$T/out"; }

prompt="The quick brown fox jumps over the lazy dog"
for cfg in tiny; do
  want_rc 0 "$pccx" ref --config "$cfg" -p "$prompt" -n 8 --threads 2 --max-ctx 64
  cp "$T/out" "$T/sparse"
  want_rc 0 "$pccx" ref --config "$cfg" -p "$prompt" -n 8 --threads 2 --max-ctx 64 \
    --dump-stages "$T/stages"
  checks=$((checks + 1))
  cmp -s "$T/out" "$T/sparse" || fail "$cfg: the text differs from the dense FFN's"
  rm -rf "$T/stages"

  want_rc 0 "$pccx" bench --ref --config "$cfg" -n 2 --threads 2 --max-ctx 64
  has "$T/out" "sparse layers' FFN            sparse"
  sb=$(streamed) so=$(ops)
  want_rc 0 "$pccx" bench --ref --config "$cfg" -n 2 --threads 2 --max-ctx 64 --no-rowmask
  has "$T/out" "sparse layers' FFN             dense"
  db=$(streamed)
  checks=$((checks + 1))
  awk -v s="$sb" -v d="$db" 'BEGIN { exit !(s > 0 && s < d) }' ||
    fail "$cfg: $sb MB streamed per token sparse, $db MB dense"
  want_rc 0 "$pccx" bench --ref --config "$cfg" -n 2 --threads 2 --max-ctx 64 --vs-dense
  has "$T/out" "decode, dense FFN"
  checks=$((checks + 1))
  [ "$(ops)" = "$so" ] || fail "$cfg --vs-dense: $(ops) NPU ops per sparse token, not $so"
  checks=$((checks + 1))
  awk -v s="$(streamed)" -v b="$sb" 'BEGIN { exit !(s > 0.9 * b && s < 1.1 * b) }' ||
    fail "$cfg --vs-dense: $(streamed) MB per sparse token, against $sb"
done

# a family without sparse layers says nothing of them
want_rc 0 "$pccx" bench --ref --config tiny-gemma3 -n 2 --threads 2
checks=$((checks + 1))
grep -q "sparse layers'" "$T/out" && fail "tiny-gemma3: a sparse FFN line: $(cat "$T/out")"

want_rc 2 "$pccx" bench --ref --config tiny -n 2 --vs-dense --no-rowmask
has "$T/err" "--vs-dense compares with --no-rowmask; give one"
cli_done
