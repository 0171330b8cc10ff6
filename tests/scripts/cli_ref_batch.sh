#!/usr/bin/env bash
# pccx ref --batch: a prompt prefilled in batches gives the text token-by-token prefill gives
# (the same bits: tests/unit/test_batch_prefill.c compares the KV caches), for batch sizes
# that divide the prompt and that do not, for every family; a model with experts falls back
# to token by token with a notice; --batch out of range is refused.
#
#   bash tests/scripts/cli_ref_batch.sh BUILD
set -u
. "$(dirname "$0")/lib/cli.sh"
cli_init cli_ref_batch "$@"

prompt="The quick brown fox jumps over the lazy dog, again and again and again"
for cfg in tiny tiny-gemma tiny-gemma2 tiny-gemma3 tiny-gemma4; do
  want_rc 0 "$pccx" ref --config "$cfg" -p "$prompt" -n 12 --batch 0 --threads 2
  cp "$T/out" "$T/want"
  grep -q 'prompt:' "$T/err" && fail "$cfg --batch 0: a batched prompt line: $(cat "$T/err")"
  for b in 1 7 64; do
    want_rc 0 "$pccx" ref --config "$cfg" -p "$prompt" -n 12 --batch "$b" --threads 2
    cmp -s "$T/out" "$T/want" || fail "$cfg --batch $b: the text differs from token by token"
    has "$T/err" "per batch)"
  done
done

want_rc 0 "$pccx" ref --config tiny-gemma4-moe -p "$prompt" -n 4 --batch 8
has "$T/err" "prompt token by token: batched prefill: config 'tiny-gemma4-moe' has experts"

want_fail "$pccx" ref --config tiny -p "$prompt" -n 4 --batch 257
has "$T/err" "batch"
cli_done
