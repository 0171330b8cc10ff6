#!/usr/bin/env bash
# Install the Debian packages a make target needs; idempotent and quiet when all are present.
# Usage: scripts/deps.sh test|demo|qemu|fuzz
set -euo pipefail

common=(gcc make pkg-config check libsubunit-dev libcmocka-dev libfdt-dev device-tree-compiler
        libmicrohttpd-dev libusb-1.0-0-dev)
# The kernel-driver stage (scripts/qemu/run.sh): headers, emulators, initramfs tools, arm64 cross.
qemu=(linux-headers-amd64 qemu-system-x86 qemu-system-arm cpio kmod gcc-aarch64-linux-gnu
      libc6-dev-arm64-cross device-tree-compiler python3)
# The Debian packages' test (tests/scripts/debian_packages.sh): building, checking, DKMS.
debian=(debhelper dh-dkms dpkg-dev fakeroot lintian)
case "${1:-test}" in
  test) pkgs=("${common[@]}" "${qemu[@]}" "${debian[@]}" clang libclang-rt-14-dev nodejs npm
        man-db groff-base curl) ;;
  qemu) pkgs=("${common[@]}" "${qemu[@]}") ;;
  demo) pkgs=("${common[@]}" nodejs npm) ;;
  fuzz) pkgs=("${common[@]}" clang libclang-rt-14-dev) ;;
  *) echo "deps.sh: unknown set '$1' (test|demo|qemu|fuzz)" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
  # A command already on PATH (e.g. a newer node from elsewhere) counts as present.
  case "$p" in
    nodejs) command -v node >/dev/null 2>&1 && continue ;;
    npm) command -v npm >/dev/null 2>&1 && continue ;;
  esac
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "deps.sh: missing Debian packages: ${missing[*]} (run as root, or install them)" >&2
  exit 1
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
