#!/usr/bin/env bash
# Every core key a run reads (its config.ini: [run] [data] [model] [optim]
# [train] [dist] and the plugin sections' `plugin`) is a row of a key table
# (`amptrain settings` lists the rows): no key is read past the tables, so
# none is missing from docs/settings.md. One short run per model.
# Usage: every_key_in_table.sh AMPTRAIN WORK_DIR CONFIGS_DIR
A=$1 W=$2 C=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
rows=$("$A" settings | sed -n 's/^\([a-z]*: \)\{0,1\}\([a-z_]*\.[a-z_0-9]*\) = .*/\2/p' | sort -u)
[ -n "$rows" ] || { echo "FAIL: amptrain settings listed no keys"; exit 1; }
fail=0
check_run() { # NAME CONFIG --set...
    local name=$1 cfg=$2
    shift 2
    if ! "$A" train "$cfg" "$@" --set train.steps=1 --out "$W/$name" >"$W/$name.log" 2>&1; then
        echo "FAIL: $name: train exited non-zero:"; cat "$W/$name.log"; fail=1; return
    fi
    local keys
    keys=$(awk '/^\[/ { s = substr($0, 2, length($0) - 2); next }
                /^[^;].* = / && s ~ /^(run|data|model|optim|train|dist)$/ { print s "." $1 }
                /^plugin = / && s ~ /^(precision|scaler)$/ { print s ".plugin" }' "$W/$name/config.ini")
    [ -n "$keys" ] || { echo "FAIL: $name: no keys in config.ini"; fail=1; return; }
    local k
    for k in $keys; do
        grep -qx "$k" <<<"$rows" || { echo "FAIL: $name: $k is read but is no row of a key table"; fail=1; }
    done
    echo "$name: $(wc -w <<<"$keys") keys, each a row"
}
check_run mlp "$C/tiny_fp16_dynamic.ini"
check_run gpt "$C/gpt_shakespeare_fp32.ini" --set model.n_layer=1 --set model.n_embd=32 \
    --set model.n_head=2 --set model.block_size=16 --set data.eval_iters=1 --set data.batch_size=2
check_run cnn "$C/cnn_fashion_fp32.ini" --set data.train_limit=64 --set data.test_limit=64 \
    --set data.batch_size=8
[ $fail = 0 ] && echo "ok: every key read is a table row"
exit $fail
