#!/bin/bash
# [dist] shard = gradients (ZeRO-2): on 2 and 4 ranks, under fp32, fp16 +
# dynamic and bf16, over 50 steps, bit for bit the weights and metrics
# (losses, scales, skips, norms) of shard = none, with several buckets
# (bucket_kb = 1: 3 of the tiny MLP's); each rank's grads arena is exactly
# its padded shard (4 S bytes rounded up to the arena's 256), within 1 KiB a
# tensor of 1/N of the unsharded one, and the bytes sent are ZeRO-1's. The
# GPT (the tied wte, written at both ends of backward, read in FP32 by the
# embedding and as a 16-bit copy by the LM head; clipping over the shards)
# likewise under fp32, bf16 and fp16 + dynamic, and the CNN (which reports
# no gradient early) under fp32. accumulate = 2 adds the micro-batches into
# the whole local array, as shard = none does (the same order of additions):
# bitwise, and the grads arena is whole. grad_dtype = bf16 (the buckets
# rounded in their slots) likewise bitwise on 2 and 4 ranks. A checkpoint of a shard =
# gradients run resumes with shard = none and optimizer, and the other way
# round, bit for bit on the same ranks, and on another number of ranks (same
# global batch) within FP32 summation order (losses within 1e-4 relative).
# usage: shard_grads.sh MPIRUN AMPTRAIN SCRIPT_DIR WORK_DIR
set -u
. "$(dirname "$0")/lib.sh"
dist_start "$@"
cfg=$HERE/tiny.ini
root=$(cd "$HERE/../.." && pwd)
# hidden 47,24: 2953 parameters in 6 tensors, which 2 and 4 ranks do not divide (padding)
n=2953 ntensors=6
base=(--set model.hidden=47,24 --set train.steps=50 --set train.eval_every=0 --set dist.bucket_kb=1)
noscale=$W/noscale.ini
sed -e '/^growth_interval/d' -e 's/^plugin = dynamic/plugin = none/' "$cfg" >"$noscale"

align() { echo $(( ($1 + 255) / 256 * 256 )); } # the arena's alignment

# same REF RUN WHAT: the weights and the metrics bit for bit
same() {
    cmp "$1/weights.safetensors" "$2/weights.safetensors" || fail "$3: other weights"
    cmp <(mask "$1/metrics.jsonl") <(mask "$2/metrics.jsonl") || fail "$3: other metrics"
}

# grads_bytes RUN NP N NT WHAT: every rank's grads arena is its padded shard
# of N elements, within 1 KiB a tensor (NT tensors) of 1/NP of the whole
grads_bytes() {
    local run=$1 np=$2 n=$3 nt=$4 what=$5 r g S=$(( ($3 + $2 - 1) / $2 ))
    grep -q '"dist_shard": "gradients"' "$run/summary.json" || fail "$what: summary lacks dist_shard"
    for ((r = 0; r < np; r++)); do
        g=$(rank_field "$run" $r grads)
        [ "$g" = "$(align $((4 * S)))" ] || fail "$what rank $r: grads $g bytes (want $(align $((4 * S))))"
        [ $((g - 4 * n / np)) -lt $((1024 * nt)) ] ||
            fail "$what rank $r: grads $g bytes, more than 1/$np of $((4 * n)) plus 1 KiB a tensor"
    done
}

for np in 2 4; do
    for prec in fp32 fp16 bf16; do
        for shard in none gradients; do prec_run $np $prec $shard; done
        ref=$W/$np-$prec-none run=$W/$np-$prec-gradients
        same "$ref" "$run" "$np ranks $prec: shard=gradients against shard=none"
        grads_bytes "$run" $np $n $ntensors "$np ranks $prec"
        wsize=2
        [ $prec = fp32 ] && wsize=4
        sums=$(sent_bytes "$ref" "$run" $n $np $wsize "$np ranks $prec") || exit 1
        read -r sum_none sum_zero <<<"$sums"
        echo "$np ranks $prec: shard=gradients == shard=none bitwise over 50 steps; per rank grads" \
             "$(rank_field "$run" 0 grads) bytes (unsharded $(rank_field "$ref" 0 grads)), the job" \
             "sent $sum_zero bytes a step (shard=none $sum_none); bucket buffers" \
             "$(sed -nE 's/.*"dist_buffer_bytes": ([0-9]+).*/\1/p' "$run/summary.json") bytes"
    done

    # accumulate 2: the micro-batches add into the whole local array, as unsharded
    for shard in none gradients; do
        mpi $np "$A" train "$cfg" "${base[@]}" --set train.accumulate=2 --set data.batch_size=8 \
            --set dist.shard=$shard --out "$W/$np-acc-$shard" 2>"$W/$np-acc-$shard.log" ||
            fail "$np ranks accumulate 2 shard=$shard failed: $(tail -3 "$W/$np-acc-$shard.log")"
    done
    same "$W/$np-acc-none" "$W/$np-acc-gradients" "$np ranks fp16 accumulate 2: shard=gradients against none"
    for ((r = 0; r < np; r++)); do
        g=$(rank_field "$W/$np-acc-gradients" $r grads)
        [ "$g" = "$(align $((4 * n)))" ] || fail "$np ranks accumulate 2 rank $r: grads $g bytes (want the whole $(align $((4 * n))))"
    done
    echo "$np ranks fp16 accumulate 2: shard=gradients == shard=none bitwise; grads whole ($g bytes)"

    # the GPT: wte tied to the LM head (under bf16 and fp16 also a 16-bit
    # copy), clipping at 1.0, a bucket per few tensors
    gpt=(--set run.device=cpu --set model.n_layer=2 --set model.n_head=2 --set model.n_embd=32
         --set model.block_size=16 --set model.bias=true --set data.batch_size=4
         --set train.steps=50 --set train.eval_every=0 --set train.log_every=1 --set dist.bucket_kb=4)
    for pol in fp32 bf16 fp16_dynamic; do
        for shard in none gradients; do
            out=$W/$np-gpt-$pol-$shard
            mpi $np "$A" train "$root/configs/gpt_shakespeare_$pol.ini" "${gpt[@]}" \
                --set dist.shard=$shard --out "$out" 2>"$out.log" ||
                fail "$np ranks GPT $pol shard=$shard failed: $(tail -3 "$out.log")"
        done
        ref=$W/$np-gpt-$pol-none run=$W/$np-gpt-$pol-gradients
        same "$ref" "$run" "$np ranks GPT $pol: shard=gradients against none"
        gn=$(sed -nE 's/.*"dist_shard_elements": ([0-9]+).*/\1/p' "$ref/summary.json")
        # 28 tensors: wte, wpe, 12 a block (weights and biases), ln_f's 2
        grads_bytes "$run" $np "$gn" 28 "$np ranks GPT $pol"
        echo "$np ranks GPT $pol ($gn parameters): shard=gradients == shard=none bitwise; grads" \
             "$(rank_field "$run" 0 grads) bytes a rank (unsharded $(rank_field "$ref" 0 grads))"
    done
done

# the CNN reports no gradient before its backward returns: every bucket
# holds a slot till then; batch norm's buffers stay each rank's own
cnn_runs "$root" none gradients
cmp "$W/cnn-none/weights.safetensors" "$W/cnn-gradients/weights.safetensors" ||
    fail "the CNN: shard=gradients ends with other weights (or running statistics) than shard=none"
echo "2 ranks CNN fp32: shard=gradients == shard=none bitwise, batch norm buffers included"

# grad_dtype = bf16: each rank rounds its bucket's slot into the slot's
# bf16 copy, the owner adds the bf16 pieces in rank order into its bf16
# share of the sums: the same roundings and additions as shard = none's
for np in 2 4; do
    for shard in none gradients; do
        out=$W/$np-wire-$shard
        mpi $np "$A" train "$noscale" "${base[@]}" --set precision.plugin=bf16 \
            --set dist.grad_dtype=bf16 --set dist.shard=$shard --out "$out" 2>"$out.log" ||
            fail "$np ranks grad_dtype=bf16 shard=$shard failed: $(tail -3 "$out.log")"
    done
    same "$W/$np-wire-none" "$W/$np-wire-gradients" "$np ranks grad_dtype=bf16: shard=gradients against none"
    grads_bytes "$W/$np-wire-gradients" $np $n $ntensors "$np ranks grad_dtype=bf16"
    S=$(( (n + np - 1) / np ))
    for ((r = 0; r < np; r++)); do
        mine=$(( n - r * S < S ? n - r * S : S ))
        g=$(rank_field "$W/$np-wire-gradients" $r gradients)
        [ "$g" = $((2 * (n - mine))) ] ||
            fail "$np ranks grad_dtype=bf16 rank $r: sent $g bytes of gradients (want $((2 * (n - mine))), 2 a value)"
    done
    echo "$np ranks grad_dtype=bf16: shard=gradients == shard=none bitwise (rounding counts too);" \
         "grads $(rank_field "$W/$np-wire-gradients" 0 grads) bytes a rank, 2 bytes a gradient value sent"
done
# the GPT's tied wte rounded in its slot, which stays open through the backward
for shard in none gradients; do
    out=$W/2-gpt-wire-$shard
    mpi 2 "$A" train "$root/configs/gpt_shakespeare_bf16.ini" "${gpt[@]}" --set dist.grad_dtype=bf16 \
        --set dist.shard=$shard --out "$out" 2>"$out.log" ||
        fail "2 ranks GPT grad_dtype=bf16 shard=$shard failed: $(tail -3 "$out.log")"
done
same "$W/2-gpt-wire-none" "$W/2-gpt-wire-gradients" "2 ranks GPT grad_dtype=bf16: shard=gradients against none"
echo "2 ranks GPT bf16 grad_dtype=bf16: shard=gradients == shard=none bitwise"

# resume across shard values on 2 ranks (fp16 + dynamic, AdamW): 50 steps
# with checkpoints at 25 and 50, cut back to step 25, resumed with another
# shard value: the uninterrupted unsharded run's weights and metrics
ck=("${base[@]}" --set train.checkpoint_every=25 --set train.keep=2)
cut() { # cut NP FROM OUT [ARGS...]: a run of 50 steps cut back to its step-25 checkpoint
    local np=$1 from=$2 out=$3
    shift 3
    mpi $np "$A" train "$cfg" "${ck[@]}" "$@" --set dist.shard=$from --out "$out" 2>"$out.log" ||
        fail "the $np-rank $from run with checkpoints failed: $(tail -3 "$out.log")"
    ls "$out/checkpoints/ckpt-00000025.amp" >/dev/null || fail "no checkpoint of step 25"
    rm -f "$out/checkpoints/ckpt-00000050.amp" "$out/weights.safetensors"
}
for pair in gradients:none none:gradients gradients:optimizer optimizer:gradients; do
    from=${pair%:*} to=${pair#*:}
    cut 2 $from "$W/cut-$from-$to"
    mpi 2 "$A" train "$cfg" "${ck[@]}" --set dist.shard=$to --resume "$W/cut-$from-$to" \
        2>"$W/resume-$from-$to.log" || fail "resuming shard=$from as $to failed: $(tail -3 "$W/resume-$from-$to.log")"
    same "$W/2-fp16-none" "$W/cut-$from-$to" "25 steps shard=$from + 25 steps shard=$to against 50 unsharded"
    echo "2 ranks: 25 steps shard=$from, resumed with shard=$to: the 50 uninterrupted steps' weights and metrics"
done

# on another number of ranks at the same 32 rows a step, both ways: the
# losses of the uninterrupted run on the first number of ranks, within FP32
# summation order (fp32, as reshard.sh: under fp16 each rank's partial
# weight gradient is also rounded to 16 bits before the sum)
losses() { sed -nE 's/^\{"step":([0-9]+),"epoch":[0-9]+,"loss":([^,]+),.*/\1 \2/p' "$1"; }
cfg=$noscale
ck+=(--set precision.plugin=fp32 --set optim.lr=0.0002)
for pair in 2:4 4:2; do
    a=${pair%:*} b=${pair#*:}
    mpi $a "$A" train "$cfg" "${ck[@]}" --set data.batch_size=$((32 / a)) --set dist.shard=gradients \
        --out "$W/whole-$a" 2>"$W/whole-$a.log" || fail "the $a-rank run failed: $(tail -3 "$W/whole-$a.log")"
    cut $a gradients "$W/n-$a-$b" --set data.batch_size=$((32 / a))
    mpi $b "$A" train "$cfg" "${ck[@]}" --set data.batch_size=$((32 / b)) --set dist.shard=gradients \
        --resume "$W/n-$a-$b" 2>"$W/n-$a-$b-resume.log" ||
        fail "resuming $a ranks on $b failed: $(tail -3 "$W/n-$a-$b-resume.log")"
    worst=$(join <(losses "$W/whole-$a/metrics.jsonl") <(losses "$W/n-$a-$b/metrics.jsonl") |
        awk '$1 > 25 { d = ($2 - $3) / ($2 < 0 ? -$2 : $2); if (d < 0) d = -d; if (d > w) w = d; c++ }
             END { if (c != 25) print "steps:" c; else printf "%.2g\n", w }')
    case $worst in steps:*) fail "resuming $a ranks on $b: $worst later steps, not 25" ;; esac
    awk -v w="$worst" 'BEGIN { exit !(w <= 1e-4) }' ||
        fail "resuming $a ranks on $b: a loss differs by $worst relative (more than 1e-4)"
    echo "shard=gradients on $a ranks resumed on $b (batch $((32 / b))): every later loss within $worst relative"
done
