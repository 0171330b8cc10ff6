#!/usr/bin/env bash
# Install libpccx (static libraries, public headers, pkg-config file) and the pccx command.
# Usage: scripts/install.sh BUILD DESTDIR PREFIX
set -euo pipefail
build=$1
destdir=$2
prefix=$3
root="$destdir$prefix"

install -d "$root/bin" "$root/lib/pkgconfig" "$root/include/pccx"
install -m 0755 "$build/bin/pccx" "$root/bin/pccx"
for lib in libpccx libpccx_sim libpccx_ref libpccx_base libpccx_isa libpccx_num; do
  install -m 0644 "$build/lib/$lib.a" "$root/lib/$lib.a"
done
install -m 0644 host/include/pccx/*.h "$root/include/pccx/"
sed -e "s|@PREFIX@|$prefix|" scripts/pccx.pc.in >"$root/lib/pkgconfig/pccx.pc"
# the manual pages, pccx(1), libpccx(3) and pccx(4), each under its section
for page in "$build"/man/*.[0-9]; do
  install -d "$root/share/man/man${page##*.}"
  install -m 0644 "$page" "$root/share/man/man${page##*.}/"
done
echo "installed pccx into $root"
