#!/usr/bin/env bash
# Fetch (once) Debian's kernel matching the installed linux-headers-amd64 ABI, without
# installing it: apt-get download + dpkg-deb -x into the cache.
#
#   scripts/qemu/fetch-kernel.sh CACHE amd64|arm64
#
# Prints the extraction root. For arm64 it also extracts the arm64 headers, pointing their
# kbuild scripts at the host's (x86) linux-kbuild so modules cross-build. arm64 packages are
# listed through a private apt state directory, so the host's dpkg architectures are untouched.
set -euo pipefail
cache=$1 arch=$2

hdr=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1)
[ -n "$hdr" ] || { echo "fetch-kernel: no /usr/src/linux-headers-*-amd64 (install linux-headers-amd64)" >&2; exit 1; }
abi=${hdr#/usr/src/linux-headers-}
abi=${abi%-amd64}
root=$cache/$arch-$abi
mkdir -p "$root"

fetch() {   # fetch PACKAGE [apt options...]
  local pkg=$1; shift
  local stamp=$root/.$pkg.ok
  [ -f "$stamp" ] && return 0
  local dl; dl=$(mktemp -d "$cache/dl.XXXXXX")
  (cd "$dl" && apt-get -o APT::Sandbox::User=root "$@" download "$pkg" >/dev/null)
  dpkg-deb -x "$dl"/*.deb "$root"
  rm -rf "$dl"
  touch "$stamp"
}

case "$arch" in
amd64)
  fetch "linux-image-$abi-amd64"
  ;;
arm64)
  lists=$cache/apt-arm64
  opts=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64
        -o Dir::State::Lists="$lists/lists" -o Dir::Cache="$lists/cache"
        -o Dir::State::status=/dev/null -o Debug::NoLocking=1)
  if [ ! -f "$root/.linux-image-$abi-arm64.ok" ] || [ ! -f "$root/.linux-headers-$abi-arm64.ok" ] ||
     [ ! -f "$root/.libfdt-dev.ok" ]; then
    mkdir -p "$lists/lists/partial" "$lists/cache/archives/partial"
    apt-get "${opts[@]}" update -qq >/dev/null
  fi
  fetch "linux-image-$abi-arm64" "${opts[@]}"
  fetch "linux-headers-$abi-arm64" "${opts[@]}"
  fetch libfdt-dev "${opts[@]}"     # libfdt.a for the static arm64 simulator daemon
  # The arm64 headers refer to the common headers and to linux-kbuild by absolute paths;
  # point both at the host's copies (the kbuild tools run on the build machine).
  kb=$(ls -d /usr/lib/linux-kbuild-* | sort -V | tail -n 1)
  mkdir -p "$root/usr/lib" "$root/usr/src"
  ln -sfn "$kb" "$root/usr/lib/$(basename "$kb")"
  ln -sfn "/usr/src/linux-headers-$abi-common" "$root/usr/src/linux-headers-$abi-common"
  ;;
*) echo "fetch-kernel: unknown arch $arch" >&2; exit 2 ;;
esac
echo "$root"
