#!/usr/bin/env bash
# make install into a DESTDIR, then build docs/example.c against the installed library with
# pkg-config and run it.
set -euo pipefail
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make --no-print-directory -s install BUILD="$build" DESTDIR="$tmp/root" PREFIX=/opt/pccx >/dev/null
export PKG_CONFIG_PATH="$tmp/root/opt/pccx/lib/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$tmp/root"
test -x "$tmp/root/opt/pccx/bin/pccx"
cc -std=c11 -Wall -Wextra -Werror docs/example.c \
  $(pkg-config --cflags --libs --static pccx) -o "$tmp/example"
out=$("$tmp/example")
echo "$out"
grep -q "all stages bit-exact" <<<"$out"
echo "install_example: installed, built against pkg-config and ran"
