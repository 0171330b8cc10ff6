#!/usr/bin/env bash
# The QEMU test image's device trees: QEMU virt's own (qemu-system-aarch64 -machine dumpdtb,
# with the machine options the test runs) plus a node from dts/, compiled with dtc.
#
#   firmware/baremetal/mkdtb.sh OUTDIR "QEMU MACHINE OPTIONS"
#
# Writes OUTDIR/virt.dtb (no node), virt-pccx.dtb (the node and its DMA pool),
# virt-badreg.dtb and virt-smallreg.dtb (broken nodes) and virt-trunc.dtb (the first 256 bytes
# of virt-pccx.dtb: QEMU refuses it as -dtb, the test loads it beside the image).
set -euo pipefail
out=$1
opts=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
# shellcheck disable=SC2086
qemu-system-aarch64 $opts -machine dumpdtb="$out/virt.dtb" >"$out/dumpdtb.log" 2>&1 || {
	echo "mkdtb: qemu-system-aarch64 -machine dumpdtb failed:" >&2
	cat "$out/dumpdtb.log" >&2
	exit 1
}
dtc -q -I dtb -O dts "$out/virt.dtb" -o "$out/virt.dts"
for v in pccx badreg smallreg; do
	case $v in
	pccx) frag=$here/dts/pccx-node.dtsi ;;
	*) frag=$here/dts/pccx-node-$v.dtsi ;;
	esac
	# the fragment goes inside the root node: before the last line, the root's "};"
	{ sed '$d' "$out/virt.dts"; cat "$frag"; echo "};"; } >"$out/virt-$v.dts"
	dtc -q -I dts -O dtb "$out/virt-$v.dts" -o "$out/virt-$v.dtb"
done
head -c 256 "$out/virt-pccx.dtb" >"$out/virt-trunc.dtb"
