#!/bin/bash
# The docs list everything shipped: every plugin built from plugins/ (each
# amp_add_plugin(KIND NAME ...) line, and `amptrain plugins` lists it) is
# named as `NAME` in docs/plugins.md, and every configs/*.ini as `FILE.ini`
# in docs/commands.md. A plugin or config added without a line there fails.
# usage: docs_lists.sh AMPTRAIN SOURCE_DIR
set -u
A=$1 SRC=$2
bad=0
fail() {
    echo "FAIL: $*" >&2
    bad=1
}
listed=$("$A" plugins) || { echo "FAIL: amptrain plugins exited $?" >&2; exit 1; }
plugins=$(cat "$SRC"/plugins/*/CMakeLists.txt | sed -nE 's/^ *amp_add_plugin\((precision|scaler) +([a-z0-9_]+) .*/\1 \2/p')
[ "$(wc -l <<<"$plugins")" -ge 10 ] || fail "only $(wc -l <<<"$plugins") plugins read from $SRC/plugins/*/CMakeLists.txt"
while read -r kind name; do
    grep -Eq "^$kind +$name " <<<"$listed" || fail "amptrain plugins does not list the shipped $kind $name"
    grep -q "\`$name\`" "$SRC/docs/plugins.md" || fail "docs/plugins.md does not name the $kind plugin \`$name\`"
done <<<"$plugins"
n=0
for f in "$SRC"/configs/*.ini; do
    c=$(basename "$f")
    grep -q "\`$c\`" "$SRC/docs/commands.md" || fail "docs/commands.md does not list the config \`$c\`"
    n=$((n + 1))
done
[ "$n" -ge 10 ] || fail "only $n configs in $SRC/configs"
[ "$bad" = 0 ] || exit 1
echo "$(wc -l <<<"$plugins") plugins in docs/plugins.md, $n configs in docs/commands.md"
