#!/usr/bin/env bash
# Run every test program of each build directory given; print one line per program and end
# with the summary line "N passed, N failed" (counting Check test cases), exit 1 on any failure.
set -u
total_pass=0
total_fail=0
failed_progs=()
for build in "$@"; do
  for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    name="$build/${t##*/}"
    log=$(mktemp)
    CK_FORK=yes CK_VERBOSITY=normal timeout 900 "$t" >"$log" 2>&1
    rc=$?
    # Check prints "NN%: Checks: N, Failures: F, Errors: E"
    line=$(grep -E '^[0-9]+%: Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+' "$log" | tail -n 1)
    if [ -n "$line" ]; then
      n=$(sed -E 's/.*Checks: ([0-9]+).*/\1/' <<<"$line")
      f=$(sed -E 's/.*Failures: ([0-9]+).*/\1/' <<<"$line")
      e=$(sed -E 's/.*Errors: ([0-9]+).*/\1/' <<<"$line")
      bad=$((f + e))
      good=$((n - bad))
    else
      good=0; bad=1
    fi
    if [ $rc -ne 0 ] && [ $bad -eq 0 ]; then bad=1; fi
    total_pass=$((total_pass + good))
    total_fail=$((total_fail + bad))
    if [ $bad -ne 0 ]; then
      failed_progs+=("$name")
      echo "FAIL $name (exit $rc)"
      sed -e 's/^/    /' "$log" | tail -n 40
    else
      echo "ok   $name: ${line:-no summary}"
    fi
    rm -f "$log"
  done
done
for extra in "${PCCX_EXTRA_TESTS[@]:-}"; do :; done
if [ ${#failed_progs[@]} -ne 0 ]; then
  echo "failed: ${failed_progs[*]}"
fi
echo "$total_pass passed, $total_fail failed"
[ $total_fail -eq 0 ]
