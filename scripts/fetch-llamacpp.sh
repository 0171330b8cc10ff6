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
installed=""
[ -f "$pkgjson" ] && [ -d "$bins" ] &&
	installed="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$pkgjson" | head -n 1)"
if [ "$installed" != "$version" ]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "fetch-llamacpp.sh: npm not found (scripts/deps.sh test installs it)" >&2
		exit 1
	fi
	mkdir -p "$prefix"
	# A private package.json keeps npm from walking up into any parent project.
	[ -f "$prefix/package.json" ] ||
		printf '{ "name": "pccx-llamacpp-cache", "private": true, "type": "module" }\n' \
			>"$prefix/package.json"
	# Only the CPU libraries: the optional GPU builds are large, and no install script runs
	# (with prebuilt libraries present nothing needs building).
	spec="node-llama-cpp@$version @node-llama-cpp/linux-x64@$version"
	if ! npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error --omit=optional \
		--ignore-scripts --cache "$prefix/.npm-cache" $spec >"$prefix/install.log" 2>&1; then
		echo "fetch-llamacpp.sh: npm install $spec failed; log:" >&2
		tail -n 20 "$prefix/install.log" >&2
		exit 1
	fi
	if [ ! -d "$bins" ]; then
		echo "fetch-llamacpp.sh: $spec installed but $bins is missing" >&2
		exit 1
	fi
fi
printf '%s\n' "$prefix"
