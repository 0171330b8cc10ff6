#!/usr/bin/env bash
# Run the kernel's checkpatch.pl (--strict) on the driver's sources. Debian's kbuild tree does
# not ship it, so it is taken once from the linux-source package matching the installed headers
# (apt-get download + dpkg-deb -x, only three files kept) into CACHE.
#
#   scripts/qemu/checkpatch.sh CACHE
set -euo pipefail
mkdir -p "$1"; cache=$(cd "$1" && pwd)
hdr=$(ls -d /usr/src/linux-headers-*-amd64 | sort -V | tail -n 1)
ver=$(sed -n 's/^VERSION = //p; s/^PATCHLEVEL = //p' "${hdr%-amd64}-common/Makefile" | paste -sd.)
dir=$cache/checkpatch-$ver
if [ ! -f "$dir/checkpatch.pl" ]; then
  tmp=$(mktemp -d "$cache/src.XXXXXX")
  (cd "$tmp" && apt-get -o APT::Sandbox::User=root download "linux-source-$ver" >/dev/null)
  dpkg-deb --fsys-tarfile "$tmp"/linux-source-*.deb |
    tar -xO --wildcards './usr/src/linux-source-*.tar.xz' |
    tar -xJ -C "$tmp" --wildcards '*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
      '*/scripts/const_structs.checkpatch'
  mkdir -p "$dir"
  cp "$tmp"/linux-source-*/scripts/{checkpatch.pl,spelling.txt,const_structs.checkpatch} "$dir/"
  rm -rf "$tmp"
fi
cd "$(dirname "$0")/../../driver"
perl "$dir/checkpatch.pl" --no-tree --strict --quiet --max-line-length=100 -f \
  pccx_drv.c pccx_mem.c pccx_job.c pccx_debugfs.c pccx_simlink.c pccx_drv.h pccx_hw.h \
  pccx_simlink.h include/uapi/pccx.h
