#!/usr/bin/env bash
# pccx synth: --list prints one line per preset --config accepts, each with the GGUF
# architecture of its family (told here from the preset's name, not from pccx); the GGUF
# synth writes for each small preset (experts too) runs under `pccx run -m` to the same tokens as the
# preset synthesised in memory (`pccx run --config`, the same seed).
#
#   bash tests/scripts/cli_synth.sh BUILD
set -u
. "$(dirname "$0")/lib/cli.sh"
cli_init cli_synth "$@"

# the architecture a preset's name says: Gemma 4, 3, 2, 1 by their names, else Gemma 3n
arch_of() {
  case $1 in
    gemma-4-*|tiny-gemma4*) echo gemma4 ;;
    gemma-3-*|tiny-gemma3*) echo gemma3 ;;
    gemma-2-*|tiny-gemma2*) echo gemma2 ;;
    gemma-*b|tiny-gemma) echo gemma ;;
    *) echo gemma3n ;;
  esac
}

# the presets --config accepts, from the help text
run "$pccx" synth --help
names=$(sed -n 's/^ *--config NAME .*: //p' "$T/out" | tr -d ' ' | tr ',' ' ')
[ -n "$names" ] || fail "synth --help lists no presets: $(head -c 400 "$T/out")"

want_rc 0 "$pccx" synth --list
cp "$T/out" "$T/list"
checks=$((checks + 1))
[ "$(wc -l <"$T/list")" -eq "$(echo "$names" | wc -w)" ] ||
  fail "synth --list has $(wc -l <"$T/list") lines for $(echo "$names" | wc -w) presets"
for n in $names; do
  checks=$((checks + 1))
  line=$(awk -v n="$n" '$1 == n' "$T/list")
  if [ -z "$line" ]; then
    fail "synth --list has no line for $n"
    continue
  fi
  a=$(echo "$line" | awk '{ print $2 }')
  [ "$a" = "$(arch_of "$n")" ] || fail "synth --list: $n has architecture '$a', expected $(arch_of "$n")"
  echo "$line" | grep -qE ', [0-9]+ layers, D [0-9]+, ' || fail "synth --list: $n: no shape: $line"
done

# each small preset (tiny-gemma4-moe with its experts): the file decodes to the in-memory
# preset's tokens
for n in $names; do
  case $n in tiny|tiny-gemma*) ;; *) continue ;; esac
  want_rc 0 "$pccx" synth --config "$n" -o "$T/$n.gguf"
  want_rc 0 "$pccx" run --config "$n" -p hi -n 4
  cp "$T/out" "$T/mem"
  want_rc 0 "$pccx" run -m "$T/$n.gguf" -p hi -n 4
  checks=$((checks + 1))
  [ -s "$T/mem" ] || fail "run --config $n printed no tokens"
  cmp -s "$T/mem" "$T/out" ||
    fail "$n: run -m gave '$(cat "$T/out")', run --config '$(cat "$T/mem")'"
done

cli_done
