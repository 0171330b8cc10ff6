#!/usr/bin/env bash
# Fetch (once) Debian's arm64 libfdt without installing it: apt-get download of libfdt-dev for
# arm64 through a private apt state directory (the host's dpkg architectures stay untouched),
# extracted with dpkg-deb -x into DIR. Prints nothing on success; DIR/usr/include holds
# libfdt.h and DIR/usr/lib/aarch64-linux-gnu/libfdt.a the library.
#
#   firmware/baremetal/fetch-libfdt.sh DIR
set -euo pipefail
dir=$1
lib=$dir/usr/lib/aarch64-linux-gnu/libfdt.a
[ -f "$dir/.libfdt-dev.ok" ] && [ -f "$lib" ] && exit 0

command -v apt-get >/dev/null || { echo "fetch-libfdt: apt-get not found" >&2; exit 1; }
state=$dir/apt-arm64
opts=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64
      -o Dir::State::Lists="$state/lists" -o Dir::Cache="$state/cache"
      -o Dir::State::status=/dev/null -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
mkdir -p "$state/lists/partial" "$state/cache/archives/partial"
if ! apt-get "${opts[@]}" update -qq >"$state/update.log" 2>&1; then
	echo "fetch-libfdt: apt-get update of the arm64 lists failed:" >&2
	tail -n 5 "$state/update.log" >&2
	exit 1
fi
dl=$(mktemp -d "$dir/dl.XXXXXX")
trap 'rm -rf "$dl"' EXIT
if ! (cd "$dl" && apt-get "${opts[@]}" download libfdt-dev >"$state/download.log" 2>&1); then
	echo "fetch-libfdt: apt-get download libfdt-dev (arm64) failed:" >&2
	tail -n 5 "$state/download.log" >&2
	exit 1
fi
dpkg-deb -x "$dl"/libfdt-dev_*_arm64.deb "$dir"
[ -f "$lib" ] || { echo "fetch-libfdt: the package has no $lib" >&2; exit 1; }
rm -rf "$state"
touch "$dir/.libfdt-dev.ok"
