#!/usr/bin/env bash
# docs/isa.md carries the encoding tables generated from the instruction table:
# the block between the BEGIN/END GENERATED markers must be exactly what
# `pccx isa-table` prints (blank lines at the edges of the block aside).
#
#   bash tests/scripts/docs_isa.sh BUILD
#
# On a difference, prints the diff (- document, + generated). To update the
# document, replace the block with the output of `BUILD/bin/pccx isa-table`.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: docs_isa.sh BUILD}" && pwd)
pccx=$build/bin/pccx
doc=$top/docs/isa.md
begin='<!-- BEGIN GENERATED: pccx isa-table -->'
end='<!-- END GENERATED: pccx isa-table -->'

[ -x "$pccx" ] || { echo "docs_isa: $pccx not built"; exit 1; }
[ -f "$doc" ] || { echo "docs_isa: $doc does not exist"; exit 1; }
nb=$(grep -cxF -- "$begin" "$doc")
ne=$(grep -cxF -- "$end" "$doc")
if [ "$nb" -ne 1 ] || [ "$ne" -ne 1 ]; then
  echo "docs_isa: docs/isa.md must hold each marker once on its own line" \
    "(found $nb '$begin', $ne '$end')"
  exit 1
fi
lb=$(grep -nxF -- "$begin" "$doc" | cut -d: -f1)
le=$(grep -nxF -- "$end" "$doc" | cut -d: -f1)
[ "$lb" -lt "$le" ] || { echo "docs_isa: the END marker comes before BEGIN"; exit 1; }

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# Drop leading and trailing blank lines: Markdown needs them around the block.
trim() { awk 'NF { for (; blank > 0; blank--) print ""; print; seen = 1; next }
              seen { blank++ }'; }
sed -n "$((lb + 1)),$((le - 1))p" "$doc" | trim >"$T/doc"
"$pccx" isa-table >"$T/raw" || { echo "docs_isa: pccx isa-table failed"; exit 1; }
trim <"$T/raw" >"$T/gen"
[ -s "$T/gen" ] || { echo "docs_isa: pccx isa-table printed nothing"; exit 1; }
if ! diff -u --label docs/isa.md --label "pccx isa-table" "$T/doc" "$T/gen"; then
  echo "docs_isa: the generated block of docs/isa.md differs from 'pccx isa-table'"
  exit 1
fi
echo "docs_isa: docs/isa.md matches pccx isa-table ($(wc -l <"$T/gen") lines)"
