#!/usr/bin/env bash
# Install libpccx (static libraries, the shared library with its soname links, public headers,
# pkg-config file) and the pccx command.
# Usage: scripts/install.sh BUILD DESTDIR PREFIX [LIBDIR]     (LIBDIR default: PREFIX/lib)
set -euo pipefail
build=$1
destdir=$2
prefix=$3
libdir=${4:-$prefix/lib}
root="$destdir$prefix"
lib="$destdir$libdir"

install -d "$root/bin" "$lib/pkgconfig" "$root/include/pccx"
install -m 0755 "$build/bin/pccx" "$root/bin/pccx"
for a in libpccx libpccx_sim libpccx_ref libpccx_base libpccx_isa libpccx_num; do
  install -m 0644 "$build/lib/$a.a" "$lib/$a.a"
done
# libpccx.so.X.Y.Z, then libpccx.so.X (the soname) and libpccx.so (for -lpccx) pointing at it
# (the build's own links say which: libpccx.so -> soname -> file)
soname=$(readlink "$build/lib/libpccx.so")
so=$(basename "$(readlink -f "$build/lib/libpccx.so")")
install -m 0644 "$build/lib/$so" "$lib/$so"
ln -sfn "$so" "$lib/$soname"
ln -sfn "$soname" "$lib/libpccx.so"
install -m 0644 host/include/pccx/*.h "$root/include/pccx/"
# the driver's UAPI, for programs that talk to /dev/pccx themselves (pccx(4))
install -m 0644 driver/include/uapi/pccx.h "$root/include/pccx/uapi.h"
sed -e "s|@PREFIX@|$prefix|" -e "s|@LIBDIR@|$libdir|" scripts/pccx.pc.in >"$lib/pkgconfig/pccx.pc"
# the manual pages, pccx(1), libpccx(3) and pccx(4), each under its section
for page in "$build"/man/*.[0-9]; do
  install -d "$root/share/man/man${page##*.}"
  install -m 0644 "$page" "$root/share/man/man${page##*.}/"
done
echo "installed pccx into $root"
