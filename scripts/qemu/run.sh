#!/usr/bin/env bash
# The kernel-driver test stage: build pccx.ko and pccx_simlink.ko against Debian's headers
# (x86-64 with W=1, warnings are failures; arm64 cross-built), build the static guest programs,
# boot Debian's own kernel in QEMU (TCG, never KVM) with a small initramfs, run the guest
# tests against the cycle simulator and the USB path's (a gadget on dummy_hcd in the same
# guest: tests/qemu/usb-link.c, docs/usb.md), then boot arm64 `virt` with a pccx,npu-v002 node in
# its device tree to check the OF probe path. Prints "N passed, N failed"; exits non-zero
# on any failure.
#
#   scripts/qemu/run.sh [BUILD]        (BUILD defaults to build; output in BUILD/qemu)
#   PCCX_QEMU_ARCH="amd64 arm64"       which boots to run
#   PCCX_QEMU_TESTS=name,name          only these guest tests (x86)
#   PCCX_QEMU_EXTRA="a.c dir ..."      further guest programs: each .c file (or every .c in a
#                                      directory) is built like pccx-tests and run in the x86
#                                      guest after it; exit 0 passes, 77 skips, else fails.
#                                      tests/qemu/extra/*.c always run; "none" runs no extras
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build=${1:-build}
case $build in /*) out=$build/qemu ;; *) out=$root/$build/qemu ;; esac   # BUILD may be absolute
cache=$root/.cache/qemu
arches=${PCCX_QEMU_ARCH:-amd64 arm64}
mkdir -p "$out" "$cache"

pass=0 fail=0
note() { echo "qemu: $*"; }
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1${2:+: $2}"; }
finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
  exit $?
}

if ! scripts/deps.sh qemu; then bad deps "cannot install the qemu package set"; finish; fi
start=$(date +%s)

if scripts/qemu/checkpatch.sh "$cache" >"$out/checkpatch.log" 2>&1; then
  ok "checkpatch --strict: driver sources clean"
else
  bad "checkpatch" "$(head -n 20 "$out/checkpatch.log")"
fi

# ---- userspace: libraries and static guest programs --------------------------------------
# build_user ARCH CC: the project's libraries (the Makefile's own rules) + three static programs
# (pccx-tests links all of libpccx: the gemma-decode test runs sessions on both backends)
build_user() {
  local arch=$1 cc=$2 ub=$build/qemu/user-$1 libs
  local fdt_inc=() fdt_lib=(-lfdt)
  if [ "$arch" = arm64 ]; then
    fdt_inc=(-I"$krootarm/usr/include")
    fdt_lib=("$krootarm/usr/lib/aarch64-linux-gnu/libfdt.a")
  fi
  # CFLAGS from the environment: the Makefile appends its own flags to it
  if ! CFLAGS="-O2 -g ${fdt_inc[*]}" make --no-print-directory -j2 BUILD="$ub" CC="$cc" \
      "$ub/lib/libpccx_sim.a" "$ub/lib/libpccx_isa.a" "$ub/lib/libpccx_num.a" \
      "$ub/lib/libpccx_base.a" "$ub/lib/libpccx_ref.a" "$ub/lib/libpccx.a" \
      >"$out/user-$arch.log" 2>&1; then
    tail -n 30 "$out/user-$arch.log"
    return 1
  fi
  # the layer order of the Makefile: each library uses only those after it
  libs=("$ub/lib/libpccx.a" "$ub/lib/libpccx_sim.a" "$ub/lib/libpccx_ref.a"
        "$ub/lib/libpccx_base.a" "$ub/lib/libpccx_isa.a" "$ub/lib/libpccx_num.a"
        "${fdt_lib[@]}" -lm -lpthread)
  local cflags=(-std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -ffp-contract=off -static
                -Iisa -Iisa/num -Isim -Ihost/include -Ihost/base -Ihost/runtime -Ihost/compiler
                -Ihost/text -Ihost/modelfiles -Ireference -Idriver/include -Idriver
                "${fdt_inc[@]}")
  mkdir -p "$out/bin-$arch"
  "$cc" "${cflags[@]}" tests/qemu/init.c -o "$out/bin-$arch/init" &&
  "$cc" "${cflags[@]}" tests/qemu/pccx-simd.c "${libs[@]}" -o "$out/bin-$arch/pccx-simd" &&
  "$cc" "${cflags[@]}" tests/qemu/pccx-tests.c "${libs[@]}" \
      -o "$out/bin-$arch/pccx-tests" || return 1
  # extra guest programs (x86 boot only): the same flags and libraries as pccx-tests
  rm -rf "$out/bin-$arch/extra"
  [ "$arch" = amd64 ] || return 0
  build_usb "$cc" "$ub" "${libs[@]}" || return 1
  mkdir -p "$out/bin-$arch/extra"
  local src name
  for src in $(extra_sources); do
    name=$(basename "$src" .c)
    if [ -e "$out/bin-$arch/extra/$name" ]; then
      echo "extra guest program '$name' given twice ($src)"; return 1
    fi
    "$cc" "${cflags[@]}" -Itests/qemu "$src" "${libs[@]}" \
        -o "$out/bin-$arch/extra/$name" || { echo "extra guest program $src: build failed"; return 1; }
  done
}

# The USB path (x86 boot only, docs/usb.md): pccx-boardd from its own makefile, static; the
# host side usb-link linked dynamically, because Debian's libusb needs libudev, which has no
# static library (the initramfs gets the loader and the libraries it names, see usb_libs).
build_usb() {   # build_usb CC USERBUILD LIBS...
  local cc=$1 ub=$2; shift 2
  if ! make --no-print-directory -C firmware/linux BUILD="$ub" CC="$cc" LDFLAGS=-static \
      >"$out/boardd.log" 2>&1; then
    tail -n 30 "$out/boardd.log"; return 1
  fi
  cp "$ub/firmware/linux/pccx-boardd" "$out/bin-amd64/"
  "$cc" -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -ffp-contract=off \
      -Ihost/include -Ihost/base -Ihost/runtime -Ifirmware/linux -Ifirmware/core -Iisa \
      -Idriver/include tests/qemu/usb-link.c firmware/linux/ffs.c firmware/linux/gadget.c \
      "$@" -o "$out/bin-amd64/usb-link"
}

# usb_libs DIR: the dynamic loader and every library usb-link and libusb need, at their paths
# (libpccx opens libusb-1.0.so.0 itself, so ldd of usb-link alone does not name it).
usb_libs() {
  local d=$1 libusb lib
  libusb=$(ldconfig -p | awk '/libusb-1.0.so.0 .*x86-64/ {print $NF; exit}')
  [ -n "$libusb" ] || { echo "no libusb-1.0.so.0 (install libusb-1.0-0)"; return 1; }
  for lib in $( (ldd "$out/bin-amd64/usb-link"; ldd "$libusb"; echo "$libusb") |
                grep -o '/[^ ]*' | sort -u); do
    mkdir -p "$d$(dirname "$lib")"
    cp -L "$lib" "$d$lib"
  done
}

# The gadget side of the kernel, in load order: dummy_hcd is the UDC and, on the same guest,
# the host controller the gadget is plugged into (test-recipes B).
USB_MODULES="usb-common usbcore udc-core dummy_hcd configfs libcomposite usb_f_fs"
usb_modules() {   # usb_modules DIR KROOT
  local d=$1 kroot=$2 m f
  mkdir -p "$d/lib/usb"
  for m in $USB_MODULES; do
    f=$(find "$kroot/lib/modules" -name "$m.ko*" | head -n 1)
    [ -n "$f" ] || { echo "no $m.ko in $kroot"; return 1; }
    case "$f" in
      *.ko.xz) xz -dc "$f" >"$d/lib/usb/$m.ko" ;;
      *.ko.zst) zstd -qdc "$f" >"$d/lib/usb/$m.ko" ;;
      *) cp "$f" "$d/lib/usb/$m.ko" ;;
    esac
  done
}

# The extra guest programs: tests/qemu/extra/*.c and what PCCX_QEMU_EXTRA names.
extra_sources() {
  local e
  [ "${PCCX_QEMU_EXTRA:-}" = none ] && return 0
  for e in tests/qemu/extra ${PCCX_QEMU_EXTRA:-}; do
    if [ -d "$e" ]; then
      find "$e" -maxdepth 1 -name '*.c' -type f | LC_ALL=C sort
    elif [ -f "$e" ]; then
      echo "$e"
    else
      echo "PCCX_QEMU_EXTRA: '$e' is neither a .c file nor a directory" >&2
      echo /nonexistent/extra.c
    fi
  done
}

# ---- modules -----------------------------------------------------------------------------
build_modules() {   # build_modules ARCH KDIR [make args...]
  local arch=$1 kdir=$2; shift 2
  local log=$out/modules-$arch.log
  if ! make --no-print-directory -C driver KDIR="$kdir" OUT="$out/driver-$arch" W=1 "$@" \
      >"$log" 2>&1; then
    tail -n 40 "$log"
    return 1
  fi
  if grep -E "warning:|error:" "$log" | grep -v "Skipping BTF" >/dev/null; then
    grep -E "warning:|error:" "$log" | head -n 20
    return 1
  fi
}

initramfs() {   # initramfs ARCH
  local arch=$1
  local d=$out/initramfs-$arch
  rm -rf "$d"
  mkdir -p "$d"/{bin,lib,dev,proc,sys,run}
  cp "$out/bin-$arch/init" "$d/init"
  cp "$out/bin-$arch/pccx-simd" "$out/bin-$arch/pccx-tests" "$d/bin/"
  if [ -d "$out/bin-$arch/extra" ]; then cp -r "$out/bin-$arch/extra" "$d/bin/"; fi
  cp "$out/driver-$arch/pccx.ko" "$out/driver-$arch/pccx_simlink.ko" "$d/lib/"
  if [ "$arch" = amd64 ]; then
    cp "$out/bin-$arch/usb-link" "$out/bin-$arch/pccx-boardd" "$d/bin/"
    usb_libs "$d" && usb_modules "$d" "$kroot" || return 1
  fi
  (cd "$d" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$out/initramfs-$arch.cpio.gz"
}

# parse_log ARCH LOG QEMU_STATUS EXPECTED_STATUS: count the guest's PCCX-TEST lines
parse_log() {
  local arch=$1 log=$2 status=$3 want=$4 n_ok n_bad
  n_ok=$(grep -c "^PCCX-TEST ok " "$log" | tr -d '\r')
  n_bad=$(grep -c "^PCCX-TEST FAIL " "$log" | tr -d '\r')
  grep -E "^PCCX-TEST (ok|FAIL|skip) |^  \(also|^  job |^PCCX-BENCH" "$log" | tr -d '\r' |
    sed -e "s/^PCCX-TEST /[$arch] /" -e "s/^PCCX-BENCH /[$arch] bench: /"
  pass=$((pass + n_ok)); fail=$((fail + n_bad))
  if ! grep -q "^PCCX-RESULT" "$log"; then
    bad "[$arch] guest" "no verdict (QEMU status $status; the guest crashed or hung) - see $log"
    grep -E "Kernel panic|BUG:|Oops|WARNING:" "$log" | head -n 5
  elif [ "$status" != "$want" ]; then
    bad "[$arch] qemu-exit" "QEMU exited with $status, expected $want"
  fi
  if awk '/PCCX-DMESG-BEGIN/{f=1} /PCCX-DMESG-END/{f=0} f' "$log" |
      grep -E "WARNING:|BUG:|Oops|unreferenced object|memory leak" >/dev/null; then
    bad "[$arch] dmesg" "warnings, oopses or leak reports in the kernel log"
  fi
}

# ---- x86-64 ----------------------------------------------------------------------------
if [[ " $arches " == *" amd64 "* ]]; then
  kroot=$(scripts/qemu/fetch-kernel.sh "$cache" amd64) || { bad "[amd64] kernel" "download failed"; finish; }
  abi=$(basename "$kroot"); abi=${abi#amd64-}
  kdir=/usr/src/linux-headers-$abi-amd64
  if build_modules amd64 "$kdir"; then ok "[amd64] modules build warning-free (W=1)"; else bad "[amd64] modules"; finish; fi
  if build_user amd64 gcc; then ok "[amd64] guest programs"; else bad "[amd64] guest programs"; finish; fi
  if initramfs amd64; then :; else bad "[amd64] initramfs" "the USB libraries or modules"; finish; fi
  log=$out/serial-amd64.log
  params="fd_quota=8388608 global_quota=12582912 max_bo_size=4194304"
  append="console=ttyS0 panic=-1 oops=panic loglevel=4 pccx.modparams=\"$params\""
  [ -n "${PCCX_QEMU_TESTS:-}" ] && append+=" pccx.tests=$PCCX_QEMU_TESTS"
  t0=$(date +%s)
  timeout 480 qemu-system-x86_64 -machine q35,accel=tcg -cpu max -m 512 -smp 1 \
    -nodefaults -no-user-config -display none -serial stdio -no-reboot \
    -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
    -kernel "$kroot/boot/vmlinuz-$abi-amd64" -initrd "$out/initramfs-amd64.cpio.gz" \
    -append "$append" </dev/null >"$log" 2>&1
  status=$?
  note "amd64 boot + tests: $(( $(date +%s) - t0 )) s (QEMU status $status)"
  parse_log amd64 "$log" "$status" 1
fi

# ---- arm64: the device-tree probe path -------------------------------------------------
if [[ " $arches " == *" arm64 "* ]]; then
  krootarm=$(scripts/qemu/fetch-kernel.sh "$cache" arm64) || { bad "[arm64] kernel" "download failed"; finish; }
  abi=$(basename "$krootarm"); abi=${abi#arm64-}
  kdir=$krootarm/usr/src/linux-headers-$abi-arm64
  if build_modules arm64 "$kdir" ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-; then
    ok "[arm64] modules cross-build warning-free (W=1)"
  else
    bad "[arm64] modules"; finish
  fi
  if build_user arm64 aarch64-linux-gnu-gcc; then ok "[arm64] guest programs"; else bad "[arm64] guest programs"; finish; fi
  initramfs arm64
  # QEMU's virt DTB plus a pccx node: reg as the binding says, a reserved DMA pool, no
  # interrupt (so the polled completion path runs here and the interrupt path on x86).
  qemu_arm=(qemu-system-aarch64 -machine virt -cpu cortex-a53 -m 512 -smp 1 -nodefaults
            -no-user-config -display none -no-reboot)
  "${qemu_arm[@]}" -machine dumpdtb="$out/virt.dtb" >/dev/null 2>&1
  dtc -q -I dtb -O dts "$out/virt.dtb" -o "$out/virt.dts"
  python3 - "$out/virt.dts" <<'EOF'
import sys
p = sys.argv[1]
s = open(p).read()
node = """
	reserved-memory {
		#address-cells = <0x02>;
		#size-cells = <0x02>;
		ranges;
		pccx_pool: pccx-pool@58000000 {
			compatible = "shared-dma-pool";
			reg = <0x00 0x58000000 0x00 0x2000000>;
			reusable;
		};
	};

	npu@a0000000 {
		compatible = "pccx,npu-v002";
		reg = <0x00 0xa0000000 0x00 0x7000>;
		memory-region = <&pccx_pool>;
		pccx,l2-words = <114688>;
		pccx,dma-address-bits = <32>;
	};
"""
i = s.rindex("};")
open(p, "w").write(s[:i] + node + s[i:])
EOF
  dtc -q -I dts -O dtb "$out/virt.dts" -o "$out/virt-pccx.dtb"
  log=$out/serial-arm64.log
  t0=$(date +%s)
  timeout 300 "${qemu_arm[@]}" -dtb "$out/virt-pccx.dtb" -serial stdio \
    -kernel "$krootarm/boot/vmlinuz-$abi-arm64" -initrd "$out/initramfs-arm64.cpio.gz" \
    -append "console=ttyAMA0 panic=-1 oops=panic loglevel=4 pccx.tests=info,job-bitexact,hang-recovery,bo" \
    </dev/null >"$log" 2>&1
  status=$?
  note "arm64 boot + tests: $(( $(date +%s) - t0 )) s (QEMU status $status)"
  parse_log arm64 "$log" "$status" 0
  if grep -q "a0000000.npu: pccx 2" "$log"; then ok "[arm64] probed through the device tree"; else bad "[arm64] OF probe" "no probe line for a0000000.npu"; fi
  if grep -q "polled completion" "$log"; then ok "[arm64] polled completion without an interrupt"; else bad "[arm64] polled completion"; fi
fi

note "total $(( $(date +%s) - start )) s"
finish
