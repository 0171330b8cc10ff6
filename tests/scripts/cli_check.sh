#!/usr/bin/env bash
# pccx check: the tiny Gemma on the in-process simulator and on a board over the serial link
# (pccx-board: the board runtime's core with the cycle simulator, on a Unix socket).
#
#   bash tests/scripts/cli_check.sh BUILD
#
# Both paths verified against the reference agree token for token and the latency table has a
# row each; a board whose results are wrong (--corrupt-job N: job N's logits get FLT_MAX as
# element 0) is caught by verify naming the element, and without verify by the comparison
# naming the first differing decode step; a board that is not there is an error naming it.
set -u
. "$(dirname "$0")/lib/cli.sh"
cli_init cli_check "$@"
board=$build/bin/pccx-board
[ -x "$board" ] || { echo "cli_check: $board not built"; exit 1; }

# start_board ARGS...: a board on $T/b.sock for one connection
start_board() {
  rm -f "$T/b.sock"
  "$board" --listen "$T/b.sock" --once "$@" 2>"$T/board.err" &
  for _ in $(seq 50); do [ -S "$T/b.sock" ] && return; sleep 0.1; done
  fail "pccx-board did not listen: $(cat "$T/board.err")"
}

start_board
want_rc 0 "$pccx" check --no-kernel --serial "$T/b.sock"
has "$T/out" "all 2 paths agree on 17 tokens (19 prompt tokens, 17 decode steps, each verified"
checks=$((checks + 1))
grep -qE '^sim +verified +17 ' "$T/out" || fail "no verified sim row: $(cat "$T/out")"
checks=$((checks + 1))
grep -qE '^serial +verified +17 ' "$T/out" || fail "no verified serial row: $(cat "$T/out")"
wait

# the prompt is 19 byte ids, two jobs (its first 18 tokens are one chunk, docs/prefill.md): job 5
# is the third decode step's, whose logits sample token 3
start_board --corrupt-job 5
want_rc 1 "$pccx" check --no-kernel --serial "$T/b.sock"
has "$T/err" "pccx check: serial: verify: token"
has "$T/err" "(position 21): logits differ first at element 0: device 3.40282e+38"
wait
start_board --corrupt-job 5
want_rc 1 "$pccx" check --no-kernel --no-verify --serial "$T/b.sock"
has "$T/out" "paths differ: sim and serial first at decode step 3: token"
checks=$((checks + 1))
grep -qE 'first at decode step 3: token [0-9]+ against 0$' "$T/out" ||
  fail "the corrupted step did not sample token 0: $(cat "$T/out")"
wait

want_rc 1 "$pccx" check --no-kernel --serial "$T/nothing.sock"
has "$T/err" "pccx check: serial: $T/nothing.sock"
cli_done
