#!/bin/sh
# Fails when a function or function pointer declared in the backend header
# takes more than MAX parameters (ops take descriptors instead).
# usage: backend_params.sh core/backend/backend.h [MAX]
hdr=${1:?usage: backend_params.sh HEADER [MAX]}
max=${2:-8}
[ -r "$hdr" ] || { echo "backend_params.sh: cannot read $hdr" >&2; exit 2; }
# Comments and preprocessor lines out, the whole header on one line, then
# one declaration per ';' or '{': a name followed by '(' ... ')' whose
# top-level commas count the parameters.
sed -e 's://.*$::' -e '/^[[:space:]]*#/d' "$hdr" | tr '\n' ' ' |
    sed -e 's:/\*[^*]*\*\+\([^/*][^*]*\*\+\)*/: :g' | tr ';{' '\n\n' |
    awk -v max="$max" -v hdr="$hdr" '
    {
        line = $0
        # the parameter list: after "(*name)(" for a pointer, else "name("
        if (match(line, /\(\*[A-Za-z_0-9]+\)[[:space:]]*\(/)) {
            name = substr(line, RSTART + 2, RLENGTH); sub(/\).*/, "", name)
            rest = substr(line, RSTART + RLENGTH)
        } else if (match(line, /[A-Za-z_][A-Za-z_0-9]*[[:space:]]*\(/) && line !~ /^[[:space:]]*(typedef|return|if|for|while)/) {
            name = substr(line, RSTART, RLENGTH - 1); sub(/[[:space:]]+$/, "", name)
            rest = substr(line, RSTART + RLENGTH)
        } else next
        if (name ~ /^(sizeof|defined|AMP_[A-Z_]+)$/) next
        depth = 1; n = 1; empty = 1
        for (i = 1; i <= length(rest) && depth > 0; i++) {
            c = substr(rest, i, 1)
            if (c == "(") depth++
            else if (c == ")") depth--
            else if (c == "," && depth == 1) n++
            else if (c !~ /[[:space:]]/ && depth == 1) empty = 0
        }
        if (depth > 0) next
        if (empty) n = 0
        checked++
        if (n > max) { printf "%s: %s takes %d parameters (at most %d: pass a descriptor)\n", hdr, name, n, max; bad++ }
        else if (n > worst) worst = n
    }
    END {
        if (checked < 10) { printf "%s: only %d declarations found; the parser is broken\n", hdr, checked; exit 2 }
        if (bad) exit 1
        printf "%s: %d declarations, the widest takes %d parameters (limit %d)\n", hdr, checked, worst, max
    }'
