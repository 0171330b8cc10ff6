#!/usr/bin/env bash
# Run the test suite and end with the summary line "N passed, N failed".
#
#   scripts/run-tests.sh BUILD [BUILD...]
#
# For each build directory: every Check program BUILD/tests/test_* (each Check test
# case counts) and every cmocka program BUILD/cmocka/test_* (each cmocka test
# case counts), then every script tests/scripts/*.sh, run once with the first build
# directory as $1 (each script counts as one test: exit 0 passes; exit 77 skips and is
# reported as a skip, never as a pass). Exit status 1 if anything failed.
set -u
total_pass=0
total_fail=0
total_skip=0
failed=()

run_check_prog() {
  local t=$1 name=$2 log rc line n f e bad good
  log=$(mktemp)
  CK_FORK=yes CK_VERBOSITY=normal timeout 1200 "$t" >"$log" 2>&1
  rc=$?
  line=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -n 1)
  if [ -n "$line" ]; then
    n=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$line")
    f=$(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$line")
    e=$(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$line")
    bad=$((f + e)); good=$((n - bad))
  else
    good=0; bad=1
  fi
  [ $rc -ne 0 ] && [ $bad -eq 0 ] && bad=1
  total_pass=$((total_pass + good)); total_fail=$((total_fail + bad))
  if [ $bad -ne 0 ]; then
    failed+=("$name"); echo "FAIL $name (exit $rc)"; sed -e 's/^/    /' "$log" | tail -n 60
  else
    echo "ok   $name: $line"
  fi
  rm -f "$log"
}

# A cmocka program (tests/cmocka: the board side): each test counts; its summary lines are
# "[  PASSED  ] N test(s)." and "[  FAILED  ] N test(s), listed below:".
run_cmocka_prog() {
  local t=$1 name=$2 log rc good bad
  log=$(mktemp)
  timeout 1200 "$t" >"$log" 2>&1
  rc=$?
  good=$(sed -n -E 's/^\[  PASSED  \] ([0-9]+) test.*/\1/p' "$log" | tail -n 1)
  bad=$(sed -n -E 's/^\[  FAILED  \] ([0-9]+) test.*/\1/p' "$log" | tail -n 1)
  good=${good:-0}; bad=${bad:-0}
  # no summary (a crash), or a failing exit without a counted failure: one failure
  if [ $rc -ne 0 ] && [ $bad -eq 0 ]; then bad=1; fi
  if [ $good -eq 0 ] && [ $bad -eq 0 ]; then bad=1; fi
  total_pass=$((total_pass + good)); total_fail=$((total_fail + bad))
  if [ $bad -ne 0 ]; then
    failed+=("$name"); echo "FAIL $name (exit $rc)"; sed -e 's/^/    /' "$log" | tail -n 60
  else
    echo "ok   $name: $good passed"
  fi
  rm -f "$log"
}

first=${1:-build}
# The tokenizer test compares against the real JS tokenizer: fetch it (npm) and compute the
# oracle ids once; a missing oracle then fails the test instead of skipping it.
if . scripts/tokenizer-oracle.sh "$first"; then
  export PCCX_REQUIRE_ORACLE=1
else
  echo "run-tests: the tokenizer oracle could not be prepared (npm/node); test_tokenizer will fail"
  export PCCX_REQUIRE_ORACLE=1
fi

for build in "$@"; do
  for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    run_check_prog "$t" "$build/${t##*/}"
  done
  for t in "$build"/cmocka/test_*; do
    [ -x "$t" ] || continue
    run_cmocka_prog "$t" "$build/cmocka/${t##*/}"
  done
done

# The firmware's host unit tests (cmocka, firmware/baremetal: board code that needs no board,
# built there with ASan and UBSan), each test counted like the other cmocka programs.
fwb=$(cd "$first" && pwd)
if make --no-print-directory -s -C firmware/baremetal BUILD="$fwb" host-tests >"$fwb/fw-host.log" 2>&1
then
  for t in "$fwb"/fw/host/test_*; do
    [ -x "$t" ] || continue
    run_cmocka_prog "$t" "$first/fw/host/${t##*/}"
  done
else
  total_fail=$((total_fail + 1)); failed+=("firmware host tests")
  echo "FAIL firmware host tests (build)"; tail -n 30 "$fwb/fw-host.log" | sed -e 's/^/    /'
fi

for s in tests/scripts/*.sh; do
  [ -f "$s" ] || continue
  log=$(mktemp)
  start=$(date +%s)
  timeout 3600 bash "$s" "$first" "$@" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  if [ $rc -eq 0 ]; then
    total_pass=$((total_pass + 1)); echo "ok   $s (${secs}s): $(tail -n 1 "$log")"
  elif [ $rc -eq 77 ]; then
    total_skip=$((total_skip + 1)); echo "skip $s: $(tail -n 1 "$log")"
  else
    total_fail=$((total_fail + 1)); failed+=("$s"); echo "FAIL $s (exit $rc, ${secs}s)"
    sed -e 's/^/    /' "$log" | tail -n 60
  fi
  rm -f "$log"
done

[ ${#failed[@]} -ne 0 ] && echo "failed: ${failed[*]}"
if [ $total_skip -ne 0 ]; then
  echo "$total_pass passed, $total_fail failed, $total_skip skipped"
else
  echo "$total_pass passed, $total_fail failed"
fi
[ $total_fail -eq 0 ]
