#!/usr/bin/env bash
# Turn a page source man/NAME.in into the roff page, with what the pccx binary says about itself:
#
#   man/expand.sh PCCX SRC >OUT
#
#   @VERSION@          the version (scripts/pccx.pc.in)
#   @DATE@             SOURCE_DATE_EPOCH's date, else the date of the last commit of SRC
#   a line @HELP CMD [MODE]@
#                      the synopsis, description, arguments and options of `pccx CMD [MODE] --help`
#                      as roff, so the page's option lists are the binary's and cannot drift
#   a line @CODE FILE@ FILE (relative to the repository) as roff text for an .EX block, without
#                      its SPDX line and its opening comment
#   lines @IF CMD@ ... @ENDIF@
#                      kept only when the binary lists CMD (commands still being added)
#
# tests/scripts/man_pages.sh checks the result against the binary.
set -euo pipefail
pccx=$1
src=$2
top=$(cd "$(dirname "$0")/.." && pwd)

version=$(sed -n 's/^Version: *//p' "$top/scripts/pccx.pc.in")
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
  date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%F)
else
  date=$(git -C "$top" log -1 --format=%cs -- "$src" 2>/dev/null || true)
  [ -n "$date" ] || date=$(date -u -r "$src" +%F)
fi
commands=
# has CMD: the binary lists CMD (asked once, and only by a page that needs to know)
has() {
  [ -n "$commands" ] ||
    commands=" $("$pccx" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { printf "%s ", $1 }')"
  case "$commands" in *" $1 "*) return 0 ;; *) return 1 ;; esac
}

skip=0
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    @IF\ *@)
      c=${line#@IF }; c=${c%@}
      has "$c" || skip=1
      continue ;;
    @ENDIF@) skip=0; continue ;;
  esac
  [ "$skip" = 1 ] && continue
  case "$line" in
    @HELP\ *@)
      args=${line#@HELP }; args=${args%@}
      # shellcheck disable=SC2086
      if ! out=$("$pccx" $args --help 2>&1); then
        echo "man/expand.sh: '$pccx $args --help' failed: $out" >&2
        exit 1
      fi
      awk -f "$top/man/help2roff.awk" <<<"$out"
      ;;
    @CODE\ *@)
      f=${line#@CODE }; f=${f%@}
      awk 'NR == 1 && /SPDX-License-Identifier/ { next }
           !started && /^\/\*/ { head = 1 }
           head { if (/\*\//) { head = 0; skip_blank = 1 } next }
           skip_blank && /^$/ { skip_blank = 0; next }
           { started = 1; skip_blank = 0; print }' "$top/$f" |
        sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e 's/^/\\\&/'
      ;;
    *)
      line=${line//@VERSION@/$version}
      printf '%s\n' "${line//@DATE@/$date}"
      ;;
  esac
done <"$src"
