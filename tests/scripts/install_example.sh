#!/usr/bin/env bash
# make install into a DESTDIR, then build docs/example.c against the installed library with
# pkg-config both ways and run both: shared (`pkg-config --libs pccx`: needs libpccx.so.MAJOR,
# found through the soname) and static (`-static` with `pkg-config --static --libs pccx`: no
# libpccx at run time, nothing dynamic at all).
set -euo pipefail
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make --no-print-directory -s install BUILD="$build" DESTDIR="$tmp/root" PREFIX=/opt/pccx >/dev/null
lib=$tmp/root/opt/pccx/lib
export PKG_CONFIG_PATH="$lib/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$tmp/root"
major=$(sed -n 's/^Version: *\([0-9]*\).*/\1/p' scripts/pccx.pc.in)
test -x "$tmp/root/opt/pccx/bin/pccx"
test -f "$lib/libpccx.a"
test "$(readlink "$lib/libpccx.so")" = "libpccx.so.$major"
test -f "$(readlink -f "$lib/libpccx.so.$major")"

# shared: the soname is what the program needs, and the installed library is what it loads
cc -std=c11 -Wall -Wextra -Werror docs/example.c \
  $(pkg-config --cflags --libs pccx) -o "$tmp/example-shared"
needed=$(readelf -d "$tmp/example-shared" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "example-shared needs: $(echo $needed)"
grep -qx "libpccx.so.$major" <<<"$needed"
loads=$(LD_LIBRARY_PATH="$lib" ldd "$tmp/example-shared" | grep 'libpccx\.')
echo "$loads"
grep -qF "$lib/libpccx.so.$major" <<<"$loads"
out=$(LD_LIBRARY_PATH="$lib" "$tmp/example-shared")
echo "$out"
grep -q "all stages bit-exact" <<<"$out"

# static: the same source, no dynamic section, so no libpccx (nor anything else) to load
cc -static -std=c11 -Wall -Wextra -Werror docs/example.c \
  $(pkg-config --cflags --libs --static pccx) -o "$tmp/example-static"
if readelf -d "$tmp/example-static" | grep -q NEEDED; then
  echo "example-static needs: $(readelf -d "$tmp/example-static" | grep NEEDED)"
  exit 1
fi
out2=$(env -u LD_LIBRARY_PATH "$tmp/example-static")
grep -q "all stages bit-exact" <<<"$out2"
[ "$out" = "$out2" ] || { echo "the static build printed other tokens: $out2"; exit 1; }
echo "install_example: installed, built against pkg-config (shared and static) and ran both"
