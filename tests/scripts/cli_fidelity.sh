#!/usr/bin/env bash
# pccx fidelity (host/cli/cmd_fidelity.c) on the tiny shape:
#
#   bash tests/scripts/cli_fidelity.sh BUILD
#
# The report's sections and the stage list at one position; the --tsv rows (one per stage and
# position, sane values, the logits row at every position, the summary line agreeing with
# them); teacher forcing (the reference and the oracle decode the same tokens: the prompt's or
# the list's, then the reference's greedy ones, whatever the oracle would have chosen); the
# same figures from a GGUF of the same weights and with another thread count; pccx ref
# --oracle; every family's reference against its oracle within bounds; and the refusals of bad
# options and inputs.
set -u
. "$(dirname "$0")/lib/cli.sh"
cli_init cli_fidelity "$@"
fid=("$pccx" fidelity --config tiny -q)
u='usage: pccx fidelity (--config NAME | -m MODEL) [-n N] [-p TEXT | --tokens IDS] [options]'

# tsv_check FILE POSITIONS: the header, every row's fields and values, every position's logits
tsv_check() {
  local f=$1 n=$2 bad
  local h
  h=$(printf '%s\t' pos token stage kind layer elements rel_rms cos max_abs ref_top1 oracle_top1)kl
  [ "$(head -n 1 "$f")" = "$h" ] || fail "$f: header '$(head -n 1 "$f")'"
  bad=$(awk -F'\t' -v n="$n" 'NR > 1 {
      num = "^-?[0-9.]+(e[-+]?[0-9]+)?$"
      if (NF != 12 || $1 !~ /^[0-9]+$/ || $1 >= n || $2 !~ /^[0-9]+$/ ||
          $6 !~ /^[1-9][0-9]*$/ || $7 !~ num || $8 !~ num || $9 !~ num || $12 !~ num ||
          $7 < 0 || $9 < 0 || $8 < -1 || $8 > 1 || $12 < -1e-12)
        { print "line " NR ": " $0; exit }
      kind = $3; layer = -1
      if (match($3, /^L[0-9]+\./)) {
        layer = substr($3, 2, RLENGTH - 2); kind = substr($3, RLENGTH + 1)
      }
      if ($4 != kind || $5 != layer) { print "line " NR ": kind/layer of " $3; exit }
      if ($3 == "final.logits") logits[$1]++
      rows[$1]++
    }
    END {
      for (p = 0; p < n; p++)
        if (logits[p] != 1 || rows[p] != rows[0]) {
          print "position " p ": " logits[p] + 0 " logits rows, " rows[p] + 0 " rows"; exit
        }
    }' "$f")
  [ -z "$bad" ] || fail "$f: $bad"
}

# ---- the report and its TSV ----------------------------------------------------------------
want_rc 0 "${fid[@]}" --tsv "$T/a.tsv"
cp "$T/out" "$T/a.out"
[ ! -s "$T/err" ] || fail "-q still wrote to stderr: $(head -c 300 "$T/err")"
for s in "14 positions, teacher-forced: 6 prompt tokens, then 8 of the reference's greedy" \
         "per position (" "per stage kind, over layers and positions:" \
         "every stage at position 0 (token 2):" "summary: top-1 agreement "; do
  has "$T/a.out" "$s"
done
# every stage of every layer at position 0, in the model's order
sed -n '/^every stage at position 0/,/^$/p' "$T/a.out" | awk 'NR > 2 && NF { print $1 }' >"$T/at"
[ "$(head -n 1 "$T/at")" = embed ] || fail "the position table starts with '$(head -n 1 "$T/at")'"
[ "$(tail -n 2 "$T/at" | tr '\n' ' ')" = "final.hidden final.logits " ] ||
  fail "the position table ends with '$(tail -n 2 "$T/at" | tr '\n' ' ')'"
for l in 0 1 2 3 4 5 6 7 8 9; do
  grep -qx "L$l.attn.norm" "$T/at" || fail "no L$l.attn.norm at position 0"
  grep -qx "L$l.out" "$T/at" || fail "no L$l.out at position 0"
done
n0=$(awk -F'\t' '$1 == 0' "$T/a.tsv" | wc -l)
[ "$(wc -l <"$T/at")" -eq "$n0" ] || fail "position 0: $(wc -l <"$T/at") stages listed, $n0 rows"
# the kind table: every kind once, with mean <= max relRMS and min <= mean cos
awk '/^per stage kind/ { on = 1; getline; next } on && !NF { exit } on' "$T/a.out" >"$T/kinds"
[ "$(awk '{ print $1 }' "$T/kinds" | sort | uniq -d)" = "" ] || fail "a kind listed twice"
for k in embed altup.router attn.norm ffn.down out final.logits; do
  grep -q "^  $k " "$T/kinds" || fail "the kind table lacks $k"
done
awk '$3 > $4 || $5 > $6 || $5 < -1 || $6 > 1 { bad = 1 } END { exit bad }' "$T/kinds" ||
  fail "kind table: mean above max or min above mean: $(awk '$3 > $4 || $5 > $6' "$T/kinds")"
tsv_check "$T/a.tsv" 14

# the summary is the TSV's logits rows: top-1 agreement and the largest KL
agree=$(awk -F'\t' '$3 == "final.logits" && $10 == $11' "$T/a.tsv" | wc -l)
has "$T/a.out" "summary: top-1 agreement $agree/14;"
klmax=$(awk -F'\t' '$3 == "final.logits" && $12 > m { m = $12 } END { printf "%.3g", m }' \
  "$T/a.tsv")
has "$T/a.out" "max $klmax nats"

# ---- teacher forcing -------------------------------------------------------------------------
# the prompt "Hello" as byte ids (<bos> = 2, byte + 3), then each position decodes the
# reference's top-1 of the one before; the embedding stage of every position agrees with the
# oracle's (a different token's row would be off by ~140 %): both decoded the same token
check_forced() {
  local f=$1 forced=$2 n=$3
  awk -F'\t' -v forced="$forced" -v n="$n" '
    BEGIN { k = split(forced, want, ",") }
    $3 == "final.logits" { tok[$1] = $2; top[$1] = $10 }
    $3 == "embed" { emb[$1] = $7 }
    END {
      for (p = 0; p < n; p++) {
        why = ""
        if (p < k && tok[p] != want[p + 1])
          why = "token " tok[p] ", not " want[p + 1]
        else if (p >= k && tok[p] != top[p - 1])
          why = "token " tok[p] ", the reference chose " top[p - 1]
        else if (!(emb[p] < 0.01))
          why = "embed relRMS " emb[p]
        if (why != "") { print "position " p ": " why; exit 1 }
      }
    }' "$T/$f" >"$T/why" || fail "$f: teacher forcing: $(cat "$T/why")"
}
check_forced a.tsv 2,75,104,111,111,114 14

want_rc 0 "${fid[@]}" --tokens 2,5,500,7 -n 6 --at 2 --tsv "$T/b.tsv"
has "$T/out" "6 positions, teacher-forced: 4 listed tokens, then 2 of the reference's greedy"
has "$T/out" "every stage at position 2 (token 500):"
tsv_check "$T/b.tsv" 6
check_forced b.tsv 2,5,500,7 6
# --at: the listed stage is the TSV's row of that position
e=$(awk -F'\t' '$1 == 2 && $3 == "embed" { printf "%.4f", $7 }' "$T/b.tsv")
grep -qE "^  embed +[0-9]+ +$e " "$T/out" || fail "--at 2: embed relRMS is not the TSV's $e"

# where the oracle's top-1 differs, the next position still decodes the reference's
want_rc 0 "$pccx" fidelity --config tiny --seed 1 -n 20 -q --tsv "$T/c.tsv"
tsv_check "$T/c.tsv" 20
check_forced c.tsv 2,75,104,111,111,114 20
awk -F'\t' '$3 == "final.logits" && $10 != $11 && $1 < 19 { found = 1 } END { exit !found }' \
  "$T/c.tsv" || echo "note: seed 1 has no top-1 disagreement before the last position"

# ---- the same figures from a GGUF of the same weights, and with one thread --------------------
want_rc 0 "$pccx" synth --config tiny --seed 1 -o "$T/t.gguf"
want_rc 0 "$pccx" fidelity -m "$T/t.gguf" -q --tsv "$T/g.tsv"
has "$T/out" "against the FP64 oracle: $T/t.gguf (10 layers, D 128"
cmp -s "$T/a.tsv" "$T/g.tsv" || fail "-m GGUF and --config tiny give different rows"
want_rc 0 "${fid[@]}" --threads 1 --kernel ref --tsv "$T/t1.tsv"
cmp -s "$T/a.tsv" "$T/t1.tsv" || fail "--threads 1 --kernel ref gives different rows"
cmp -s "$T/a.out" "$T/out" || fail "--threads 1 --kernel ref gives a different report"

# ---- pccx ref --oracle shares the comparison ---------------------------------------------------
want_rc 0 "$pccx" ref --config tiny -q -n 4 --oracle
has "$T/err" "oracle comparison over 9 positions"
has "$T/err" "next-token top-1 agreement "

# ---- every family against its oracle -----------------------------------------------------------
# 40 positions (the prompt's, then the reference's greedy tokens), past the local window of 16 of
# tiny-gemma2, tiny-gemma3, tiny-gemma4 and tiny-gemma4-moe, so their KV rings wrap. Bounds per
# family: every stage's relRMS and cosine (the embedding and the per-layer inputs' table row: the
# same product in both, exact), the logits' cosine, KL and top-1. The measured figures
# (docs/reference.md, "Oracle agreement per family") pass them with margin; an oracle without the
# q scale, a post-norm, the q/k norms, the RoPE scaling or the window fails them, and for Gemma 4
# one without k = v, the PLE mix, the layer scalar, the partial RoPE, the global heads' own size,
# the v norm or the BF16 rounding of sqrt(d_ple) (tests/unit/test_oracle_families.c also bends
# the soft-caps). With experts, the oracle chooses them from its FP64 router, the reference from
# its FP32 one, and where two nearly tie they differ: a position whose experts' sum
# (moe.experts) of some layer is out of bounds while every stage before it is within them counts
# as one that chose differently (at most "moe" of 40; the TSV does not name the experts, the
# unit test checks that each is a near-tie); its later stages and its logits' cosine and KL are
# not bounded, its top-1 is. Without the router's scale, the renormalisation, the per-expert
# scale, a MoE norm or GELU in the experts, far more positions differ.
#        config           stage rel  stage cos  logit cos  KL mean  KL max  top-1 of 40  moe
bounds='tiny              0.2        0.99       0.997      0.001    0.003   34           0
        tiny-gemma        0.08       0.998      0.999      0.0006   0.0015  36           0
        tiny-gemma2       0.08       0.998      0.999      0.0006   0.0015  36           0
        tiny-gemma3       0.08       0.998      0.999      0.0006   0.0015  36           0
        tiny-gemma4       0.25       0.975      0.99       0.004    0.012   32           0
        tiny-gemma4-moe   0.2        0.985      0.995      0.0015   0.005   34           10'
while read -r c rel cos lcos klm klx top moe; do
  want_rc 0 "$pccx" fidelity --config "$c" -n 40 -q --tsv "$T/f-$c.tsv"
  tsv_check "$T/f-$c.tsv" 40
  has "$T/out" "summary: top-1 agreement "
  why=$(awk -F'\t' -v rel="$rel" -v mcos="$cos" -v lcos="$lcos" -v klm="$klm" -v klx="$klx" \
      -v top="$top" -v moe="$moe" '
    NR == 1 { next }
    { exact = $3 == "embed" || $3 == "ple.inputs" }
    $3 == "final.logits" { n++; same += $10 == $11 }
    $1 in differ { next }
    exact && $7 > 1e-6 { print "pos " $1 " " $3 " relRMS " $7; bad = 1; exit }
    !exact && ($7 > rel || $8 < mcos) && $4 == "moe.experts" { differ[$1] = 1; nd++; next }
    !exact && ($7 > rel || $8 < mcos) {
      print "pos " $1 " " $3 ": relRMS " $7 ", cos " $8; bad = 1; exit }
    $3 == "final.logits" {
      na++; kl += $12; if ($12 > km) km = $12
      if ($8 < lcos) { print "pos " $1 " logits cos " $8; bad = 1; exit }
    }
    END {
      if (bad) exit 1
      if (n != 40) { print n " logits rows"; exit 1 }
      if (nd > moe) { print "the experts differ at " nd " positions"; exit 1 }
      if (same < top || kl / na > klm || km > klx) {
        print "top-1 " same "/40, KL mean " kl / na ", max " km; exit 1 }
    }' "$T/f-$c.tsv") || fail "fidelity --config $c: $why"
done <<<"$bounds"

# ---- refusals --------------------------------------------------------------------------------
# usage STATUS 'MESSAGE' CMD...: the message, then the usage line
usage() {
  local msg=$1; shift
  want_rc 2 "$@"
  [ "$(head -n 1 "$T/err")" = "$msg" ] || fail "'$*' said '$(head -n 1 "$T/err")', not '$msg'"
  [ "$(sed -n 2p "$T/err")" = "$u" ] || fail "'$*': second line '$(sed -n 2p "$T/err")'"
  [ ! -s "$T/out" ] || fail "'$*' wrote to stdout"
}
usage "pccx fidelity: give either --config NAME or -m MODEL" "$pccx" fidelity
usage "pccx fidelity: give either --config NAME or -m MODEL" \
  "$pccx" fidelity --config tiny -m "$T/t.gguf"
usage "pccx fidelity: give -p TEXT or --tokens IDS, not both" "${fid[@]}" -p hi --tokens 2,3
usage "pccx fidelity: --at 14 is past the last position (13)" "${fid[@]}" --at 14
usage "pccx fidelity: --at 3 is past the last position (2)" "${fid[@]}" -n 3 --at 3
usage "pccx fidelity: bad -n '0': expected a whole number from 1 to 65535" "${fid[@]}" -n 0
for t in "" 2,,3 2,x -1 "2," ,2 99999999999; do
  usage "pccx fidelity: bad --tokens '$t': expected ID[,ID...]" "${fid[@]}" --tokens "$t"
done
usage "pccx fidelity: bad --tokens '$(seq -s, 0 4096)': expected ID[,ID...]" \
  "${fid[@]}" --tokens "$(seq -s, 0 4096)"
usage "pccx fidelity: bad --threads '0': expected a whole number from 1 to 256" \
  "${fid[@]}" --threads 0
usage "pccx fidelity: bad --kernel 'fast': expected one of auto, ref, avx2, avx512vnni" \
  "${fid[@]}" --kernel fast
usage "pccx fidelity: unknown option '--temp'" "${fid[@]}" --temp 0
# after the model is made: status 1, one message
refused() {
  local msg=$1; shift
  want_rc 1 "$@"
  [ "$(cat "$T/err")" = "pccx: $msg" ] ||
    fail "'$*' said '$(head -c 300 "$T/err")', not 'pccx: $msg'"
}
refused "fidelity: --tokens: id 512 (position 1) is past the vocabulary (512 ids)" \
  "${fid[@]}" --tokens 2,512
refused "fidelity: 1025 positions exceed the context (1024; see --max-ctx)" "${fid[@]}" -n 1025
refused "$T/no/x.tsv: cannot create: No such file or directory" "${fid[@]}" --tsv "$T/no/x.tsv"
# the unknown name: the message lists the presets --help lists, the tiny shapes of every family
want_rc 0 "$pccx" fidelity --help
names=$(sed -n 's/^  --config NAME  *model shape: //p' "$T/out")
for c in tiny tiny-gemma tiny-gemma2 tiny-gemma3 tiny-gemma4 tiny-gemma4-moe; do
  [[ ", $names," == *", $c,"* ]] || fail "--help's presets '$names' lack $c"
done
refused "config 'nope': unknown (known: $names)" "$pccx" fidelity --config nope
want_fail "$pccx" fidelity -m "$T/missing.gguf" -q
has "$T/err" "$T/missing.gguf"
mkdir "$T/ckpt"       # a directory is a Hugging Face checkpoint: its config.json is missing
want_fail "$pccx" fidelity -m "$T/ckpt" -q
has "$T/err" "$T/ckpt/config.json"
printf 'not a gguf' >"$T/bad.gguf"
want_fail "$pccx" fidelity -m "$T/bad.gguf" -q
has "$T/err" "$T/bad.gguf"

want_rc 0 "$pccx" fidelity --help
for o in --config -m -p --tokenizer --max-ctx --threads --kernel -q --seed -n --tokens --at \
         --tsv; do
  grep -qE -- "^  (-[a-z], )?${o}[ ,]" "$T/out" || fail "pccx fidelity --help does not list $o"
done
want_rc 0 "$pccx" --help
has "$T/out" "fidelity"

cli_done
