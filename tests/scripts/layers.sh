#!/usr/bin/env bash
# The libraries are layers (Makefile): each may use only the libraries after it in
#   libpccx  libpccx_sim  libpccx_ref  libpccx_base  libpccx_isa  libpccx_num
# Checked with nm: no library leaves undefined a symbol that an earlier one defines, so they
# link in that order with no --start-group (and nothing asks for one). The model's math
# (reference/) includes no file-format or text header. Inside libpccx, the file formats
# (host/modelfiles) use nothing of the text side (host/text), which reads its vocabularies
# through them: no include, no symbol.
#   tests/scripts/layers.sh BUILD
set -u
build=${1:-build}
order=(libpccx libpccx_sim libpccx_ref libpccx_base libpccx_isa libpccx_num)
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; [ -n "${2:-}" ] && echo "$2" | sed 's/^/     /' | head -n 20; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for l in "${order[@]}"; do
  a=$build/lib/$l.a
  if [ ! -f "$a" ]; then bad "$l.a exists"; continue; fi
  nm "$a" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[TDRBCV]$/ {print $3}' | sort -u >"$tmp/$l.def"
  nm "$a" 2>/dev/null | awk 'NF == 2 && $1 == "U" {print $2}' | sort -u >"$tmp/$l.undef"
done

# the public surface: a global symbol of the libraries is either a function a public header
# (host/include/pccx/) declares (scripts/public-symbols.sh: a name in a comment does not count)
# or carries the internal prefix pccx__
scripts/public-symbols.sh host/include/pccx/*.h >"$tmp/public"
cat "$tmp"/*.def | sort -u | grep -v '^pccx__' | comm -23 - "$tmp/public" >"$tmp/stray"
if [ -s "$tmp/stray" ]; then bad "every library symbol is public or pccx__ (internal)" "$(cat "$tmp/stray")"
else ok "every library symbol is public or pccx__ (internal)"; fi

# libpccx.so: its soname is libpccx.so.MAJOR of pccx.pc's version; it exports exactly the
# functions the public headers declare (a public function the version script missed, or an
# internal one that leaked, fails here); it holds the whole stack the static libraries hold
# (every global symbol of the archives is in its symbol table, most of them local); it leaves no
# pccx symbol undefined
so=$build/lib/libpccx.so
version=$(sed -n 's/^Version: *//p' scripts/pccx.pc.in)
if [ ! -f "$so" ]; then bad "$so exists"; else
  soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  if [ "$soname" = "libpccx.so.${version%%.*}" ] && [ "$(readlink "$so")" = "$soname" ] &&
     [ "$(basename "$(readlink -f "$so")")" = "libpccx.so.$version" ]; then
    ok "libpccx.so -> $soname -> libpccx.so.$version"
  else
    bad "libpccx.so -> libpccx.so.${version%%.*} (the soname) -> libpccx.so.$version" \
      "soname '$soname', libpccx.so -> '$(readlink "$so")' -> '$(readlink -f "$so")'"
  fi
  nm -D --defined-only "$so" | awk '$2 != "A" {sub(/@.*/, "", $3); print $3}' | sort -u >"$tmp/so.dyn"
  d1=$(comm -23 "$tmp/public" "$tmp/so.dyn" | sed 's/^/declared, not exported: /')
  d2=$(comm -13 "$tmp/public" "$tmp/so.dyn" | sed 's/^/exported, not declared: /')
  if [ -n "$d1$d2" ]; then bad "libpccx.so exports exactly the public headers' functions" "$d1$d2"
  else ok "libpccx.so exports exactly the $(wc -l <"$tmp/public") public headers' functions"; fi
  nm --defined-only "$so" | awk 'NF == 3 {print $3}' | sort -u >"$tmp/so.all"
  miss=$(cat "$tmp"/*.def | sort -u | comm -23 - "$tmp/so.all")
  if [ -n "$miss" ]; then bad "libpccx.so holds every symbol of the static libraries" "$miss"
  else ok "libpccx.so holds every symbol of the static libraries"; fi
  und=$(nm -D --undefined-only "$so" | awk '{print $2}' | grep -i '^pccx')
  if [ -n "$und" ]; then bad "libpccx.so leaves no pccx symbol undefined" "$und"
  else ok "libpccx.so leaves no pccx symbol undefined"; fi
fi

# every library against every earlier one
for ((i = 1; i < ${#order[@]}; i++)); do
  li=${order[$i]}
  [ -f "$tmp/$li.undef" ] || continue
  for ((j = 0; j < i; j++)); do
    lj=${order[$j]}
    [ -f "$tmp/$lj.def" ] || continue
    up=$(comm -12 "$tmp/$li.undef" "$tmp/$lj.def")
    if [ -n "$up" ]; then
      bad "$li uses nothing of $lj (a layer above it)" "$up"
    else
      ok "$li uses nothing of $lj"
    fi
  done
done

# a symbol is defined in one library only
all=$(cat "$tmp"/*.def | sort | uniq -d)
if [ -n "$all" ]; then bad "each symbol is defined once across the libraries" "$all"; else
  ok "each symbol is defined once across the libraries"; fi

# nobody needs a link group
if grep -n -- '--start-group' Makefile scripts/pccx.pc.in scripts/*.sh scripts/qemu/*.sh >"$tmp/g"; then
  bad "no --start-group in the build or pccx.pc" "$(cat "$tmp/g")"
else
  ok "no --start-group in the build or pccx.pc"
fi

# reference/ is the model's math: no file-format, tokenizer or runtime header
fmt_headers=$(cd host && ls modelfiles/*.h text/*.h runtime/*.h compiler/*.h | xargs -n1 basename)
fmt_headers+=" pccx/modelfile.h pccx/tokenizer.h pccx/sampler.h pccx/pccx.h"
hits=""
for h in $fmt_headers; do
  hits+=$(grep -n "#include [\"<]$h[\">]" reference/*.c reference/*.h 2>/dev/null)
done
if [ -n "$hits" ]; then bad "reference/ includes no file-format, text or runtime header" "$hits"; else
  ok "reference/ includes no file-format, text or runtime header"; fi

# host/modelfiles is under host/text: no text header (its own or the public pccx/tokenizer.h,
# pccx/sampler.h) and no symbol a host/text object defines
text_headers="$(cd host/text && ls *.h) pccx/tokenizer.h pccx/sampler.h"
hits=""
for h in $text_headers; do
  hits+=$(grep -n "#include [\"<]$h[\">]" host/modelfiles/*.c host/modelfiles/*.h 2>/dev/null)
done
if [ -n "$hits" ]; then bad "host/modelfiles includes no host/text header" "$hits"; else
  ok "host/modelfiles includes no host/text header"; fi
objs() { for c in "$1"/*.c; do echo "$build/obj/${c%.c}.o"; done; }
if ls $(objs host/modelfiles) $(objs host/text) >/dev/null 2>&1; then
  nm $(objs host/text) 2>/dev/null |
    awk 'NF == 3 && $2 ~ /^[TDRBCV]$/ {print $3}' | sort -u >"$tmp/text.def"
  nm $(objs host/modelfiles) 2>/dev/null |
    awk 'NF == 2 && $1 == "U" {print $2}' | sort -u >"$tmp/modelfiles.undef"
  up=$(comm -12 "$tmp/modelfiles.undef" "$tmp/text.def")
  if [ -n "$up" ]; then bad "host/modelfiles uses no symbol of host/text" "$up"; else
    ok "host/modelfiles uses no symbol of host/text"; fi
else
  bad "host/modelfiles and host/text objects exist in $build/obj"
fi

# The model's layers are described once, by the per-layer table that reference/layers.c builds
# from the configuration (struct pccx_layer_desc, model->layers[l]): outside the builder no
# code derives a layer's properties from its index (the predicates the table replaced, a
# "% global_period", a "< n_sparse", a first shared layer), and the graph, the oracle, the weight
# layout, the compiler and the runtime read no per-layer field of the configuration. The Hugging
# Face config.json validator and tensor map, which see a file's own per-layer description before
# any model exists, use the builder's pccx__layers_pattern / pccx__layers_kv_sources.
builder='^reference/layers\.[ch]:'
srcs=$(ls reference/*.[ch] host/*/*.[ch] host/include/pccx/*.h tests/unit/*.c \
	tests/unit/support/*.[ch] tests/fuzz/*.c 2>/dev/null)
hits=$(grep -nE 'pccx_gemma_(is_global|owns_kv|first_shared|kv_source|kv_rows|is_sparse|q_dim|kv_dim)\b' \
	$srcs | grep -vE "$builder")
hits+=$(grep -nE 'first_shared|%[^;]*global_period|%[[:space:]]*5[[:space:]]*!=|<=?[[:space:]]*[[:alnum:]_>.-]*n_sparse\b' $srcs |
	grep -vE "$builder")
if [ -n "$hits" ]; then bad "no layer-index predicate outside reference/layers.c" "$hits"; else
  ok "no layer-index predicate outside reference/layers.c"; fi
readers=$(ls reference/gemma_graph.c reference/oracle.c reference/gemma_model.c \
	reference/session.c reference/exec_ref.c host/compiler/*.c host/runtime/*.c 2>/dev/null)
hits=$(grep -nE '(\<c|cfg|->c)(->|\.)(head_dim|n_heads|n_kv_heads|d_ffn|window|global_period|n_kv_shared|n_sparse|theta_local|theta_global)\>' \
	$readers)
if [ -n "$hits" ]; then bad "the model's readers take per-layer values from model->layers" "$hits"
else ok "the model's readers take per-layer values from model->layers"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
