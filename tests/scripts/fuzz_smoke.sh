#!/usr/bin/env bash
# Fuzz smoke test: build every tests/fuzz/fuzz_*.c target with clang + libFuzzer and run
# each for a few seconds from its seed corpus (scripts/fuzz.sh, as `make fuzz` does for
# longer). Fails on any crash, sanitizer report or target that does not build.
#
#   bash tests/scripts/fuzz_smoke.sh BUILD        (FUZZ_SMOKE_SECONDS, default 5)
#
# Skipped (exit 77) when clang or its libFuzzer runtime is not installed.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: fuzz_smoke.sh BUILD}" && pwd)
secs=${FUZZ_SMOKE_SECONDS:-5}

if ! command -v clang >/dev/null 2>&1; then
  echo "skip: clang is not installed (scripts/deps.sh fuzz)"
  exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
  >"$probe/p.c"
if ! clang -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
  echo "skip: clang has no libFuzzer runtime (libclang-rt-14-dev)"
  exit 77
fi

start=$(date +%s)
"$top/scripts/fuzz.sh" "$build/fuzz" "$secs"
rc=$?
if [ $rc -eq 0 ]; then
  echo "fuzz smoke: passed in $(( $(date +%s) - start ))s (${secs}s per target)"
else
  echo "fuzz smoke: FAILED after $(( $(date +%s) - start ))s"
fi
exit $rc
