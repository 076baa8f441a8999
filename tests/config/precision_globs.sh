#!/bin/bash
# layer.<name> and layer.<glob> overrides through the CLI, every form
# docs/plugins.md documents, in a config file and with --set: each run's resolved
# per-layer precision (AMPTRAIN_LOG=debug) must be the one the keys ask for;
# a later key wins; a glob that matches no layer, or a malformed one, is
# exit 2 naming the file:line (or --set) of the key.
set -u
. "$(dirname "$0")/lib.sh"
export AMPTRAIN_LOG=debug

# mlp NAME [precision lines...]: a 3-layer MLP (fc1 fc2 fc3) on the tiny task
mlp() {
    local name=$1
    shift
    ini "$name" <<EOF
[run]
device = cpu
[data]
dataset = tiny
train_size = 64
test_size = 32
features = 8
batch_size = 32
[model]
hidden = 16,16
[train]
steps = 1
[precision]
plugin = fp16
$(printf '%s\n' "$@")
[scaler]
plugin = none
EOF
}

# layer LAYER GEMM ACT WEIGHTS: the debug line of the last run says so
layer() {
    grep -Eq "debug: layer $1: gemm $2, activations $3, weights $4 " "$W/log" ||
        fail "layer $1: expected gemm $2, activations $3, weights $4; got: $(grep "layer $1:" "$W/log")"
}
all() { layer "$1" "$2" "$2" "$2"; }

# layer.fc* = f32: every fc layer
expect 0 'debug: layer fc1' "$A" train "$(mlp star 'layer.fc* = f32')" --out "$W/star"
all fc1 f32 && all fc2 f32 && all fc3 f32
# the same through --set, and a plain name
expect 0 'debug: layer fc1' "$A" train "$(mlp plain)" --set 'precision.layer.fc*=f32' --out "$W/set"
all fc1 f32 && all fc3 f32
expect 0 'debug: layer fc1' "$A" train "$(mlp name 'layer.fc1 = f32')" --out "$W/name"
all fc1 f32 && all fc2 f16 && all fc3 f16
# ? and [...] and [!...]
expect 0 'debug: layer fc1' "$A" train "$(mlp qm 'layer.fc? = bf16')" --out "$W/qm"
all fc1 bf16 && all fc2 bf16 && all fc3 bf16
expect 0 'debug: layer fc1' "$A" train "$(mlp set12 'layer.fc[12] = f32')" --out "$W/set12"
all fc1 f32 && all fc2 f32 && all fc3 f16
expect 0 'debug: layer fc1' "$A" train "$(mlp not1 'layer.fc[!1] = f32')" --out "$W/not1"
all fc1 f16 && all fc2 f32 && all fc3 f32
# op.<class>, then layer.* over it
expect 0 'debug: layer fc1' "$A" train "$(mlp op 'op.gemm = bf16' 'layer.fc3 = f32')" --out "$W/op"
layer fc1 bf16 f16 f16 && all fc3 f32
echo "ok  layer.<name>, layer.<glob> (* ? [..] [!..]) and op.<class>, in a file and with --set"

# A later key wins, in both orders, and a --set key comes after the file's.
expect 0 'debug: layer fc1' "$A" train "$(mlp later1 'layer.fc* = f32' 'layer.fc2 = bf16')" --out "$W/l1"
all fc1 f32 && all fc2 bf16 && all fc3 f32
expect 0 'debug: layer fc1' "$A" train "$(mlp later2 'layer.fc2 = bf16' 'layer.fc* = f32')" --out "$W/l2"
all fc2 f32
expect 0 'debug: layer fc1' "$A" train "$(mlp later3 'layer.fc2 = bf16')" --set 'precision.layer.fc*=f32' --out "$W/l3"
all fc2 f32
echo "ok  a later layer.* key wins"

# A glob that matches no layer names the key's line (or its --set) and the layers.
cfg=$(mlp nomatch 'layer.fc1 = f32' 'layer.conv* = f32')
expect 2 "^amptrain: .*$cfg:16: \[precision\] layer\.conv\*: the pattern 'conv\*' matches no layer. the model's layers are: fc1 fc2 fc3" \
    "$A" train "$cfg" --out "$W/nomatch"
expect 2 "^amptrain: .*--set precision\.layer\.h\.\*\.attn\.\*: \[precision\] layer\.h\.\*\.attn\.\*: the pattern 'h\.\*\.attn\.\*' matches no layer" \
    "$A" train "$(mlp plain)" --set 'precision.layer.h.*.attn.*=f32' --out "$W/nomatch_set"
cfg=$(mlp malformed 'layer.fc[12 = f32')
expect 2 "^amptrain: .*$cfg:15: \[precision\] layer\.fc\[12: malformed pattern 'fc\[12': the '\[' at column 3 has no closing '\]'" \
    "$A" train "$cfg" --out "$W/malformed"
[ ! -e "$W/malformed/config.ini" ] || fail "a refused run wrote config.ini"
echo "ok  a glob matching no layer and a malformed glob: exit 2 at the key's line"

# The GPT's examples in docs/gpt-shakespeare.md: every attention core, and everything in the attention blocks.
gpt=$TESTS/gpt/tiny_gpt.ini
gsets=(--set train.steps=1 --set train.eval_every=0 --set train.checkpoint_every=0)
expect 0 'debug: layer transformer' "$A" train "$gpt" "${gsets[@]}" \
    --set 'precision.layer.transformer.h.*.attn=f32' --out "$W/gpt_attn"
all transformer.h.0.attn f32 && all transformer.h.0.attn.c_attn f16 && all lm_head f16
cfg=$(sed 's/^plugin = fp16$/plugin = fp16\nlayer.transformer.h.*.attn.* = f32/' "$gpt" | ini gpt_blocks)
grep -q 'attn\.\* = f32' "$cfg" || fail "could not write $cfg"
expect 0 'debug: layer transformer' "$A" train "$cfg" "${gsets[@]}" --out "$W/gpt_blocks"
all transformer.h.0.attn.c_attn f32 && all transformer.h.0.attn.c_proj f32 &&
    all transformer.h.0.attn f16 && all transformer.h.0.mlp.c_fc f16
echo "ok  GPT: layer.transformer.h.*.attn and layer.transformer.h.*.attn.*"

# The CNN's: layer.conv1 and op.conv (Fashion-MNIST, a few images).
if [ -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    cnn=$(ini cnn <<'EOF'
[run]
device = cpu
[data]
dataset = fashion_mnist
train_limit = 64
test_limit = 32
batch_size = 32
[model]
name = cnn
layers = conv(4,3,pad=1) relu pool(2) conv(4,3,pad=1) relu fc
[train]
steps = 1
[precision]
plugin = bf16
layer.conv1 = f32
EOF
)
    expect 0 'debug: layer conv1' "$A" train "$cnn" --out "$W/cnn"
    layer conv1 f32 f32 f32 && layer conv2 bf16 bf16 bf16 &&
        grep -Eq 'layer conv1: .*\(conv f32,' "$W/log" && grep -Eq 'layer conv2: .*\(conv bf16,' "$W/log" ||
        fail "layer.conv1 = f32: $(grep 'debug: layer' "$W/log")"
    expect 0 'debug: layer conv1' "$A" train "$cnn" --set precision.op.conv=f32 --out "$W/cnn_op"
    grep -Eq 'layer conv2: gemm bf16, .*\(conv f32,' "$W/log" || fail "op.conv = f32: $(grep 'debug: layer' "$W/log")"
    echo "ok  CNN: layer.conv1 and op.conv"
else
    echo "skip CNN examples: no Fashion-MNIST (dataset-fashion-mnist)"
fi
