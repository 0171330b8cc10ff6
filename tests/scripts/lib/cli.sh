# shellcheck shell=bash
# What the command-line script tests share (sourced, not run: scripts/run-tests.sh runs only
# tests/scripts/*.sh). After `. tests/scripts/lib/cli.sh; cli_init NAME "$@"`:
#   $top the repository, $build and $pccx the build under test (the first argument; with
#   CLI_ANY_BUILDS=1 every argument is a build and $build is not set), $T a scratch directory
#   removed on exit, and the checks below; `cli_done` prints the summary line and exits.
cli_init() {
  cli_name=$1; shift
  top=$(cd "$(dirname "$0")/../.." && pwd)
  if [ "${CLI_ANY_BUILDS:-0}" != 1 ]; then
    build=$(cd "${1:?usage: $cli_name.sh BUILD}" && pwd)
    pccx=$build/bin/pccx
    [ -x "$pccx" ] || { echo "$cli_name: $pccx not built"; exit 1; }
  fi
  cd "$top" || exit 1
  T=$(mktemp -d)
  trap 'chmod -R u+rwx "$T" 2>/dev/null; rm -rf "$T"' EXIT
  checks=0
  fails=0
}

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# run CMD...: stdout in $T/out, stderr in $T/err, status in $rc (a command that hangs for
# 120 s fails instead of stopping the suite)
run() { checks=$((checks + 1)); timeout 120 "$@" >"$T/out" 2>"$T/err"; rc=$?; }

# want_rc N CMD...: exit status exactly N
want_rc() {
  local want=$1; shift
  run "$@"
  [ "$rc" -eq "$want" ] || fail "'$*' exited $rc, expected $want; stderr: $(head -c 300 "$T/err")"
}

# want_fail CMD...: non-zero exit status and a message on stderr
want_fail() {
  run "$@"
  [ "$rc" -ne 0 ] || fail "'$*' exited 0"
  [ -s "$T/err" ] || fail "'$*' printed no message"
}

# has FILE TEXT: FILE contains TEXT (fixed string)
has() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2': $(head -c 400 "$1")"; }

cli_done() {
  if [ "$fails" -ne 0 ]; then
    echo "$cli_name: $fails of $checks checks failed"
    exit 1
  fi
  echo "$cli_name: $checks checks passed"
  exit 0
}
