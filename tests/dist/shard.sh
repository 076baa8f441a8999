#!/bin/bash
# [dist] shard = optimizer (ZeRO-1) on 2 and 4 ranks, under fp32, fp16 +
# dynamic and bf16, over 50 steps: bit for bit the weights and metrics
# (losses, scales, skips, norms) of shard = none (every element's sum is
# added in rank order either way, the optimizer is per element, and the
# owner's rounding into the working dtype is the cast's); each rank's
# master and optimizer arenas are exactly its padded shard; the bytes each
# rank sent per step are exactly the reduce-scatter's and the working-dtype
# gather's, and under bf16 ZeRO-1 sends 0.75 of shard = none's f32 sums
# over the job; the CNN (batch norm) and the GPT under bf16 (its tied wte
# both FP32 and bf16) are bitwise too; a sharded checkpoint
# resumes unsharded (and back) and continues the same losses.
# usage: shard.sh MPIRUN AMPTRAIN SCRIPT_DIR WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
dist_start "$@"
cfg=$HERE/tiny.ini
# hidden 47,24: 2953 parameters in 6 tensors, which 2 and 4 ranks do not divide (padding)
n=2953 ntensors=6
base=(--set model.hidden=47,24 --set train.steps=50 --set train.eval_every=0)

# fp32 and bf16 without a loss scaler: the tiny config less its [scaler] keys
noscale=$W/noscale.ini
sed -e '/^growth_interval/d' -e 's/^plugin = dynamic/plugin = none/' "$cfg" >"$noscale"

align() { echo $(( ($1 + 255) / 256 * 256 )); } # the arena's alignment

for np in 2 4; do
    S=$(( (n + np - 1) / np ))
    for prec in fp32 fp16 bf16; do
        for shard in none optimizer; do prec_run $np $prec $shard; done
        ref=$W/$np-$prec-none run=$W/$np-$prec-optimizer
        cmp "$ref/weights.safetensors" "$run/weights.safetensors" ||
            fail "$np ranks $prec: shard=optimizer ends with other weights than shard=none"
        cmp <(mask "$ref/metrics.jsonl") <(mask "$run/metrics.jsonl") ||
            fail "$np ranks $prec: shard=optimizer logs other metrics than shard=none"
        grep -q '"dist_shard": "optimizer"' "$run/summary.json" || fail "summary lacks dist_shard"
        wsize=2 # the working dtype on the weights' wire
        [ $prec = fp32 ] && wsize=4
        for ((r = 0; r < np; r++)); do
            # memory: the masters and AdamW's 2 moments of this rank's S elements, exactly
            full=$(rank_field "$ref" $r master_params) part=$(rank_field "$run" $r master_params)
            opt=$(rank_field "$run" $r optimizer_state)
            [ "$full" = "$(align $((4 * n)))" ] || fail "$np ranks $prec: unsharded masters $full bytes"
            [ "$part" = "$(align $((4 * S)))" ] && [ "$opt" = "$((2 * $(align $((4 * S)))))" ] ||
                fail "$np ranks $prec rank $r: masters $part, moments $opt bytes (want $(align $((4 * S))) and twice that)"
            [ $(( (part + opt) - 3 * full / np )) -lt $(( 1024 * ntensors )) ] ||
                fail "$np ranks $prec rank $r: $((part + opt)) bytes, more than 1/$np of $((3 * full)) plus 1 KiB a tensor"
        done
        # traffic: exactly the reduce-scatter's and the working-dtype gather's
        sums=$(sent_bytes "$ref" "$run" $n $np $wsize "$np ranks $prec") || exit 1
        read -r sum_none sum_zero <<<"$sums"
        if [ $prec = bf16 ]; then
            [ $((4 * sum_zero)) -le $((3 * sum_none)) ] ||
                fail "$np ranks bf16: ZeRO-1 sent $sum_zero bytes a step, more than 0.75 x $sum_none"
        fi
        echo "$np ranks $prec: shard=optimizer == shard=none bitwise over 50 steps; per rank" \
             "masters $part + moments $opt bytes (unsharded $full + $((2 * full))); the job sent" \
             "$sum_zero bytes a step (shard=none $sum_none)"
    done
done

# the CNN: batch norm's running statistics (buffers after the trained
# elements) stay each rank's own, as unsharded; rank 0 saves its own
root=$(cd "$HERE/../.." && pwd)
cnn_runs "$root" none optimizer
cmp "$W/cnn-none/weights.safetensors" "$W/cnn-optimizer/weights.safetensors" ||
    fail "the CNN: shard=optimizer ends with other weights (or running statistics) than shard=none"
echo "2 ranks CNN fp32: shard=optimizer == shard=none bitwise, batch norm buffers included"

# the GPT under bf16: wte is tied, read in FP32 by the embedding and as the
# LM head's bf16 copy, so it travels in FP32 and every rank rounds the copy
for shard in none optimizer; do
    mpi 2 "$A" train "$root/configs/gpt_shakespeare_bf16.ini" --set run.device=cpu \
        --set model.n_layer=2 --set model.n_head=2 --set model.n_embd=32 --set model.block_size=16 \
        --set data.batch_size=4 --set train.steps=20 --set train.eval_every=0 --set dist.shard=$shard \
        --out "$W/gpt-$shard" 2>"$W/gpt-$shard.log" ||
        fail "the GPT with shard=$shard failed: $(tail -3 "$W/gpt-$shard.log")"
done
cmp "$W/gpt-none/weights.safetensors" "$W/gpt-optimizer/weights.safetensors" &&
    cmp <(mask "$W/gpt-none/metrics.jsonl") <(mask "$W/gpt-optimizer/metrics.jsonl") ||
    fail "the GPT bf16: shard=optimizer ends with other weights or metrics than shard=none"
echo "2 ranks GPT bf16 (tied wte): shard=optimizer == shard=none bitwise"

# resume across shard settings on 2 ranks (fp16 + dynamic, AdamW): a run of
# 50 steps with checkpoints at 25 and 50, cut back to the one of step 25 (as
# if stopped there), resumed with the other shard setting
args=("${base[@]}" --set train.checkpoint_every=25 --set train.keep=2)
for from in optimizer none; do
    to=$([ $from = none ] && echo optimizer || echo none)
    mpi 2 "$A" train "$cfg" "${args[@]}" --set dist.shard=$from --out "$W/cut-$from" \
        2>"$W/cut-$from.log" || fail "the $from run with checkpoints failed: $(tail -3 "$W/cut-$from.log")"
    ls "$W/cut-$from/checkpoints/ckpt-00000025.amp" >/dev/null || fail "no checkpoint of step 25"
    rm -f "$W/cut-$from/checkpoints/ckpt-00000050.amp" "$W/cut-$from/weights.safetensors"
    mpi 2 "$A" train "$cfg" "${args[@]}" --set dist.shard=$to --resume "$W/cut-$from" \
        2>"$W/resume-$from.log" || fail "resuming shard=$from as $to failed: $(tail -3 "$W/resume-$from.log")"
    cmp "$W/2-fp16-none/weights.safetensors" "$W/cut-$from/weights.safetensors" ||
        fail "25 steps shard=$from + 25 steps shard=$to end with other weights than 50 unsharded steps"
    cmp <(mask "$W/2-fp16-none/metrics.jsonl") <(mask "$W/cut-$from/metrics.jsonl") ||
        fail "25 steps shard=$from + 25 steps shard=$to log other metrics than 50 unsharded steps"
    echo "2 ranks: 25 steps shard=$from, resumed with shard=$to: the 50 uninterrupted steps' weights and metrics"
done
