#!/usr/bin/env bash
# The manual pages BUILD/man/{pccx.1,libpccx.3,pccx.4} (man/, built by make): each renders
# with no groff warning; pccx(1) has a section for every command the binary lists, holding
# every option of that command's --help (of each mode's, for a command such as bench);
# libpccx(3) names every function declared in host/include/pccx/*.h; pccx(4) every ioctl of
# the UAPI header with its number and struct, and every module parameter of the driver;
# scripts/install.sh puts the pages under share/man/man1, man3, man4.
# Usage: tests/scripts/man_pages.sh BUILD
. "$(dirname "$0")/lib/cli.sh"
cli_init man_pages "$@"

check() { checks=$((checks + 1)); }
pages="pccx.1 libpccx.3 pccx.4"

for tool in man groff gcc; do
  command -v "$tool" >/dev/null || { echo "man_pages: $tool is missing (scripts/deps.sh test)"; exit 1; }
done

# groff's warnings, all of them, as man(1) renders at 80 columns
warnings() { MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings=w -l "$1" 2>&1 >/dev/null; }

# The warning check catches a broken page (else it checks nothing).
printf '.TH X 1\n.SH NAME\nx \\- y\n.SH DESCRIPTION\n.XYZ\n\\fBbold\n' >"$T/broken.1"
check
[ -n "$(warnings "$T/broken.1")" ] || fail "a page with an unknown macro rendered without warnings"

for p in $pages; do
  f=$build/man/$p
  check
  if [ ! -s "$f" ]; then
    fail "$f was not built"
    continue
  fi
  check
  w=$(warnings "$f")
  [ -z "$w" ] || fail "$p: groff warnings: $w"
  # the text a reader sees, one long line per paragraph and no hyphenation, to search in
  MANWIDTH=1000 LC_ALL=C man --nh --nj -l "$f" >"$T/$p.txt" 2>/dev/null
  check
  grep -v '^\.\\"' "$f" | grep "@[A-Z]" >"$T/left" && fail "$p: a placeholder was left: $(head -3 "$T/left")"
done

# ---- pccx(1): every command, every option ----------------------------------------------
# The text of section "pccx CMD" (an .SS heading) up to the next heading.
section() {
  awk -v h="   pccx $1" '$0 == h { on = 1; next } on && /^ ? ? ?[^ ]/ { exit } on' \
    "$T/pccx.1.txt"
}
# The option names of a --help text: the first word of each alternative in a table entry.
help_options() {
  sed -nE 's/^  (-[^ ].*)$/\1/p' | sed -E 's/  .*//' | tr ',' '\n' |
    sed -E 's/^ *//; s/ .*//' | grep -E '^-'
}

commands=$("$pccx" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
check
[ "$(wc -w <<<"$commands")" -ge 10 ] || fail "'pccx --help' lists only: $commands"
for c in $commands; do
  check
  section "$c" >"$T/sec"
  if [ ! -s "$T/sec" ]; then
    fail "pccx(1) has no section 'pccx $c'"
    continue
  fi
  check
  if ! "$pccx" "$c" --help >"$T/help" 2>&1; then
    fail "'pccx $c --help' failed: $(head -c 300 "$T/help")"
    continue
  fi
  helps=("$c")
  # a command that only dispatches (bench): each mode its usage lines name has its own help
  if ! grep -q '^options:' "$T/help"; then
    helps=()
    for m in $(sed -nE "s/^(usage:)? +pccx $c (--[a-z-]+).*/\\2/p" "$T/help"); do
      helps+=("$c $m")
    done
    check
    [ ${#helps[@]} -gt 0 ] || fail "'pccx $c --help' has neither options nor modes"
  fi
  for h in "${helps[@]}"; do
    # shellcheck disable=SC2086
    if [ "$h" != "$c" ] && ! "$pccx" $h --help >"$T/help" 2>&1; then
      check
      fail "'pccx $h --help' failed: $(head -c 300 "$T/help")"
      continue
    fi
    opts=$(help_options <"$T/help")
    check
    [ -n "$opts" ] || fail "no options found in 'pccx $h --help'"
    for o in $opts; do
      check
      grep -qE -e "(^|[^-[:alnum:]_])$o([^-[:alnum:]_]|$)" "$T/sec" ||
        fail "pccx(1): section 'pccx $c' lacks $o (pccx $h --help)"
    done
  done
done

# ---- libpccx(3): every public function -------------------------------------------------
for h in host/include/pccx/*.h; do echo "#include <pccx/${h##*/}>"; done >"$T/all.c"
check
if ! gcc -std=c11 -fsyntax-only -aux-info "$T/aux" -Ihost/include "$T/all.c" 2>"$T/err"; then
  fail "the public headers do not compile: $(head -c 300 "$T/err")"
fi
funcs=$(grep -F '/* host/include/pccx/' "$T/aux" |
  sed -nE 's/.*[ *](pccx_[a-z0-9_]+) \(.*/\1/p' | sort -u)
check
[ "$(wc -w <<<"$funcs")" -ge 100 ] || fail "only $(wc -w <<<"$funcs") functions found in the headers"
for fn in $funcs; do
  check
  grep -qE "(^|[^[:alnum:]_])$fn([^[:alnum:]_]|$)" "$T/libpccx.3.txt" ||
    fail "libpccx(3) lacks $fn"
done

# ---- pccx(4): every ioctl, every module parameter ---------------------------------------
uapi=driver/include/uapi/pccx.h
magic=$(sed -nE 's/^#define PCCX_IOCTL_MAGIC[[:space:]]+(0x[0-9A-Fa-f]+).*/\1/p' "$uapi")
check
[ -n "$magic" ] || fail "$uapi: no PCCX_IOCTL_MAGIC"
n=0
while read -r name def; do
  n=$((n + 1))
  # _IOWR(PCCX_IOCTL_MAGIC, 0x00, struct pccx_get_info) -> _IOWR(0xCC, 0x00, struct ...)
  def=$(sed -E "s/PCCX_IOCTL_MAGIC/$magic/; s/,[[:space:]]*/, /g; s/[[:space:]]+$//" <<<"$def")
  check
  grep -qE "(^|[^[:alnum:]_])$name([^[:alnum:]_]|$)" "$T/pccx.4.txt" || fail "pccx(4) lacks $name"
  check
  grep -qF -- "$def" "$T/pccx.4.txt" || fail "pccx(4) lacks $name's number: $def"
done < <(sed -nE 's/^#define (PCCX_IOCTL_[A-Z0-9_]+)[[:space:]]+(_IO.*)$/\1 \2/p' "$uapi")
check
[ "$n" -ge 7 ] || fail "only $n ioctls found in $uapi"

params=$(ls driver/*.c | grep -v simlink | xargs sed -nE \
  -e 's/^module_param_named\(([a-z0-9_]+),.*/\1/p' -e 's/^module_param\(([a-z0-9_]+),.*/\1/p')
check
[ "$(wc -w <<<"$params")" -ge 6 ] || fail "only these module parameters found: $params"
for m in $params; do
  check
  grep -qE "(^|[^[:alnum:]_])$m([^[:alnum:]_]|$)" "$T/pccx.4.txt" ||
    fail "pccx(4) lacks the module parameter $m"
done

# ---- installed where man(1) finds them ---------------------------------------------------
check
if scripts/install.sh "$build" "$T/root" /usr >"$T/out" 2>&1; then
  for p in $pages; do
    check
    cmp -s "$build/man/$p" "$T/root/usr/share/man/man${p##*.}/$p" ||
      fail "scripts/install.sh did not install $p into share/man/man${p##*.}"
  done
  check
  MANPATH=$T/root/usr/share/man man -w pccx >/dev/null 2>&1 || fail "man -w pccx finds no installed page"
else
  fail "scripts/install.sh failed: $(tail -c 300 "$T/out")"
fi

cli_done
