#!/bin/sh
# loader_perms.sh CASE AMPTRAIN PLUGIN.so CONFIG.ini
# A plugin another user could replace must be refused before it is loaded.
# Copies PLUGIN (a valid scaler whose entry names it 'dup') into a private
# folder, runs `AMPTRAIN train CONFIG` with it once with safe modes (must
# succeed: the refusal below is then the mode's doing) and once with
#   file:   the plugin file group-writable      (named by path in the INI)
#   dir:    its folder world-writable           (named by path in the INI)
#   search: its folder group-writable           (found by name on AMPTRAIN_PLUGIN_PATH)
# which must exit 2 saying what is writable and which chmod fixes it, and
# (issue 15, sshd's rules for every folder up to / and for owners):
#   sticky:   its folder is a sticky shared folder (mode 1777, like /tmp):
#             refused with "move the plugin", never `chmod go-w` on it
#   ancestor: a folder above it world-writable, not sticky: refused, naming
#             that folder and `chmod go-w` on it
#   ancestor_sticky: a folder above it world-writable and sticky: loads
#   owner:    the plugin file belongs to another user (needs root; else 77)
#   owner_ancestor: a folder above it belongs to another user (root; else 77)
set -u
[ $# -eq 4 ] || { echo "usage: loader_perms.sh CASE AMPTRAIN PLUGIN CONFIG (CASE: see above)" >&2; exit 2; }
case=$1 amptrain=$2 plugin=$3 config=$4

case $case in
owner | owner_ancestor)
    # chown to another user needs root; nobody's uid (65534) stands in.
    [ "$(id -u)" -eq 0 ] || { echo "loader_perms.sh $case: needs root to chown; skipped"; exit 77; } ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/loader_perms.XXXXXX") || exit 2
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
chmod 755 "$tmp" || exit 2
# mid: a folder between the private tmp folder and the plugin folder, for
# the cases about folders above the plugin.
mid=$tmp/mid
dir=$mid/plugins
mkdir "$mid" "$dir" && chmod 755 "$mid" "$dir" || exit 2
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

fix=
case $case in
file) chmod g+w "$so"; what="$so: refused: the plugin file is writable by group"; fix="chmod go-w $so" ;;
dir) chmod o+w "$dir"; what="$dir: refused: the folder holding the plugin is writable by others"; fix="chmod go-w $dir" ;;
search) chmod g+w "$dir"; what="$dir: refused: the folder holding the plugin is writable by group"; fix="chmod go-w $dir" ;;
sticky) chmod 1777 "$dir"; what="$dir: refused: the folder holding the plugin is a shared folder (writable by group and others, sticky, mode 1777)"; move=1 ;;
ancestor) chmod 777 "$mid"; what="$mid: refused: the folder above the plugin is writable by"; fix="chmod go-w $mid" ;;
ancestor_sticky) chmod 1777 "$mid" ;;
owner) chown 65534 "$so"; what="$so: refused: the plugin file belongs to uid 65534, not to you (uid 0) or root"; move=1 ;;
owner_ancestor) chown 65534 "$mid"; what="$mid: refused: the folder above the plugin belongs to uid 65534"; move=1 ;;
*) echo "loader_perms.sh: unknown case '$case'" >&2; exit 2 ;;
esac

run "$spec" bad
rc=$?
if [ "$case" = ancestor_sticky ]; then
    # /tmp's arrangement one level up: others cannot rename our folder in it.
    [ $rc -eq 0 ] || fail "a sticky world-writable folder above the plugin was refused (exit $rc)"
    exit 0
fi
[ $rc -eq 2 ] || fail "exit status $rc, expected 2"
grep -qF -- "$what" "$tmp/stderr" || fail "stderr lacks: $what"
if [ -n "$fix" ]; then
    grep -qF -- "run \`$fix\`" "$tmp/stderr" || fail "stderr lacks: run \`$fix\`"
else
    # chmod cannot fix a shared folder or another user's file: never advise it
    ! grep -qF -- "chmod" "$tmp/stderr" || fail "stderr advises chmod where moving the plugin is the fix"
    grep -qF -- "move the plugin" "$tmp/stderr" || grep -qF -- "copy the plugin" "$tmp/stderr" ||
        fail "stderr does not say to move the plugin"
fi
[ ! -e "$tmp/bad/summary.json" ] || fail "the refused run wrote summary.json"
exit 0
