#!/bin/sh
# sdk_test.sh CASE BUILD_DIR SOURCE_DIR CMAKE CC
# What a user does with an installed amptrain, through the installed files
# only: `cmake --install` into a temporary prefix, then
#   examples:   build examples/headroom, fp16_edges and fp8_percentile (copied out of
#               the source tree) with find_package(amptrain), and headroom
#               once more with pkg-config and a plain cc; train with each
#               through the installed amptrain and check the summaries;
#   scaler, precision: `amptrain new-plugin CASE NAME DIR`, build the folder
#               as written (warnings as errors), train with its INI.
#   precision_fp8: `amptrain new-plugin precision NAME DIR --template fp8`
#               (a recipe on the installed fp8 policy), build it, train a
#               tiny GPT (FP8 telemetry, layer.lm_head, its scales against a
#               hand computation and against the built-in fp8), its keys'
#               errors, and `ab baseline.ini NAME.ini --scan layers`.
# Runs under umask 002: the install, the SDK's build helper and new-plugin
# must give plugins and their folders safe modes themselves.
set -u
[ $# -eq 5 ] || { echo "usage: sdk_test.sh examples|scaler|precision|precision_fp8 BUILD SOURCE CMAKE CC" >&2; exit 2; }
case=$1 build=$2 src=$3 cmake=$4 cc=$5
umask 002

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sdk_test.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log
fail() {
    echo "sdk_test.sh $case: $*" >&2
    echo "--- last command output:" >&2
    tail -n 40 "$log" >&2
    exit 1
}
step() { # step WHAT COMMAND...: runs COMMAND, output to $log, fails with WHAT
    what=$1
    shift
    "$@" >"$log" 2>&1 || fail "$what failed (exit $?): $*"
}
json_num() { # json_num FILE KEY: a top-level number of summary.json
    sed -n "s/^  \"$2\": \([-0-9.e+]*\),*$/\1/p" "$1"
}
# summary_scaler FILE NAME PATH / summary_precision: the plugin the run recorded.
summary_has() {
    grep -qF "\"$2\": {\"name\":\"$3\",\"version\":\"$4\",\"path\":\"$5\"}" "$1" ||
        fail "$1 does not record $2 plugin $3 $4 at $5: $(grep '"plugins"' "$1")"
}

prefix=$tmp/prefix
step "cmake --install" "$cmake" --install "$build" --prefix "$prefix"
amptrain=$prefix/bin/amptrain
[ -x "$amptrain" ] || fail "no $amptrain after the install"
config_dir=$(dirname "$(find "$prefix" -name amptrainConfig.cmake)")
[ -f "$config_dir/amptrainConfigVersion.cmake" ] || fail "no amptrainConfigVersion.cmake in $config_dir"
# The installed binary finds the installed plugins, never the build tree's.
step "amptrain plugins" "$amptrain" plugins
grep -Eq "^scaler +dynamic +.* $prefix/.*/amptrain/plugins/amp_scaler_dynamic\.so$" "$log" ||
    fail "the installed amptrain does not list its installed dynamic plugin"
! grep -qF "$build" "$log" || fail "the installed amptrain lists plugins of the build tree"

# cmake_plugin DIR: configure + build DIR against the install only.
cmake_plugin() {
    step "configuring $1" "$cmake" -S "$1" -B "$1/build" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_C_COMPILER="$cc" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
        "-DCMAKE_C_FLAGS=-Wall -Wextra -Wshadow -pedantic -Werror"
    found=$(sed -n 's/^amptrain_DIR:PATH=//p' "$1/build/CMakeCache.txt")
    [ "$found" = "$config_dir" ] || fail "$1 found amptrain in '$found', not the install $config_dir"
    step "building $1" "$cmake" --build "$1/build"
}

case $case in
examples)
    for ex in headroom fp16_edges fp8_percentile; do
        cp -R "$src/examples/$ex" "$tmp/$ex" || exit 2
        rm -rf "$tmp/$ex/build"
        cmake_plugin "$tmp/$ex"
    done
    hr=$tmp/headroom/build/amp_scaler_headroom.so
    ed=$tmp/fp16_edges/build/amp_precision_fp16_edges.so

    # headroom against dynamic on the tiny task where FP16 gradients underflow:
    # the point of headroom is fewer underflows without more skipped steps.
    steps=60
    step "training with headroom" "$amptrain" train "$tmp/headroom/tiny_headroom.ini" \
        --set run.device=cpu --set train.steps=$steps --out "$tmp/runs/headroom"
    step "training with dynamic" "$amptrain" train "$src/configs/tiny_fp16_dynamic.ini" \
        --set run.device=cpu --set train.steps=$steps --out "$tmp/runs/dynamic"
    sh=$tmp/runs/headroom/summary.json sd=$tmp/runs/dynamic/summary.json
    summary_has "$sh" scaler headroom 1.0.0 "$hr"
    [ "$(json_num "$sh" steps)" = $steps ] || fail "headroom run: steps != $steps"
    uh=$(json_num "$sh" underflow) ud=$(json_num "$sd" underflow)
    kh=$(json_num "$sh" skipped_steps) kd=$(json_num "$sd" skipped_steps)
    [ -n "$uh" ] && [ -n "$ud" ] && [ -n "$kh" ] && [ -n "$kd" ] || fail "summary.json lacks underflow/skipped_steps"
    echo "tiny task, $steps steps: headroom underflow $uh skipped $kh; dynamic underflow $ud skipped $kd"
    [ "$uh" -lt "$ud" ] || fail "headroom underflowed $uh times, dynamic $ud: expected fewer"
    [ "$kh" -le "$kd" ] || fail "headroom skipped $kh steps, dynamic $kd: expected no more"

    # fp16_edges: the first and last layers in FP32, the inner ones in FP16.
    step "training with fp16_edges" env AMPTRAIN_LOG=debug "$amptrain" train \
        "$tmp/fp16_edges/tiny_fp16_edges.ini" --set run.device=cpu --set train.steps=5 --out "$tmp/runs/edges"
    summary_has "$tmp/runs/edges/summary.json" precision fp16_edges 1.0.0 "$ed"
    for l in "fc1: gemm f32, activations f32, weights f32" "fc2: gemm f16, activations f16, weights f16" \
        "fc3: gemm f16, activations f16, weights f16" "fc4: gemm f32, activations f32, weights f32"; do
        grep -qF "layer $l" "$log" || fail "fp16_edges: no debug line 'layer $l'"
    done

    # fp8_percentile: a user's FP8 recipe on the installed fp8 policy (its
    # scale_update replaced) drives the scales; its metrics carry the
    # per-operand fp8 telemetry, and a bad key of its own is refused at its
    # line, as is fp8's amax_compute, which the percentile replaces.
    pc=$tmp/fp8_percentile/build/amp_precision_fp8_percentile.so
    step "training with fp8_percentile" "$amptrain" train "$tmp/fp8_percentile/tiny_fp8_percentile.ini" \
        --set run.device=cpu --set train.steps=20 --out "$tmp/runs/percentile"
    grep -qF "\"precision\": {\"name\":\"fp8_percentile\",\"version\":\"2.0.0\",\"path\":\"$pc\",\"base\":{\"name\":\"fp8\"," \
        "$tmp/runs/percentile/summary.json" || fail "fp8_percentile: summary.json does not record it on fp8"
    grep -q '"fp8":\[{"layer":"fc1","role":"input","format":"e4m3","scaling":"delayed"' \
        "$tmp/runs/percentile/metrics.jsonl" || fail "fp8_percentile: no fp8 telemetry for fc1"
    for bad in "percentile=0|precision.percentile: .*0 is not in (0, 100\\]" \
        "amax_compute=max|precision.amax_compute: .*fp8_percentile takes the percentile of the history instead"; do
        "$amptrain" train "$tmp/fp8_percentile/tiny_fp8_percentile.ini" --set "precision.${bad%%|*}" \
            --out "$tmp/runs/percentile_bad" 2>"$tmp/pct_bad.log"
        [ $? = 2 ] && grep -q "${bad#*|}" "$tmp/pct_bad.log" ||
            fail "fp8_percentile: ${bad%%|*} not refused with exit 2: $(cat "$tmp/pct_bad.log")"
    done
    # Its scales by hand: with percentile = 50 and fp8's margin = 1, fc1's
    # input scale after step k is 448 / 2 / (the nearest-rank median of its
    # amax over steps 1..k).
    step "fp8_percentile, median, margin 1" "$amptrain" train "$tmp/fp8_percentile/tiny_fp8_percentile.ini" \
        --set run.device=cpu --set train.steps=6 --set train.log_every=1 --set precision.percentile=50 \
        --set precision.margin=1 --out "$tmp/runs/pct_median"
    python3 - "$tmp/runs/pct_median/metrics.jsonl" <<'PY' >"$log" 2>&1 || fail "fp8_percentile: fc1's scale is not 224 / the median of its amax history"
import json, math, sys
ops = [[o for o in json.loads(l)["fp8"] if o["layer"] == "fc1" and o["role"] == "input"][0]
       for l in open(sys.argv[1]) if '"fp8"' in l]
for k, o in enumerate(ops):
    hist = sorted(p["amax"] for p in ops[:k + 1])
    want = 448.0 / 2 / hist[math.ceil(0.5 * len(hist)) - 1]
    print(f"step {k + 1}: fc1 input amax {o['amax']:.6g} scale {o['scale']:.7g}, 224/median {want:.7g}")
    if abs(o["scale"] - want) > 1e-6 * want:
        sys.exit(1)
PY
    cat "$log"
    # its layer.* keys (the SDK's amptrain/layer_keys.h): a layer kept in BF16
    # has no FP8 operands, a key naming no layer is refused at its line, and
    # the recipe is a layer scan's candidate against bf16.
    step "fp8_percentile with layer.fc4 = bf16" "$amptrain" train "$tmp/fp8_percentile/tiny_fp8_percentile.ini" \
        --set run.device=cpu --set train.steps=3 --set precision.layer.fc4=bf16 --out "$tmp/runs/pct_fc4"
    grep -q '"layer":"fc3","role":"input"' "$tmp/runs/pct_fc4/metrics.jsonl" &&
        ! grep -q '"layer":"fc4"' "$tmp/runs/pct_fc4/metrics.jsonl" ||
        fail "fp8_percentile: layer.fc4 = bf16 did not keep fc4 out of FP8"
    "$amptrain" train "$tmp/fp8_percentile/tiny_fp8_percentile.ini" --set 'precision.layer.fc9=bf16' \
        --out "$tmp/runs/pct_fc9" 2>"$tmp/pct_fc9.log"
    [ $? = 2 ] && grep -q "layer.fc9: unknown layer 'fc9' matches no layer; the model's layers are: fc1 fc2 fc3 fc4" "$tmp/pct_fc9.log" ||
        fail "fp8_percentile: layer.fc9 not refused with exit 2: $(cat "$tmp/pct_fc9.log")"
    sed '0,/^name = .*/s//name = tiny_bf16_base/; s/^plugin = build.*/plugin = bf16/; /^percentile/d; /^amax_history_len/d' \
        "$tmp/fp8_percentile/tiny_fp8_percentile.ini" >"$tmp/fp8_percentile/tiny_bf16_base.ini"
    step "ab --scan with fp8_percentile" "$amptrain" ab "$tmp/fp8_percentile/tiny_bf16_base.ini" \
        "$tmp/fp8_percentile/tiny_fp8_percentile.ini" --scan 'fc1,fc4' --seeds 1 --set run.device=cpu \
        --set train.steps=3 --out "$tmp/runs/pct_scan"
    grep -Eq '^ +[12] +fc1 +1 ' "$log" && grep -Eq '^ +[12] +fc4 +1 ' "$log" &&
        [ -d "$tmp/runs/pct_scan/runs/tiny_fp8_percentile_keep-fc4" ] ||
        fail "fp8_percentile: the scan did not rank fc1 and fc4"

    # pkg-config and a plain compiler; found by name on AMPTRAIN_PLUGIN_PATH.
    PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name amptrain.pc)")
    export PKG_CONFIG_PATH
    cflags=$(pkg-config --cflags amptrain) || fail "pkg-config --cflags amptrain failed"
    plugindir=$(pkg-config --variable=plugindir amptrain)
    [ -f "$plugindir/amp_scaler_dynamic.so" ] || fail "pkg-config plugindir '$plugindir' lacks the built-in plugins"
    mkdir "$tmp/pc" && chmod 755 "$tmp/pc" || exit 2
    # shellcheck disable=SC2086 # cflags is a list of flags
    step "cc with pkg-config" "$cc" $cflags -std=c11 -Wall -Wextra -pedantic -Werror -shared -fPIC \
        -Wl,-z,defs -o "$tmp/pc/amp_scaler_headroom.so" "$src/examples/headroom/headroom.c" -lm
    chmod go-w "$tmp/pc/amp_scaler_headroom.so"
    step "training with the pkg-config build" env AMPTRAIN_PLUGIN_PATH="$tmp/pc" "$amptrain" train \
        "$tmp/headroom/tiny_headroom.ini" --set run.device=cpu --set scaler.plugin=headroom --set train.steps=5 \
        --out "$tmp/runs/pc"
    summary_has "$tmp/runs/pc/summary.json" scaler headroom 1.0.0 "$tmp/pc/amp_scaler_headroom.so"
    ;;
scaler | precision)
    name=my_$case
    dir=$tmp/$name
    step "new-plugin" "$amptrain" new-plugin "$case" "$name" "$dir"
    grep -qF "cmake -S . -B build -DCMAKE_PREFIX_PATH=$prefix" "$log" ||
        fail "new-plugin did not print the configure command for this install"
    grep -q "find_package(amptrain" "$dir/CMakeLists.txt" || fail "CMakeLists.txt lacks find_package(amptrain)"
    # A second time into the same (now non-empty) folder: refused, nothing rewritten.
    echo "/* edited */" >>"$dir/$name.c"
    "$amptrain" new-plugin "$case" "$name" "$dir" >"$log" 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "new-plugin into a non-empty folder: exit $rc, expected 2"
    grep -qF "exists and is not empty" "$log" || fail "new-plugin into a non-empty folder: no reason given"
    grep -qF "/* edited */" "$dir/$name.c" || fail "new-plugin overwrote $dir/$name.c"
    "$amptrain" new-plugin "$case" Bad-Name "$tmp/bad" >"$log" 2>&1
    rc=$?
    [ $rc -eq 2 ] && [ ! -e "$tmp/bad" ] || fail "new-plugin with the name Bad-Name: exit $rc (expected 2) or wrote $tmp/bad"

    cmake_plugin "$dir"
    so=$dir/build/amp_${case}_$name.so
    [ -f "$so" ] || fail "the build did not produce $so"
    step "training with $name.ini" "$amptrain" train "$dir/$name.ini" --set run.device=cpu --set train.steps=20 \
        --out "$tmp/runs/$name"
    summary_has "$tmp/runs/$name/summary.json" "$case" "$name" 0.1.0 "$so"
    loss=$(json_num "$tmp/runs/$name/summary.json" final_train_loss)
    case $loss in '' | *nan* | *inf*) fail "final_train_loss is '$loss'" ;; esac
    step "training with baseline.ini" "$amptrain" train "$dir/baseline.ini" --set run.device=cpu --set train.steps=20 \
        --out "$tmp/runs/baseline"
    ;;
precision_fp8)
    # The recipe builds on the installed fp8 policy (host->base_policy): it
    # keeps fp8's formats and keys and replaces only scale_update.
    name=my_recipe
    dir=$tmp/$name
    step "new-plugin --template fp8" "$amptrain" new-plugin precision "$name" "$dir" --template fp8
    c=$dir/$name.c
    grep -q 'host->base_policy(host->ctx, "fp8")' "$c" && grep -q 'plugin_scale_update' "$c" &&
        ! grep -Eq 'AMP_FORMAT_F8|layer_keys' "$c" ||
        fail "the fp8 template does not build on fp8 (or copies its formats or layer keys)"
    cmake_plugin "$dir"
    so=$dir/build/amp_precision_$name.so
    fp8so=$(find "$prefix" -name amp_precision_fp8.so)
    train() { # train OUT INI ARGS...: a few steps of the tiny GPT on the CPU, every step logged
        out=$tmp/runs/$1 ini=$2
        shift 2
        step "training $(basename "$ini") $*" "$amptrain" train "$ini" --set run.device=cpu \
            --set train.log_every=1 "$@" --out "$out"
    }
    train r "$dir/$name.ini" --set train.steps=6
    grep -qF "\"precision\": {\"name\":\"$name\",\"version\":\"0.1.0\",\"path\":\"$so\",\"base\":{\"name\":\"fp8\",\"version\":\"1.0.0\",\"path\":\"$fp8so\"}}" \
        "$tmp/runs/r/summary.json" || fail "summary.json does not record $name on the installed fp8: $(grep '"plugins"' "$tmp/runs/r/summary.json")"
    loss=$(json_num "$tmp/runs/r/summary.json" final_train_loss)
    case $loss in '' | *nan* | *inf*) fail "final_train_loss is '$loss'" ;; esac
    # fp8's operands on the block's linears; the INI's layer.lm_head = bf16
    # (read by fp8) keeps the head out of FP8, and without it the head is in.
    grep -q '"fp8":\[{"layer":"transformer.h.0.attn.c_attn","role":"input","format":"e4m3","scaling":"delayed"' \
        "$tmp/runs/r/metrics.jsonl" || fail "$name: no fp8 telemetry for transformer.h.0.attn.c_attn"
    ! grep -q '"layer":"lm_head"' "$tmp/runs/r/metrics.jsonl" || fail "$name: layer.lm_head = bf16 left lm_head in FP8"
    sed '/^layer\.lm_head/d' "$dir/$name.ini" >"$dir/head_fp8.ini"
    train head "$dir/head_fp8.ini" --set train.steps=2
    grep -q '"layer":"lm_head","role":"input","format":"e4m3"' "$tmp/runs/head/metrics.jsonl" ||
        fail "$name: without layer.lm_head the head has no FP8 operands"
    # The replaced rule, checked by hand: with margin = 1 (fp8's key) every
    # delayed operand's scale after step k is 2^floor(log2(format_max / 2 /
    # max(its amax over steps 1..k))); with pow2 = 0 it is fp8's own,
    # format_max / 2 / that max, and the built-in fp8 run with the same keys
    # gives the same losses and telemetry, bit for bit.
    train m1 "$dir/$name.ini" --set train.steps=5 --set precision.margin=1
    train m0 "$dir/$name.ini" --set train.steps=5 --set precision.margin=1 --set precision.pow2=0
    sed 's|^plugin = build/.*|plugin = fp8|; /^pow2/d' "$dir/$name.ini" >"$dir/builtin.ini"
    train fp8 "$dir/builtin.ini" --set train.steps=5 --set precision.margin=1
    python3 - "$tmp/runs/m1/metrics.jsonl" "$tmp/runs/m0/metrics.jsonl" "$tmp/runs/fp8/metrics.jsonl" <<'PY' >"$log" 2>&1 ||
import json, math, sys
runs = [[json.loads(l) for l in open(p) if '"fp8"' in l] for p in sys.argv[1:]]
fmax = {"e4m3": 448.0, "e5m2": 57344.0}
def check(recs, pow2):
    n = differ = 0
    for k, rec in enumerate(recs):
        for o in rec["fp8"]:
            hist = [[p for p in r["fp8"] if p["layer"] == o["layer"] and p["role"] == o["role"]][0]["amax"]
                    for r in recs[:k + 1]]
            te = fmax[o["format"]] / 2 / max(hist)
            want = 2.0 ** math.floor(math.log2(te)) if pow2 else te
            if abs(o["scale"] - want) > 1e-6 * want:
                sys.exit(f"pow2={pow2} step {k + 1} {o['layer']} {o['role']}: scale {o['scale']}, by hand {want}")
            n += 1
            differ += abs(o["scale"] - te) > 1e-6 * te
            if k < 2 and o["layer"] == "transformer.h.0.attn.c_attn":
                print(f"pow2={pow2} step {k + 1} c_attn {o['role']}: amax {o['amax']:.6g} scale {o['scale']:.7g}, "
                      f"fp8's {te:.7g}")
    return n, differ
n1, d1 = check(runs[0], 1)
n0, d0 = check(runs[1], 0)
print(f"pow2=1: {n1} scales by hand, {d1} differ from fp8's rule; pow2=0: {n0}, {d0} differ")
if n1 == 0 or d1 < n1 // 2 or d0 != 0:
    sys.exit("the recipe's scales do not differ from fp8's rule as they should")
a = [(r["loss"], r["fp8"]) for r in runs[1]]
b = [(r["loss"], r["fp8"]) for r in runs[2]]
if a != b:
    sys.exit("pow2 = 0 does not reproduce the built-in fp8 run")
PY
        fail "$name: the recipe's scales are not the hand-computed ones"
    cat "$log"
    # Keys: fp8 checks its own (through the recipe, at the key), the recipe its own.
    "$amptrain" train "$dir/$name.ini" --set precision.margin=99 --out "$tmp/runs/bad" 2>"$tmp/bad.log"
    [ $? = 2 ] && grep -q "precision.margin: \[precision\] margin: 99 is not an integer in 0\.\.64" "$tmp/bad.log" ||
        fail "$name: margin = 99 not refused by fp8 with exit 2: $(cat "$tmp/bad.log")"
    "$amptrain" train "$dir/$name.ini" --set precision.pow2=2 --out "$tmp/runs/bad" 2>"$tmp/bad.log"
    [ $? = 2 ] && grep -q "precision.pow2: \[precision\] pow2: 2 is not 0 or 1" "$tmp/bad.log" ||
        fail "$name: pow2 = 2 not refused with exit 2: $(cat "$tmp/bad.log")"
    # A layer scan with the recipe as the candidate: each linear of the block
    # ranked, the head (bf16 in both arms) skipped.
    step "ab --scan layers with $name" "$amptrain" ab "$dir/baseline.ini" "$dir/$name.ini" --scan layers \
        --seeds 1 --set run.device=cpu --set train.steps=3 --out "$tmp/runs/scan"
    grep -Eq '^ +[1-4] +transformer\.h\.0\.attn\.c_attn +1 ' "$log" &&
        grep -Eq '^ +[1-4] +transformer\.h\.0\.mlp\.c_fc +1 ' "$log" &&
        grep -Eq "^ +- +lm_head +1 +skipped: already at baseline's precision" "$log" ||
        fail "the scan did not rank the block's linears and skip lm_head"
    ;;
*)
    echo "sdk_test.sh: unknown case '$case'" >&2
    exit 2
    ;;
esac
exit 0
