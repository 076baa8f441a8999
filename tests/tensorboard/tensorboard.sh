#!/bin/bash
# Metrics where people look. metrics.csv is written beside metrics.jsonl,
# and with [run] tensorboard = true (here from --set) a TensorBoard event
# file in <out>/tensorboard/. tb_decode reads every record back (framing,
# both masked CRC-32Cs, every Event) and compares every scalar and every CSV
# cell with metrics.jsonl. Then: the per-operand underflow/saturation tags of
# an fp8 run; a resume that cuts the history back (no step twice, the same
# numbers as an uninterrupted run); turning the event file on and off on a
# resume; a failed run leaves neither file. Last, tb_decode itself must
# fail on a broken length CRC, a broken data CRC, a cut record, a missing
# scalar and a wrong CSV cell.
# usage: tensorboard.sh AMPTRAIN TB_DECODE TINY_SGD.ini GPT_SCALED_TINY.ini WORK_DIR
set -u
A=$1 D=$2 CFG=$3 GPT=$4 W=$5
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
rm -rf "$W" && mkdir -p "$W" || exit 1
export AMPTRAIN_THREADS=1 # the resumed run is compared with an uninterrupted one
train() { # OUT ARGS...: a run that must work
    local out=$1
    shift
    "$A" train "$@" 2>"$W/$out.log" || fail "$out: $(tail -3 "$W/$out.log")"
}
EV=
event_file() { # DIR: its one event file, in $EV
    local n
    n=$(find "$W/$1/tensorboard" -maxdepth 1 -name 'events.out.tfevents.*' 2>/dev/null | wc -l)
    [ "$n" = 1 ] || fail "$1: $n event files: $(ls -a "$W/$1/tensorboard" 2>&1)"
    EV=$(find "$W/$1/tensorboard" -maxdepth 1 -name 'events.out.tfevents.*')
    case ${EV##*/} in events.out.tfevents.[0-9]*.?*) ;; *) fail "$1: event file name ${EV##*/}" ;; esac
}
decode() { # DIR: the event file and metrics.csv against metrics.jsonl
    event_file "$1"
    "$D" "$EV" "$W/$1/metrics.jsonl" "$W/$1/metrics.csv" >"$W/$1.decode" 2>&1 ||
        fail "$1: $(cat "$W/$1.decode")"
    "$D" "$EV" "$W/$1/metrics.jsonl" --dump >"$W/$1.scalars" || fail "$1: --dump failed"
}
no_repeat() { # DIR: no step line and no evaluation line twice
    local d
    d=$(grep -o '^{"step":[0-9]*,"epoch":[0-9]*,"[a-z_]*"' "$W/$1/metrics.jsonl" | sort | uniq -d)
    [ -z "$d" ] || fail "$1: lines repeated in metrics.jsonl: $d"
}
sgd=("$CFG" --set train.eval_every=20)

# 1. the scalars, and metrics.csv
train plain "${sgd[@]}" --set train.steps=50 --set run.tensorboard=true --out "$W/plain"
decode plain
for tag in train/loss train/lr train/scale train/grad_norm train/step_ms train/skipped \
    train/underflow train/overflow eval/test_loss eval/test_acc; do
    grep -q "^[0-9]* $tag " "$W/plain.scalars" || fail "plain: no scalar $tag"
done
[ "$(grep -c '^20 eval/test_loss ' "$W/plain.scalars")" = 1 ] || fail "plain: eval/test_loss at step 20 not once"
[ "$(head -1 "$W/plain/metrics.csv")" = "step,epoch,loss,lr,scale,skipped,grad_norm,underflow,overflow,step_ms,cpu_ms,test_loss,test_acc" ] ||
    fail "metrics.csv header: $(head -1 "$W/plain/metrics.csv")"
echo "plain: $(cat "$W/plain.decode")"

# 2. without the key: metrics.csv, no event file
train nokey "${sgd[@]}" --set train.steps=50 --out "$W/nokey"
[ -e "$W/nokey/tensorboard" ] && fail "nokey: a tensorboard folder without [run] tensorboard"
"$D" - "$W/nokey/metrics.jsonl" "$W/nokey/metrics.csv" >"$W/nokey.decode" 2>&1 || fail "nokey: $(cat "$W/nokey.decode")"

# 3. fp8: per layer and role, the flushed (underflow) and saturated counts
train fp8 "$GPT" --set run.device=cpu --set train.steps=4 --set run.tensorboard=true --out "$W/fp8"
decode fp8
for kind in underflow saturation; do
    grep -Eq "^4 $kind/[^ /]+/[a-z_]+ [0-9]" "$W/fp8.scalars" || fail "fp8: no $kind/<layer>/<role> at step 4"
done
echo "fp8: $(cat "$W/fp8.decode"); $(grep -c '^4 underflow/' "$W/fp8.scalars") operands"

# 4. a resume cuts the history back to its checkpoint: the files of a run
# to 70 with checkpoints at 20, 40, 60, copied with the one at 60 removed,
# resume at 40: every step once, the numbers of the run that never stopped
train ref "${sgd[@]}" --set train.steps=70 --set train.checkpoint_every=20 --set run.tensorboard=true --out "$W/ref"
mkdir -p "$W/cut" && cp -r "$W/ref/checkpoints" "$W/ref/metrics.jsonl" "$W/ref/metrics.csv" "$W/ref/tensorboard" "$W/cut/" &&
    rm "$W/cut/checkpoints/ckpt-00000060.amp" || fail "cannot copy the run"
train cut_resume --resume "$W/cut"
grep -q "resuming from .*ckpt-00000040\.amp" "$W/cut_resume.log" || fail "cut: did not resume from 40: $(cat "$W/cut_resume.log")"
decode cut
no_repeat cut
untimed() { cut -d, -f1-9,12- "$1"; }
[ "$(untimed "$W/cut/metrics.csv")" = "$(untimed "$W/ref/metrics.csv")" ] ||
    fail "the resumed metrics.csv differs from the uninterrupted run's: $(diff <(untimed "$W/cut/metrics.csv") <(untimed "$W/ref/metrics.csv") | head -5)"
sed -E 's/^([0-9]+ train\/(step|cpu)_ms) .*/\1/' "$W/cut.scalars" >"$W/cut.untimed"
decode ref
sed -E 's/^([0-9]+ train\/(step|cpu)_ms) .*/\1/' "$W/ref.scalars" >"$W/ref.untimed"
cmp -s "$W/cut.untimed" "$W/ref.untimed" || fail "the resumed event file's scalars differ from the uninterrupted run's: $(diff "$W/cut.untimed" "$W/ref.untimed" | head -5)"
echo "resumed at 40 of 70: $(cat "$W/cut.decode"); the scalars and rows of the run that never stopped"

# 5. turned on at a resume: the history so far is in the event file; turned
# off at the next: no event file is left describing part of it
train late "${sgd[@]}" --set train.steps=50 --set train.checkpoint_every=20 --out "$W/late"
[ -e "$W/late/tensorboard" ] && fail "late: a tensorboard folder before the key"
train late_on --resume "$W/late" --set train.steps=70 --set run.tensorboard=true
decode late
no_repeat late
grep -q '^7 train/loss ' "$W/late.scalars" || fail "late: the steps before the resume are not in the event file"
train late_off --resume "$W/late" --set train.steps=90 --set run.tensorboard=false
[ -z "$(find "$W/late" -name 'events.out.tfevents.*')" ] || fail "late: an event file after turning it off"
"$D" - "$W/late/metrics.jsonl" "$W/late/metrics.csv" >"$W/late_off.decode" 2>&1 || fail "late_off: $(cat "$W/late_off.decode")"

# 6. a failed run (non-finite outputs) leaves neither file
"$A" train "$CFG" --set train.steps=30 --set optim.lr=1e6 --set optim.momentum=0 \
    --set run.tensorboard=true --out "$W/failed" 2>"$W/failed.log" && fail "the diverging run did not fail"
left=$(cd "$W/failed" && ls -A)
[ -z "$left" ] || fail "the failed run left: $left"

# 7. a full disk while writing the event file (ulimit -f, in 1024-byte
# blocks: above a checkpoint, ~28 KB, below the event file, ~89 KB, which
# outgrows metrics.jsonl, ~71 KB): the run stops at that step with a
# checkpoint, every file cut back to whole lines and records; --resume ends
# with the scalars and rows of the run left alone
long=("$CFG" --set train.steps=400 --set train.log_every=1 --set train.eval_every=100
    --set train.checkpoint_every=10 --set train.keep=2 --set run.tensorboard=true)
train full_ref "${long[@]}" --out "$W/full_ref"
(ulimit -f 40 && exec "$A" train "${long[@]}" --out "$W/full") 2>"$W/full.log"
rc=$?
[ "$rc" = 1 ] || fail "full: exit $rc under ulimit -f 40, expected 1: $(tail -3 "$W/full.log")"
grep -Eq "^amptrain: .*/tensorboard/events\.out\.tfevents\.[^ ]*: cannot write: File too large; stopped after step [0-9]+ of 400 with checkpoint .*: make room, then continue with --resume" \
    "$W/full.log" || fail "full: no clear error: $(tail -3 "$W/full.log")"
event_file full
"$D" "$EV" "$W/full/metrics.jsonl" "$W/full/metrics.csv" >"$W/full.cut.decode" 2>&1 ||
    fail "full: the files are not cut back to the same whole lines: $(cat "$W/full.cut.decode")"
train full_resume "${long[@]}" --resume "$W/full"
decode full
decode full_ref
[ "$(untimed "$W/full/metrics.csv")" = "$(untimed "$W/full_ref/metrics.csv")" ] || fail "full: the resumed metrics.csv differs from the run left alone's"
sed -E 's/^([0-9]+ train\/(step|cpu)_ms) .*/\1/' "$W/full.scalars" >"$W/full.untimed"
sed -E 's/^([0-9]+ train\/(step|cpu)_ms) .*/\1/' "$W/full_ref.scalars" >"$W/full_ref.untimed"
cmp -s "$W/full.untimed" "$W/full_ref.untimed" || fail "full: the resumed event file's scalars differ from the run left alone's"
echo "full disk on the event file: $(grep -o 'stopped after step [0-9]* of 400' "$W/full.log"), files cut back to $(cat "$W/full.cut.decode" | cut -d';' -f2); resumed: the run left alone's"

# 8. tb_decode fails on what it must catch
bad() { # NAME WHY-REGEX ARGS...: tb_decode must fail saying WHY
    local name=$1 why=$2
    shift 2
    "$D" "$@" >"$W/bad_$name.log" 2>&1 && fail "tb_decode passed a $name"
    grep -Eq "$why" "$W/bad_$name.log" || fail "tb_decode on a $name: $(cat "$W/bad_$name.log")"
}
flip() { # FILE OFFSET: flips the byte's lowest bit
    local b
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "$(printf '\\%03o' $((b ^ 1)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
event_file plain
J=$W/plain/metrics.jsonl
cp "$EV" "$W/lencrc" && flip "$W/lencrc" 8
bad "broken length CRC" "length's CRC does not match" "$W/lencrc" "$J"
cp "$EV" "$W/datacrc" && flip "$W/datacrc" $(($(stat -c %s "$EV") - 1))
bad "broken data CRC" "data's CRC does not match" "$W/datacrc" "$J"
cp "$EV" "$W/datagone" && flip "$W/datagone" 60
bad "changed scalar" "data's CRC does not match" "$W/datagone" "$J"
head -c $(($(stat -c %s "$EV") - 3)) "$EV" >"$W/cutrec"
bad "cut record" "ends inside the record" "$W/cutrec" "$J"
sed '2s/"loss":/"extra":1,"loss":/' "$J" >"$W/extra.jsonl"
bad "missing scalar" "no scalar train/extra for metrics.jsonl line 2" "$EV" "$W/extra.jsonl"
sed '$d' "$J" >"$W/short.jsonl"
bad "extra event" "events after the file_version one" "$EV" "$W/short.jsonl"
sed '2s/,false,/,true,/' "$W/plain/metrics.csv" >"$W/cell.csv"
bad "wrong CSV cell" "row 2, column skipped" - "$J" "$W/cell.csv"
echo "tb_decode fails on a broken length CRC, a broken data CRC, a changed byte, a cut record, a missing scalar, an extra event and a wrong CSV cell"
