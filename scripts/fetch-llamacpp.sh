#!/usr/bin/env bash
# Install llama.cpp's prebuilt CPU libraries as the npm package node-llama-cpp packs them
# (x86-64 Linux only) into the repository's ignored .cache/npm-llamacpp, for `make bench` to
# measure llama.cpp beside the reference on the same GGUF and machine. Idempotent; prints the
# install prefix. Nothing of it is built or linked into pccx.
# Environment: PCCX_LLAMACPP_CACHE overrides the prefix; PCCX_LLAMACPP_PKG_VERSION the pinned
# version (default 3.22.1, which packs llama.cpp v0.5.0).
set -euo pipefail

version="${PCCX_LLAMACPP_PKG_VERSION:-3.22.1}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="${PCCX_LLAMACPP_CACHE:-$root/.cache/npm-llamacpp}"
pkgjson="$prefix/node_modules/node-llama-cpp/package.json"
bins="$prefix/node_modules/@node-llama-cpp/linux-x64/bins"

if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
	echo "fetch-llamacpp.sh: only the x86-64 Linux libraries are fetched" >&2
	exit 1
fi
# shellcheck source=scripts/npm-cache.sh
. "$root/scripts/npm-cache.sh"
installed=""
[ -f "$pkgjson" ] && [ -d "$bins" ] &&
	installed="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkgjson" | head -n 1)"
if [ "$installed" != "$version" ]; then
	# Only the CPU libraries: the optional GPU builds are large, and no install script runs
	# (with prebuilt libraries present nothing needs building).
	npm_cache_install fetch-llamacpp.sh "$prefix" --omit=optional --ignore-scripts \
		"node-llama-cpp@$version" "@node-llama-cpp/linux-x64@$version" || exit 1
	if [ ! -d "$bins" ]; then
		echo "fetch-llamacpp.sh: node-llama-cpp@$version installed but $bins is missing" >&2
		exit 1
	fi
fi
printf '%s\n' "$prefix"
