# Sourced by the fetch-*.sh scripts: pinned npm packages installed into a private prefix.
# npm_cache_install WHO PREFIX NPM-ARGUMENTS...: returns 1, with WHO's message and the tail of
# PREFIX/install.log, when npm is missing or the install fails.
npm_cache_install() {
	local who=$1 prefix=$2
	shift 2
	if ! command -v npm >/dev/null 2>&1; then
		echo "$who: npm not found (scripts/deps.sh test installs it)" >&2
		return 1
	fi
	mkdir -p "$prefix"
	# A private package.json keeps npm from walking up into any parent project.
	[ -f "$prefix/package.json" ] ||
		printf '{ "name": "pccx-npm-cache", "private": true }\n' >"$prefix/package.json"
	if ! npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
		--cache "$prefix/.npm-cache" "$@" >"$prefix/install.log" 2>&1; then
		echo "$who: npm install $* failed; log:" >&2
		tail -n 20 "$prefix/install.log" >&2
		return 1
	fi
}
