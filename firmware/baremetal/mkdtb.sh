#!/usr/bin/env bash
# The QEMU test image's device trees: QEMU virt's own (qemu-system-aarch64 -machine dumpdtb,
# with the machine options the test runs) plus a node from dts/, compiled with dtc.
#
#   firmware/baremetal/mkdtb.sh OUTDIR "QEMU MACHINE OPTIONS"
#
# Writes OUTDIR/virt.dtb (no node), virt-pccx.dtb (the node and its DMA pool),
# virt-badreg.dtb and virt-smallreg.dtb (broken nodes), virt-trunc.dtb (the first 256 bytes
# of virt-pccx.dtb: QEMU refuses it as -dtb, the test loads it beside the image), and
# virt-el2-pccx.dtb (the machine with virtualization=on, plus the node).
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
# with_node BASE FRAGMENT NAME: BASE.dtb with the fragment added at the root, as NAME.dtb
with_node() {
	dtc -q -I dtb -O dts "$out/$1.dtb" -o "$out/$1.dts"
	# the fragment goes inside the root node: before the last line, the root's "};"
	{ sed '$d' "$out/$1.dts"; cat "$here/dts/$2"; echo "};"; } >"$out/$3.dts"
	dtc -q -I dts -O dtb "$out/$3.dts" -o "$out/$3.dtb"
}
with_node virt pccx-node.dtsi virt-pccx
with_node virt pccx-node-badreg.dtsi virt-badreg
with_node virt pccx-node-smallreg.dtsi virt-smallreg
head -c 256 "$out/virt-pccx.dtb" >"$out/virt-trunc.dtb"
# virt with EL2 (virtualization=on: the image is entered at EL2, PSCI is reached by SMC)
# shellcheck disable=SC2086
qemu-system-aarch64 $opts -machine virtualization=on -machine dumpdtb="$out/virt-el2.dtb" \
	>"$out/dumpdtb-el2.log" 2>&1 || {
	echo "mkdtb: qemu-system-aarch64 -machine virtualization=on,dumpdtb failed:" >&2
	cat "$out/dumpdtb-el2.log" >&2
	exit 1
}
with_node virt-el2 pccx-node.dtsi virt-el2-pccx
