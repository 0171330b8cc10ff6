#!/usr/bin/env bash
# The bare-metal AArch64 firmware under qemu-system-aarch64 -M virt -cpu cortex-a53
# (docs/firmware.md): build both images, the host unit tests of its board code (cmocka) and the
# device trees; boot the QEMU test image (the cycle simulator behind its register accessor)
# with the pccx,npu-v002 node and check what it discovered and its self-test job; boot it with
# broken device trees (no node, a reg of the wrong length, a reg too small, a truncated blob,
# a malformed one, none at all) and check each gives its message and a clean exit with the
# configuration status; then serve the link on its UART and run the tiny Gemma through it with
# pccx check (backend serial), with the same tokens as the in-process simulator.
#
#   bash tests/scripts/firmware_qemu.sh BUILD
set -u
cd "$(dirname "$0")/../.."
root=$PWD
build=${1:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
fw=$build/fw
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1${2:+: $2}"; }
finish() {
  echo "firmware_qemu: $pass passed, $fail failed"
  [ "$fail" -eq 0 ]
  exit $?
}

for tool in aarch64-linux-gnu-gcc qemu-system-aarch64 dtc; do
  if ! command -v "$tool" >/dev/null; then
    echo "firmware_qemu: $tool not found" \
         "(Debian: gcc-aarch64-linux-gnu, qemu-system-arm, device-tree-compiler)"
    exit 77
  fi
done

if make --no-print-directory -C firmware/baremetal BUILD="$build" -j2 all dtbs \
  >"$build/fw-build.log" 2>&1; then
  ok "both images and the device trees build warning-free"
else
  bad "build" "$(tail -n 30 "$build/fw-build.log")"
  finish
fi
if make --no-print-directory -C firmware/baremetal BUILD="$build" check \
  >"$build/fw-check.log" 2>&1; then
  ok "host unit tests (cmocka): $(grep -c 'PASSED' "$build/fw-check.log") programs passed"
else
  bad "host unit tests (cmocka)" "$(tail -n 40 "$build/fw-check.log")"
fi

T=$(mktemp -d)
qpid=
trap '[ -n "$qpid" ] && kill "$qpid" 2>/dev/null; rm -rf "$T"' EXIT
qemu=(qemu-system-aarch64 -machine virt -cpu cortex-a53 -m 1024 -nodefaults -no-user-config
      -display none -no-reboot)

# boot NAME STATUS KERNEL QEMU-ARGS...: run it with the serial port on a file; $log is the
# console (CR dropped); fails unless QEMU exits with STATUS.
boot() {
  local name=$1 want=$2 kernel=$3 st
  shift 3
  log=$T/$name.log
  timeout 120 "${qemu[@]}" -serial "file:$T/$name.raw" -kernel "$kernel" "$@" \
    </dev/null >"$T/$name.qemu" 2>&1
  st=$?
  tr -d '\r' <"$T/$name.raw" >"$log"
  if [ "$st" -ne "$want" ]; then
    bad "$name" "QEMU exit status $st, expected $want:" \
        "$(tail -n 5 "$log" "$T/$name.qemu")"
    return 1
  fi
  return 0
}

# expect NAME LINE...: each fixed LINE must be a line of $log
expect() {
  local name=$1 l
  shift
  for l in "$@"; do
    if ! grep -qxF -- "$l" "$log"; then
      bad "$name" "no line '$l' in: $(cat "$log")"
      return 1
    fi
  done
  ok "$name"
}

img=$fw/pccx-fw-qemu.bin
dtb=$fw/dtb
# Expected values come from the device tree source, not from the firmware.
nodev=" (QEMU has no pccx device)"
e=pccx-fw:\ error:\ npu@a0000000
if boot discovery 0 "$img" -semihosting -dtb "$dtb/virt-pccx.dtb" \
  -append "semihosting pccx.selftest"; then
  expect "discovery: node, registers, interrupt, DMA region, UART; self-test job" \
    "pccx-fw: NPU npu@a0000000: registers 0xa0000000+0x7000" \
    "pccx-fw: NPU interrupt: SPI 100 (GIC INTID 132, flags 0x4); completion is polled" \
    "pccx-fw: registers: the cycle simulator built into this image$nodev" \
    "pccx-fw: exit status 0"
  grep -q '^pccx-fw: RAM 0x40000000+0x40000000, UART pl011@9000000 at 0x9000000$' "$log" ||
    bad "discovery: RAM and UART" "$(cat "$log")"
  grep -q '^pccx-fw: DMA pool 0x70000000+0x10000000 (pccx-pool@70000000, 32-bit DMA), heap ' \
    "$log" || bad "discovery: DMA pool" "$(cat "$log")"
  grep -q '^pccx-fw: device ID 0x504343580200' "$log" ||
    bad "discovery: the ID register holds PCCX 2.0" "$(cat "$log")"
  grep -q '^pccx-fw: self-test: host -> L2 -> host copy bit-exact, 3 instructions retired' \
    "$log" || bad "self-test job" "$(cat "$log")"
fi

# broken device trees: status 1 (PCCX_BM_EXIT_CONFIG) through semihosting
if boot no-node 1 "$img" -semihosting -dtb "$dtb/virt.dtb" -append semihosting; then
  expect "no pccx node: message and clean exit" \
    'pccx-fw: error: no enabled node compatible with "pccx,npu-v002" in the device tree'
fi
if boot bad-reg 1 "$img" -semihosting -dtb "$dtb/virt-badreg.dtb" -append semihosting; then
  expect "reg of the wrong length: message and clean exit" \
    "$e: reg is 12 bytes, expected a multiple of 16 (2 address + 2 size cells)"
fi
if boot small-reg 1 "$img" -semihosting -dtb "$dtb/virt-smallreg.dtb" -append semihosting; then
  expect "reg smaller than the registers: message and clean exit" \
    "$e: reg size 0x1000 is smaller than the 0x7000 bytes of the registers"
fi
# QEMU itself refuses a truncated -dtb: the blob is loaded beside the image and named by
# pccx.fdt=ADDR[,LEN] in the good tree's boot arguments.
tsz=$(stat -c %s "$dtb/virt-trunc.dtb")
full=$(( $(od -An -tu1 -j4 -N4 "$dtb/virt-trunc.dtb" | awk '{print ($1*256+$2)*65536+$3*256+$4}') ))
if boot truncated 1 "$img" -semihosting -dtb "$dtb/virt-pccx.dtb" \
  -device loader,file="$dtb/virt-trunc.dtb",addr=0x60000000,force-raw=on \
  -append "semihosting pccx.fdt=0x60000000,$tsz"; then
  expect "truncated blob: message and clean exit" \
    "pccx-fw: error: device tree: truncated: the header says $full bytes, $tsz are there"
fi
if boot malformed 1 "$img" -semihosting -dtb "$dtb/virt-pccx.dtb" \
  -device loader,file="$dtb/virt-trunc.dtb",addr=0x60000000,force-raw=on \
  -append "semihosting pccx.fdt=0x60000000"; then
  expect "blob cut short in memory (no length given): message and clean exit" \
    "pccx-fw: error: device tree: malformed (FDT_ERR_BADSTRUCTURE)"
fi
# An ELF is entered with x0 = 0: no device tree at all; semihosting is tried regardless.
if boot no-tree 1 "$fw/pccx-fw-qemu.elf" -semihosting; then
  expect "no device tree: message and clean exit" \
    "pccx-fw: error: no device tree (the boot loader passed address 0)"
fi
# Without -semihosting the HLT is undefined: the firmware falls back to PSCI SYSTEM_OFF,
# which QEMU reports as 0; the status is on the console.
if boot psci-exit 0 "$img" -dtb "$dtb/virt.dtb" -append semihosting; then
  expect "no semihosting: PSCI power-off after the message" "pccx-fw: exit status 1"
fi

# Entered at EL2 (virt with virtualization=on): dropped to EL1, the same boot.
if boot el2 0 "$img" -machine virtualization=on -semihosting -dtb "$dtb/virt-el2-pccx.dtb" \
  -append "semihosting pccx.selftest"; then
  grep -q '^pccx-fw: self-test: host -> L2 -> host copy bit-exact' "$log" ||
    bad "entered at EL2" "no self-test line: $(cat "$log")"
  expect "entered at EL2: dropped to EL1, the same boot and self-test" \
    "pccx-fw: bare-metal AArch64 firmware, entered at EL2, device tree at 0x48000000"
fi
if boot psci-smc 0 "$img" -machine virtualization=on -dtb "$dtb/virt-el2.dtb"; then
  expect "entered at EL2, no semihosting: PSCI power-off through SMC" "pccx-fw: exit status 1"
fi
# The board image in QEMU: nothing answers at the node's address, so reading the ID register
# (base + 0x100) is a synchronous external abort, which the vectors report before stopping.
if boot board-image 4 "$fw/pccx-fw.bin" -semihosting -dtb "$dtb/virt-pccx.dtb" \
  -append semihosting; then
  abort='^pccx-fw: exception: sync, data abort \(ESR 0x9[0-9a-f]+\) at ELR 0x[0-9a-f]+, '
  if grep -qE "${abort}FAR 0xa0000100, " "$log"; then
    ok "board image without a device: the data abort at ID (0xa0000100) reported, status 4"
  else
    bad "board image without a device" "no exception line: $(cat "$log")"
  fi
fi

# The link: the QEMU image serves docs/link.md on its UART, here a Unix socket; pccx check runs
# the tiny Gemma on the in-process simulator and through the board (backend serial), both
# verified against the reference (logits and KV rows each step), and must see the same tokens.
pccx=$build/bin/pccx
if [ ! -x "$pccx" ]; then
  bad "served link" "$pccx not built (make BUILD=$build)"
  finish
fi
sock=$T/link.sock
timeout 1800 firmware/baremetal/qemu-serve.sh "$build" "$sock" </dev/null >"$T/serve.qemu" 2>&1 &
qpid=$!
for _ in $(seq 300); do [ -S "$sock" ] && break; sleep 0.1; done
# A storm first: noise, a header with a bad CRC, a payload with a bad CRC, an unknown type, a
# frame cut short (dropped after the 200 ms idle rule); each answered by its error code, and a
# PING after each echoed with its own seq: the link stays in step.
if python3 - "$sock" >"$T/storm.out" 2>&1 <<'PY'
import os, socket, struct, sys, time, zlib
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(20)
buf = b""
def hdr(t, seq, n, flags=0):
    h = struct.pack("<4sBBHII", b"PCXL", 1, t, flags, seq, n)
    return h + struct.pack("<I", zlib.crc32(h))
def frame(t, seq, p=b""):
    return hdr(t, seq, len(p)) + p + struct.pack("<I", zlib.crc32(p))
def reply():
    global buf
    while True:
        i = buf.find(b"PCXL")
        if i >= 0 and len(buf) >= i + 20:
            t, fl, seq, n = struct.unpack("<BHII", buf[i + 5:i + 16])
            if len(buf) >= i + 24 + n:
                p = buf[i + 20:i + 20 + n]
                buf = buf[i + 24 + n:]
                return t, seq, p
        buf += s.recv(65536)
def error_code(want, what):
    t, seq, p = reply()
    code = struct.unpack("<I", p[:4])[0] if t == 0x7f else None
    if code != want:
        sys.exit("%s: expected error %d, got type %#x code %s" % (what, want, t, code))
    print("%s: error %d" % (what, code))
def ping(seq):
    data = os.urandom(300)
    s.sendall(frame(2, seq, data))
    t, rseq, p = reply()
    if (t, rseq, p) != (2, seq, data):
        sys.exit("PING %d after the bad frame: type %#x seq %d" % (seq, t, rseq))
s.sendall(os.urandom(2000).replace(b"PCXL", b"pcxl"))
ping(1)
bad = bytearray(hdr(2, 9, 4)); bad[16] ^= 1
s.sendall(bytes(bad) + b"abcd" + b"\0" * 4)
error_code(1, "header CRC")
ping(2)
f = bytearray(frame(2, 10, b"hello")); f[-1] ^= 0xff
s.sendall(bytes(f))
error_code(2, "payload CRC")
ping(3)
s.sendall(frame(0x55, 11))
error_code(7, "unknown type")
ping(4)
s.sendall(frame(2, 12, b"x" * 100)[:60])
time.sleep(0.5)
error_code(6, "frame cut short")
ping(5)
print("storm: every bad frame answered with its code, every PING in step")
PY
then
  ok "malformed frames over the UART: $(tail -n 1 "$T/storm.out")"
else
  bad "malformed frames over the UART" "$(cat "$T/storm.out")"
fi
t0=$(date +%s)
# a two-token prompt: every byte crosses QEMU's PL011 at about 20 KB/s (docs/firmware.md)
timeout 1500 "$pccx" check --config "${FW_CHECK_CONFIG:-tiny}" -p Hi -n 17 --serial "$sock" \
  --no-kernel >"$T/check.out" 2>&1
st=$?
secs=$(( $(date +%s) - t0 ))
kill "$qpid" 2>/dev/null
wait "$qpid" 2>/dev/null
qpid=
if [ "$st" -eq 0 ] && grep -q '^all 2 paths agree on ' "$T/check.out" &&
   grep -qE '^serial +verified ' "$T/check.out"; then
  ok "the tiny Gemma through the firmware's link: $(grep '^all 2 paths' "$T/check.out") ($secs s)"
  sed -n '/^path /,$p' "$T/check.out"
else
  bad "the tiny Gemma through the firmware's link" \
    "pccx check exit $st after $secs s: $(tail -n 20 "$T/check.out" "$T/serve.qemu")"
fi

finish
