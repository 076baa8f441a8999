#!/usr/bin/env bash
# docs/settings.md is `amptrain settings --markdown`: the INI reference comes
# from the key tables, and a hand edit of either side shows here as a diff.
# Usage: doc_matches.sh AMPTRAIN DOC
A=$1 DOC=$2
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$A" settings --markdown >"$out" || { echo "FAIL: amptrain settings --markdown exited $?"; exit 1; }
if ! diff -u "$DOC" "$out"; then
    echo "FAIL: $DOC differs from the key tables (- the file, + the tables);"
    echo "      regenerate it: build/amptrain settings --markdown > docs/settings.md"
    exit 1
fi
echo "ok: $DOC matches the key tables"
