#!/usr/bin/env bash
# The map matches the territory: every repository path that README.md, docs/architecture.md and
# docs/packaging.md name (a token with a '/' and a known top-level folder, or a file name with
# an extension under one) exists, except what they say is not built yet.
#   tests/scripts/docs_paths.sh BUILD
set -u
missing=0 n=0
for doc in README.md docs/architecture.md docs/packaging.md; do
  # `path` tokens in backquotes, and tree lines of the code blocks (first word)
  while read -r p; do
    p=${p%%[,:;)]}
    p=${p%.\{c,h\}}; p=${p%.[ch]\]}
    case "$p" in
      firmware/*|*'*'*|*'<'*|*'{'*|*'$'*) continue ;;   # not built yet, patterns, placeholders
    esac
    n=$((n + 1))
    if [ ! -e "$p" ]; then echo "FAIL $doc names $p, which does not exist"; missing=$((missing + 1)); fi
  done < <(grep -oE '`(isa|reference|sim|host|driver|tests|scripts|docs|debian)/[A-Za-z0-9_./-]*`' "$doc" |
           tr -d '`' | sed 's|/$||' | sort -u;
           awk '/^```/{f=!f; next} f && $1 ~ /^(isa|reference|sim|host|driver|tests|scripts|docs|debian)\// {print $1}' "$doc" |
           tr -d ',:' | sed 's|/$||' | sort -u)
done
echo "docs_paths: $n paths checked, $missing missing"
[ "$missing" -eq 0 ]
