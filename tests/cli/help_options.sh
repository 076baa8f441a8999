#!/bin/bash
# Every option of every command is in the help: for each core/cli/cmd_*.c
# (the command `amptrain NAME`, `_` read as `-`), every long option of its
# own getopt_long table(s) and every short option it passes to
# amp_cli_parse must be described in `amptrain NAME --help` (a line starting,
# after its indent, with the option) and named in `amptrain --help`. An
# option added to a table without help fails here.
# usage: help_options.sh AMPTRAIN CLI_SOURCE_DIR
set -u
A=$1 SRC=$2
fail() {
    echo "FAIL: $*" >&2
    bad=1
}
bad=0
top=$("$A" --help) || { echo "FAIL: amptrain --help exited $?" >&2; exit 1; }
grep -q -- '--help' <<<"$top" || fail "amptrain --help does not name --help"
n=0
for f in "$SRC"/cmd_*.c; do
    cmd=$(basename "$f" .c)
    cmd=${cmd#cmd_}
    cmd=${cmd//_/-}
    # the entries of every `struct option` table in the file
    longs=$(awk '/struct option/ { t = 1 } t { print } t && /\{NULL, 0, NULL, 0\}/ { t = 0 }' "$f" |
        grep -oE '\{"[a-z][a-z0-9-]*", *(no|required|optional)_argument' | sed -E 's/^\{"([^"]*)".*/\1/')
    shorts=$(grep -oE 'amp_cli_parse\("[^"]*", *argc, *argv, *"[^"]*"' "$f" | sed -E 's/.*"([^"]*)"$/\1/' | tr -d ':' | fold -w1)
    [ -n "$longs" ] || { fail "$f: no option table found"; continue; }
    grep -q "^  $cmd\\b" <<<"$top" || fail "amptrain --help does not list the command $cmd"
    own=$("$A" "$cmd" --help) || { fail "amptrain $cmd --help exited $?"; continue; }
    for o in $longs; do
        [ "$o" = help ] && continue # every command's; amptrain --help says so
        grep -Eq -- "^ +(-[a-zA-Z], )?--$o( |,|=|$)" <<<"$own" ||
            fail "amptrain $cmd --help does not describe --$o (a line starting with it)"
        grep -Eq -- "--$o([^a-z0-9-]|$)" <<<"$top" || fail "amptrain --help does not name $cmd's --$o"
        n=$((n + 1))
    done
    for s in $shorts; do
        [ "$s" = h ] && continue
        grep -Eq -- "^ +-$s(,| |$)" <<<"$own" || fail "amptrain $cmd --help does not describe -$s"
        grep -Eq -- "-$s([^a-zA-Z0-9-]|$)" <<<"$top" || fail "amptrain --help does not name $cmd's -$s"
        n=$((n + 1))
    done
done
[ "$n" -ge 20 ] || fail "only $n options found in $SRC/cmd_*.c: the tables were not read"
[ "$bad" = 0 ] || exit 1
echo "$n options of $(ls "$SRC"/cmd_*.c | wc -l) commands: each described in its command's --help and named in amptrain --help"
