#!/bin/bash
# Text that never reached stdout is a failure: every command that prints,
# with stdout on a full device (/dev/full) and with stdout closed, exits 1
# and says on stderr that writing standard output failed, and why. The same
# commands into a file exit 0 (so the failure is stdout's), and `train`,
# which prints nothing there, still exits 0 and writes its outputs either way.
# usage: stdout_fail.sh AMPTRAIN SOURCE_DIR WORK_DIR
set -u
A=$1 SRC=$2 W=$3
GPT=$SRC/tests/gpt/tiny_gpt.ini TINY=$SRC/configs/tiny_fp16_none.ini
TINY2=$SRC/configs/tiny_fp16_dynamic.ini
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W" || exit 1
RUN=$W/gpt
"$A" train "$GPT" --set train.steps=2 --set train.checkpoint_every=2 --set train.eval_every=0 \
    --out "$RUN" >"$W/train.out" 2>"$W/train.log" || fail "the text run failed: $(tail -3 "$W/train.log")"

# Each case: a name, then the command's arguments (@N: a folder of its own,
# fresh for each try, for the commands that write one).
cases=(
    "version|--version"
    "help|help"
    "dash_help|--help"
    "train_h|train -h"
    "ab_h|ab -h"
    "plugins|plugins"
    "plugins_v|plugins -v"
    "plugins_h|plugins -h"
    "checkpoints|checkpoints $RUN"
    "checkpoints_h|checkpoints -h"
    "sample|sample $RUN --tokens 40 --seed 3"
    "sample_h|sample -h"
    "settings|settings"
    "settings_md|settings --markdown"
    "settings_h|settings -h"
    "new_plugin|new-plugin scaler outtest @DIR"
    "new_plugin_h|new-plugin -h"
    "ab|ab $TINY $TINY2 --allow-diff --seeds 1 --set train.steps=2 --out @DIR"
)
n=0
for c in "${cases[@]}"; do
    name=${c%%|*}
    for how in file full closed; do
        n=$((n + 1))
        # shellcheck disable=SC2206 # the arguments hold no spaces
        args=(${c#*|})
        args=("${args[@]/@DIR/$W/dir$n}")
        log=$W/$name.$how.log
        case $how in
        file) "$A" "${args[@]}" >"$W/$name.out" 2>"$log" ;;
        full) "$A" "${args[@]}" >/dev/full 2>"$log" ;;
        closed) "$A" "${args[@]}" >&- 2>"$log" ;;
        esac
        rc=$?
        if [ "$how" = file ]; then
            [ "$rc" = 0 ] || fail "$name into a file: exit $rc: $(tail -3 "$log")"
            [ -s "$W/$name.out" ] || fail "$name into a file printed nothing"
            continue
        fi
        want="No space left on device"
        [ "$how" = closed ] && want="Bad file descriptor"
        [ "$rc" = 1 ] || fail "$name, stdout $how: exit $rc, expected 1: $(tail -3 "$log")"
        grep -q "^amptrain: writing standard output failed: $want\$" "$log" ||
            fail "$name, stdout $how: no message saying so: $(tail -3 "$log")"
        [ "$(grep -c "writing standard output failed" "$log")" = 1 ] ||
            fail "$name, stdout $how: the message more than once"
    done
    echo "$name: into a file exit 0; to /dev/full and closed exit 1, said on stderr"
done

# train prints nothing on stdout: a full or closed stdout is no failure of it,
# and a closed one takes no file's place (its outputs are whole).
[ -s "$W/train.out" ] && fail "train printed on stdout: $(head -3 "$W/train.out")"
for how in full closed; do
    out=$W/train_$how
    if [ "$how" = full ]; then
        "$A" train "$TINY" --set train.steps=2 --out "$out" >/dev/full 2>"$out.log"
    else
        "$A" train "$TINY" --set train.steps=2 --out "$out" >&- 2>"$out.log"
    fi
    rc=$?
    [ "$rc" = 0 ] || fail "train, stdout $how: exit $rc: $(tail -3 "$out.log")"
    grep -q "writing standard output failed" "$out.log" && fail "train, stdout $how: $(tail -1 "$out.log")"
    [ -s "$out/summary.json" ] && [ -s "$out/weights.safetensors" ] ||
        fail "train, stdout $how: outputs missing: $(ls "$out")"
done
echo "train: stdout full or closed, exit 0 with its outputs"
