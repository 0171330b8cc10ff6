#!/usr/bin/env bash
# Build every libFuzzer target tests/fuzz/fuzz_*.c and run each for a while.
#
#   scripts/fuzz.sh BUILDDIR SECONDS [NAME...]      (make fuzz: BUILD/fuzz, FUZZ_SECONDS)
#
# All project sources are compiled with clang into BUILDDIR by the project's
# own Makefile (SAN=1: ASan + UBSan, every report fatal), instrumented for
# coverage (-fsanitize=fuzzer-no-link); each target is then linked against the
# libraries with libFuzzer. A target is any tests/fuzz/fuzz_<name>.c defining
# LLVMFuzzerTestOneInput; NAME... limits the run to those (e.g. "isa").
#
# Each target starts from its seeds in tests/fuzz/corpus/fuzz_<name>/ (if any)
# plus the inputs earlier runs kept in BUILDDIR/corpus/fuzz_<name>/; new inputs
# go only to the latter (the seeds in the tree are never written). Extra libFuzzer
# flags for a target, one per line, may be put in tests/fuzz/corpus/fuzz_<name>.options. Crashes are written to BUILDDIR/artifacts/. Targets
# run FUZZ_JOBS at a time (default: the number of CPUs). Exit 1 if any target
# fails to build, crashes, leaks, times out or trips a sanitizer.
set -u
builddir=${1:?usage: scripts/fuzz.sh BUILDDIR SECONDS [NAME...]}
secs=${2:?usage: scripts/fuzz.sh BUILDDIR SECONDS [NAME...]}
shift 2
case "$secs" in ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number" >&2; exit 2 ;; esac
mkdir -p "$builddir" || exit 1
builddir=$(cd "$builddir" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
# a make that runs us must not hand its own variables (CFLAGS=..., BUILD=...) to ours
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
CC=${FUZZ_CC:-clang}

command -v "$CC" >/dev/null 2>&1 ||
  { echo "fuzz.sh: $CC not found (scripts/deps.sh fuzz installs clang)" >&2; exit 1; }
probe=$builddir/.probe
mkdir -p "$probe"
printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);' \
  'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
  >"$probe/p.c"
if ! "$CC" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>"$probe/err"; then
  echo "fuzz.sh: $CC cannot link libFuzzer (package libclang-rt-14-dev):" >&2
  head -n 5 "$probe/err" >&2
  exit 1
fi

# targets
names=()
if [ $# -gt 0 ]; then
  for n in "$@"; do names+=("fuzz_${n#fuzz_}"); done
else
  for f in tests/fuzz/fuzz_*.c; do
    [ -f "$f" ] && names+=("$(basename "$f" .c)")
  done
fi
[ ${#names[@]} -gt 0 ] || { echo "fuzz.sh: no targets in tests/fuzz/" >&2; exit 1; }
for n in "${names[@]}"; do
  [ -f "tests/fuzz/$n.c" ] || { echo "fuzz.sh: no tests/fuzz/$n.c" >&2; exit 2; }
done

# Objects built with other flags must not be mixed in: remember the flags used.
# (clang 14 ignores -fexcess-precision=standard, which only matters for x87 anyway.)
fuzz_cflags="-O1 -g -fsanitize=fuzzer-no-link -Wno-ignored-optimization-argument"
stamp="$CC $("$CC" --version | head -n 1) | $fuzz_cflags"
if [ -f "$builddir/.flags" ] && [ "$(cat "$builddir/.flags")" != "$stamp" ]; then
  rm -rf "${builddir:?}/obj" "${builddir:?}/lib"
fi
printf '%s\n' "$stamp" >"$builddir/.flags"

# The libraries and the system libraries, from the Makefile itself.
mk=(make --no-print-directory CC="$CC" SAN=1 BUILD="$builddir")
db=$("${mk[@]}" -pqR 2>/dev/null)
read -r -a libs <<<"$(sed -n 's/^LIBS := //p' <<<"$db" | tail -n 1)"
# the board's core (firmware/core) comes first: it uses the libraries after it
fwlib=$(sed -n 's/^LIB_FW := //p' <<<"$db" | tail -n 1)
[ -n "$fwlib" ] && libs=("$fwlib" "${libs[@]}")
ldlibs=$(sed -n 's/^LDLIBS := //p' <<<"$db" | tail -n 1)
[ ${#libs[@]} -gt 0 ] || { echo "fuzz.sh: cannot read LIBS from the Makefile" >&2; exit 1; }
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
log=$builddir/build.log
echo "fuzz.sh: building the libraries with $CC (ASan, UBSan, coverage) in $builddir"
# Archive afresh (objects are kept), and keep going past a library that does not build
# with clang: the targets that do not need it can still run; those that do fail to link.
rm -f "${libs[@]}"
CFLAGS="$fuzz_cflags" "${mk[@]}" -k -j"$jobs" "${libs[@]}" >"$log" 2>&1
linklibs=()
for l in "${libs[@]}"; do
  if [ -f "$l" ]; then
    linklibs+=("$l")
  else
    echo "warning: $(basename "$l") does not build with $CC (log $log):"
    grep -E ': error:' "$log" | sort -u | head -n 5 | sed 's/^/    /'
  fi
done

failed=()
mkdir -p "$builddir/bin" "$builddir/artifacts" "$builddir/logs"
built=()
for n in "${names[@]}"; do
  obj=$builddir/obj/tests/fuzz/$n.o
  if ! CFLAGS="$fuzz_cflags" "${mk[@]}" "$obj" >"$builddir/logs/$n.build" 2>&1 ||
     ! "$CC" -fsanitize=fuzzer,address,undefined "$obj" "${linklibs[@]}" $ldlibs \
       -o "$builddir/bin/$n" >>"$builddir/logs/$n.build" 2>&1; then
    echo "FAIL $n: does not build"
    grep -E 'error|undefined reference' "$builddir/logs/$n.build" | head -n 10 | sed 's/^/    /'
    failed+=("$n")
    continue
  fi
  built+=("$n")
done

# run one target; its status is the target's
run_target() {
  local n=$1 work=$builddir/corpus/$1 seeds=tests/fuzz/corpus/$1 dirs opts=()
  mkdir -p "$work"
  dirs=("$work")
  [ -d "$seeds" ] && dirs+=("$seeds")
  # tests/fuzz/corpus/<target>.options: extra libFuzzer flags, one per line, # comments
  if [ -f "tests/fuzz/corpus/$n.options" ]; then
    while read -r o; do
      case "$o" in ''|'#'*) ;; *) opts+=("$o") ;; esac
    done <"tests/fuzz/corpus/$n.options"
  fi
  rm -f "$builddir/artifacts/$n-"*
  "$builddir/bin/$n" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$builddir/artifacts/$n-" -print_final_stats=1 "${opts[@]}" \
    "${dirs[@]}" >"$builddir/logs/$n.log" 2>&1
}

echo "fuzz.sh: running ${#built[@]} target(s) for ${secs}s each, $jobs at a time"
declare -A pid_of
running=0
for n in "${built[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
  run_target "$n" &
  pid_of[$n]=$!
  running=$((running + 1))
done
for n in "${built[@]}"; do
  if wait "${pid_of[$n]}"; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$builddir/logs/$n.log")
    seeds=$(ls "tests/fuzz/corpus/$n" 2>/dev/null | wc -l)
    echo "ok   $n: ${runs:-?} runs, $seeds seed(s), corpus $(ls "$builddir/corpus/$n" | wc -l)"
  else
    echo "FAIL $n (log $builddir/logs/$n.log)"
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$builddir/logs/$n.log" |
      head -n 10 | sed 's/^/    /'
    for a in "$builddir/artifacts/$n-"*; do
      [ -f "$a" ] && echo "    reproduce: $builddir/bin/$n $a"
    done
    failed+=("$n")
  fi
done

if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz.sh: failed: ${failed[*]}"
  exit 1
fi
echo "fuzz.sh: ${#built[@]} target(s) ran ${secs}s each without a finding"
