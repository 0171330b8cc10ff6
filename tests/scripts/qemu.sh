#!/usr/bin/env bash
# The kernel-driver stage of `make test`: pccx.ko in Debian's kernel under QEMU, with the cycle
# simulator as the device (scripts/qemu/run.sh, also `make qemu-test`). Prints its own
# "N passed, N failed" and exits non-zero on failure. $1 is the build directory.
set -u
cd "$(dirname "$0")/../.."
exec scripts/qemu/run.sh "${1:-build}"
