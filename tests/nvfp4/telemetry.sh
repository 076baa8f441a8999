#!/bin/bash
# The nvfp4 policy from the CLI: each shipped config trains 2 steps, and its
# summary.json shows the operands the keys asked for, per layer and role
# (format, scaling, the stochastic and hadamard flags, the block scales'
# range, the rounding bias of the stochastic ones), the layers kept in bf16
# with no NVFP4 operand, and the working copy of an all-NVFP4 model at about
# half a byte per weight value.
# Usage: telemetry.sh AMPTRAIN CONFIG_DIR WORK_DIR
set -u
A=$1 CONFIGS=$2 W=$3
rm -rf "$W" && mkdir -p "$W" || exit 1
fail() { echo "FAIL: $*" >&2; exit 1; }

run() { # NAME: trains configs/gpt_shakespeare_NAME.ini 2 steps into $W/NAME
    "$A" train "$CONFIGS/gpt_shakespeare_$1.ini" --set run.device=cpu --set train.steps=2 \
        --set train.log_every=1 --set data.eval_iters=1 --out "$W/$1" 2>"$W/$1.log" ||
        fail "$1: $(tail -3 "$W/$1.log")"
}
# the summary's telemetry object of LAYER and ROLE, on one line
slot() { tr '{' '\n' <"$W/$1/summary.json" | grep "\"layer\":\"$2\",\"role\":\"$3\"" | head -1; }
has() { # NAME LAYER ROLE PATTERN...
    local s what="$1 $2 $3"
    s=$(slot "$1" "$2" "$3")
    [ -n "$s" ] || fail "$what: no telemetry"
    shift 3
    for p in "$@"; do echo "$s" | grep -q "$p" || fail "$what: '$p' not in: $s"; done
}
L=transformer.h.0.mlp.c_fc
for arm in nvfp4 nvfp4_no_rht nvfp4_no_sr nvfp4_1d_weights nvfp4_no_bf16_layers; do run $arm; done

has nvfp4 $L input '"format":"nvfp4"' '"scaling":"nvfp4_1d"' '"stochastic":false' '"hadamard":true' '"block_scale_min":' '"block_scale_max":'
has nvfp4 $L weight '"scaling":"nvfp4_2d"' '"stochastic":false' '"hadamard":false'
has nvfp4 $L grad_output '"scaling":"nvfp4_1d"' '"stochastic":true' '"hadamard":true' '"sr_bias":' '"sr_count":'
[ -z "$(slot nvfp4 transformer.h.3.mlp.c_fc input)" ] || fail "nvfp4: the last block is not in bf16"
[ -z "$(slot nvfp4 lm_head input)" ] || fail "nvfp4: lm_head is not in bf16"
has nvfp4_no_rht $L input '"hadamard":false'
has nvfp4_no_rht $L grad_output '"stochastic":true' '"hadamard":false'
has nvfp4_no_sr $L grad_output '"stochastic":false' '"hadamard":true'
has nvfp4_1d_weights $L weight '"scaling":"nvfp4_1d"'
has nvfp4_no_bf16_layers lm_head weight '"format":"nvfp4"'
has nvfp4_no_bf16_layers transformer.h.3.mlp.c_fc grad_output '"format":"nvfp4"'

# the rounding bias of the gradients: |sr_bias| small (a mean over >= 10^5 values)
bias=$(slot nvfp4 $L grad_output | sed 's/.*"sr_bias":\([^,}]*\).*/\1/')
awk -v b="$bias" 'BEGIN { exit !(b < 0.01 && b > -0.01) }' || fail "nvfp4: sr_bias $bias"

# working weights: every GEMM weight in NVFP4 (no_bf16_layers) against bf16's
# copy of the same model; the embeddings' copies are the same in both
"$A" train "$CONFIGS/gpt_shakespeare_bf16.ini" --set run.device=cpu --set train.steps=2 \
    --set data.eval_iters=1 --out "$W/bf16" 2>"$W/bf16.log" || fail "bf16: $(tail -3 "$W/bf16.log")"
wp() { grep -o '"working_params": *[0-9]*' "$W/$1/summary.json" | grep -o '[0-9]*$'; }
echo "working_params: bf16 $(wp bf16), nvfp4 $(wp nvfp4), all layers nvfp4 $(wp nvfp4_no_bf16_layers)"
params=$(grep -o '"params": *[0-9]*' "$W/nvfp4/summary.json" | grep -o '[0-9]*$')
# every weight but the position embedding (its GEMM-less lookup reads the
# master) is a GEMM weight here: at most 0.51 bytes per parameter
[ $(( $(wp nvfp4_no_bf16_layers) * 100 )) -le $(( params * 51 )) ] ||
    fail "all-NVFP4 working copy: $(wp nvfp4_no_bf16_layers) bytes for $params parameters"
# the A/B report's operand table shows the NVFP4 columns
"$A" ab "$CONFIGS/gpt_shakespeare_bf16.ini" "$CONFIGS/gpt_shakespeare_nvfp4.ini" --seeds 1 \
    --set run.device=cpu --set train.steps=2 --set data.eval_iters=1 --out "$W/ab" >"$W/ab.log" 2>&1 ||
    fail "ab: $(tail -3 "$W/ab.log")"
grep -q '<th>block scales</th><th>SR bias</th>' "$W/ab/report.html" || fail "report: no NVFP4 columns"
grep -Eq '</td><td>grad_output</td><td>nvfp4</td>.*<td>[0-9.e+-]+ \.\. [0-9.e+-]+</td><td>[+-][0-9.]+e[+-][0-9]+</td><td class="num per-step"' \
    "$W/ab/report.html" || fail "report: no block-scale range and bias on an NVFP4 gradient"
echo "nvfp4 telemetry: all checks passed"
