#!/bin/sh
# loader_perms.sh CASE AMPTRAIN PLUGIN.so CONFIG.ini
# A plugin another user could replace must be refused before it is loaded.
# Copies PLUGIN (a valid scaler whose entry names it 'dup') into a private
# folder, runs `AMPTRAIN train CONFIG` with it once with safe modes (must
# succeed: the refusal below is then the mode's doing) and once with
#   file:   the plugin file group-writable      (named by path in the INI)
#   dir:    its folder world-writable           (named by path in the INI)
#   search: its folder group-writable           (found by name on AMPTRAIN_PLUGIN_PATH)
# which must exit 2 saying what is writable and which chmod fixes it.
set -u
[ $# -eq 4 ] || { echo "usage: loader_perms.sh file|dir|search AMPTRAIN PLUGIN CONFIG" >&2; exit 2; }
case=$1 amptrain=$2 plugin=$3 config=$4

tmp=$(mktemp -d "${TMPDIR:-/tmp}/loader_perms.XXXXXX") || exit 2
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
dir=$tmp/plugins
mkdir "$dir" && chmod 755 "$dir" || exit 2
so=$dir/amp_scaler_dup.so
cp "$plugin" "$so" && chmod 755 "$so" || exit 2

run() { # run SPEC OUT: train 3 steps with [scaler] plugin = SPEC
    "$amptrain" train "$config" --set run.device=cpu --set train.steps=3 --set scaler.plugin="$1" \
        --out "$tmp/$2" >"$tmp/stdout" 2>"$tmp/stderr"
}
fail() {
    echo "loader_perms.sh $case: $*" >&2
    echo "--- stderr:" >&2
    cat "$tmp/stderr" >&2
    exit 1
}

if [ "$case" = search ]; then
    AMPTRAIN_PLUGIN_PATH=$dir
    export AMPTRAIN_PLUGIN_PATH
    spec=dup
else
    spec=$so
fi

run "$spec" ok
rc=$?
[ $rc -eq 0 ] || fail "with modes 755 the run failed (exit $rc)"

case $case in
file) chmod g+w "$so"; what="$so: refused: the plugin file is writable by group"; fix="chmod go-w $so" ;;
dir) chmod o+w "$dir"; what="$dir: refused: the folder holding the plugin is writable by others"; fix="chmod go-w $dir" ;;
search) chmod g+w "$dir"; what="$dir: refused: the folder holding the plugin is writable by group"; fix="chmod go-w $dir" ;;
*) echo "loader_perms.sh: unknown case '$case'" >&2; exit 2 ;;
esac

run "$spec" bad
rc=$?
[ $rc -eq 2 ] || fail "exit status $rc, expected 2"
grep -qF -- "$what" "$tmp/stderr" || fail "stderr lacks: $what"
grep -qF -- "run \`$fix\`" "$tmp/stderr" || fail "stderr lacks: run \`$fix\`"
[ ! -e "$tmp/bad/summary.json" ] || fail "the refused run wrote summary.json"
exit 0
