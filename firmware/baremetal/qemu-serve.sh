#!/usr/bin/env bash
# Serve the host link (docs/link.md) from the QEMU test image on a Unix socket, for pccx's
# `serial` backend (docs/firmware.md "Running it in QEMU"):
#
#   firmware/baremetal/qemu-serve.sh BUILD SOCKET [QEMU ARGS...]
#
# BUILD holds fw/pccx-fw-qemu.bin and fw/dtb/virt-pccx.dtb (make -C firmware/baremetal
# BUILD=... all dtbs). QEMU runs in the foreground until it is killed; it listens on SOCKET and
# starts the guest when the first client connects (the boot text then goes to that client,
# whose receiver skips it while hunting for the first frame). A client that goes away can
# connect again: the board keeps its buffers until the next owner's RESET.
set -euo pipefail
build=$1 sock=$2
shift 2
fw=$build/fw
for f in "$fw/pccx-fw-qemu.bin" "$fw/dtb/virt-pccx.dtb"; do
	if [ ! -f "$f" ]; then
		echo "qemu-serve: $f missing (make -C firmware/baremetal BUILD=$build all dtbs)" >&2
		exit 1
	fi
done
exec qemu-system-aarch64 -machine virt -cpu cortex-a53 -m 1024 -nodefaults -no-user-config \
	-display none -no-reboot -chardev socket,id=link,path="$sock",server=on,wait=on \
	-serial chardev:link -semihosting -kernel "$fw/pccx-fw-qemu.bin" \
	-dtb "$fw/dtb/virt-pccx.dtb" -append semihosting "$@"
