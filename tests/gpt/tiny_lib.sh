# Helpers of the GPT CLI tests on tests/gpt/tiny_gpt.ini, sourced after
# checkpoint/lib.sh with $amptrain and $cfg set.
train() { # DIR ARGS...: a run that must succeed
    local dir=$1
    shift
    "$amptrain" train "$cfg" "$@" --out "$dir" >/dev/null 2>"$dir.log" ||
        { cat "$dir.log" >&2; fail "run $dir ($*)"; }
}
loss_at() { # DIR STEP
    sed -nE "s/^\{\"step\":$2,.*\"loss\":([^,]*),.*/\1/p" "$1/metrics.jsonl"
}
