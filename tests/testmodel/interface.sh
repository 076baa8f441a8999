#!/bin/bash
# The model interface end to end with a model that is not the MLP (the
# test-only "twolayer", tests/testmodel/twolayer.c), through the real CLI:
# train writes its own tensor names and layers; a SIGTERM + --resume run
# ends identical to the run left alone; [model] init reads its table back
# exactly and refuses another model's file by tensor name; `checkpoints`
# validates its format-2 checkpoints; `ab` compares two policies on it.
# usage: interface.sh AMPTRAIN_TESTMODELS WORK_DIR
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../checkpoint/lib.sh"
A=$1 W=$2
rm -rf "$W" && mkdir -p "$W" || exit 1

config() { # name precision scaler steps
    cat >"$W/$1.ini" <<INI
[run]
name = $1
seed = 5
device = cpu
[data]
dataset = tiny
train_size = 512
test_size = 128
features = 12
classes = 5
batch_size = 32
[model]
name = twolayer
width = 10
[optim]
name = adamw
lr = 0.01
weight_decay = 0
[train]
steps = $4
log_every = 1
[precision]
plugin = $2
[scaler]
plugin = $3
INI
}
config tl_bf16 bf16 none 3000
config tl_fp16 fp16 dynamic 3000
config tl_fp32 fp32 none 3000

# 1. its own names in every output
"$A" train "$W/tl_bf16.ini" --set train.checkpoint_every=50 --out "$W/ref" 2>"$W/ref.log" ||
    fail "twolayer run failed: $(tail -3 "$W/ref.log")"
grep -q '"model": "twolayer"' "$W/ref/summary.json" || fail "summary.json does not name the model"
grep -q '"name": "encoder"' "$W/ref/summary.json" && grep -q '"name": "classifier"' "$W/ref/summary.json" ||
    fail "summary.json lacks the encoder/classifier layers"
grep -q '"name": "fc1"' "$W/ref/summary.json" && fail "summary.json names an MLP layer"
header=$(head -c 600 "$W/ref/weights.safetensors" | tr -c '[:print:]' ' ')
for t in encoder.proj.weight encoder.proj.bias classifier.weight; do
    case $header in *"\"$t\""*) ;; *) fail "weights.safetensors lacks $t: $header" ;; esac
done
case $header in *classifier.bias* | *fc1*) fail "weights.safetensors holds a tensor the model lacks" ;; esac
echo "outputs: summary and safetensors carry twolayer's own table"

# 2. stopped by SIGTERM after a checkpoint, resumed: identical outputs
"$A" train "$W/tl_bf16.ini" --set train.checkpoint_every=50 --out "$W/run" 2>"$W/stop.log" &
pid=$!
wait_for_ckpt "$W/run" "$pid" || fail "no checkpoint appeared"
sleep "0.0$((RANDOM % 10))"
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 143 ] || fail "exit $rc after SIGTERM (expected 143; raise train.steps if 0)"
"$A" checkpoints "$W/run" >"$W/ckpts.txt" 2>&1 || fail "checkpoints: $(cat "$W/ckpts.txt")"
"$A" train "$W/tl_bf16.ini" --set train.checkpoint_every=50 --resume "$W/run" 2>"$W/resume.log" ||
    fail "--resume failed: $(tail -3 "$W/resume.log")"
same_outputs "$W/ref" "$W/run"
echo "resume: $(sed -nE 's/.*(resuming from [^:]*:.*)/\1/p' "$W/resume.log" | head -1); outputs identical"

# 3. [model] init: the saved table loads back exactly (an lr of 1e-12 moves
# no weight by an ulp), and another model's file is refused by name
"$A" train "$W/tl_fp32.ini" --set model.init="$W/ref/weights.safetensors" --set train.steps=1 \
    --set optim.lr=1e-12 --out "$W/init" 2>"$W/init.log" || fail "init run failed: $(tail -3 "$W/init.log")"
cmp -s "$W/ref/weights.safetensors" "$W/init/weights.safetensors" ||
    fail "[model] init did not load the saved weights exactly"
"$A" train "$HERE/../../configs/tiny_fp16_none.ini" --set train.steps=2 --set run.device=cpu \
    --out "$W/mlp" 2>"$W/mlp.log" || fail "MLP run failed: $(tail -3 "$W/mlp.log")"
"$A" train "$W/tl_fp32.ini" --set model.init="$W/mlp/weights.safetensors" --out "$W/wrong" 2>"$W/wrong.log"
rc=$?
[ "$rc" = 2 ] && grep -q "encoder.proj.weight" "$W/wrong.log" ||
    fail "an MLP weights file as twolayer's init: exit $rc, $(tail -2 "$W/wrong.log")"
echo "init: round trip exact; a foreign table refused: $(tail -1 "$W/wrong.log")"

# 4. an A/B study over the interface
"$A" ab "$W/tl_fp32.ini" "$W/tl_fp16.ini" --seeds 2 --set train.steps=20 --out "$W/ab" >"$W/ab.log" 2>&1 ||
    fail "ab failed: $(tail -5 "$W/ab.log")"
grep -q '"encoder"' "$W/ab/ab.json" && grep -q 'classifier' "$W/ab/report.html" ||
    fail "ab.json/report.html lack twolayer's layers"
echo "ab: ab.json and report.html over twolayer's layers"
