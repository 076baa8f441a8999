#!/bin/bash
# Checkpoints from before [dist] sync_batchnorm existed (their config without
# the line, made by drop_config_key) resume as the runs they were: the CNN's
# batch norm then took each rank's own rows, so under the new default (true)
# it is refused with exit 2 naming the key, and with sync_batchnorm = false it
# resumes; a model without batch norm (the MLP) resumes under the default.
# usage: syncbn_old_ckpt.sh AMPTRAIN DROP_CONFIG_KEY SCRIPT_DIR WORK_DIR
set -u
A=$1 DROP=$2 HERE=$3 W=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W" || exit 1
root=$(cd "$HERE/../.." && pwd)
old_ckpt() { # NAME CONFIG ARGS...: a 4-step run, its step-2 checkpoint made "old"
    local name=$1 cfg=$2
    shift 2
    "$A" train "$cfg" "$@" --set train.steps=4 --set train.checkpoint_every=2 --set train.keep=5 \
        --out "$W/$name" 2>"$W/$name.log" || fail "$name: the run failed: $(tail -3 "$W/$name.log")"
    local ck=$W/$name/checkpoints/ckpt-00000002.amp
    "$DROP" "$ck" dist sync_batchnorm "$ck.old" || fail "$name: drop_config_key failed"
    mv "$ck.old" "$ck" && rm -f "$W/$name/checkpoints/ckpt-00000004.amp" "$W/$name/weights.safetensors"
}
cnn=(--set run.device=cpu --set data.train_limit=256 --set data.test_limit=64 --set data.batch_size=16
     --set train.eval_every=0)
old_ckpt cnn "$root/configs/cnn_fashion_fp32.ini" "${cnn[@]}"
"$A" train "$root/configs/cnn_fashion_fp32.ini" "${cnn[@]}" --set train.steps=4 --resume "$W/cnn" \
    >"$W/cnn-default.log" 2>&1
rc=$?
[ "$rc" = 2 ] || fail "the CNN's old checkpoint resumed under sync_batchnorm = true: exit $rc: $(tail -3 "$W/cnn-default.log")"
grep -q "\[dist\] sync_batchnorm: checkpoint 'false', config 'true'" "$W/cnn-default.log" ||
    fail "the refusal does not name [dist] sync_batchnorm: $(tail -3 "$W/cnn-default.log")"
"$A" train "$root/configs/cnn_fashion_fp32.ini" "${cnn[@]}" --set train.steps=4 \
    --set dist.sync_batchnorm=false --resume "$W/cnn" >"$W/cnn-false.log" 2>&1 ||
    fail "the CNN's old checkpoint did not resume with sync_batchnorm = false: $(tail -3 "$W/cnn-false.log")"
echo "CNN checkpoint from before the key: refused under the default (exit 2, names the key), resumes with false"

old_ckpt mlp "$HERE/tiny.ini"
"$A" train "$HERE/tiny.ini" --set train.steps=4 --resume "$W/mlp" >"$W/mlp-default.log" 2>&1 ||
    fail "the MLP's old checkpoint did not resume under the default: $(tail -3 "$W/mlp-default.log")"
echo "MLP checkpoint from before the key: resumes under the default"
