#!/bin/bash
# Races between a running train and the commands that read its files:
#  - `amptrain checkpoints` while the run writes a checkpoint every step and
#    prunes to keep = 1: a checkpoint deleted between the listing and the
#    read is listed as gone, never as DAMAGED, and the command exits 0;
#  - SIGTERM to `ab` while its child is still starting: the child says at
#    once that it stops, exits 143 having written nothing, and ab must say
#    so instead of pointing at a checkpoint that does not exist.
# usage: races.sh AMPTRAIN CONFIG_DIR WORK_DIR BAD_PLUGIN_DIR
set -u
. "$(dirname "$0")/lib.sh"
A=$1 W=$3 P=$4
CFG=$(cd "$(dirname "$0")" && pwd)/tiny_sgd.ini
rm -rf "$W" && mkdir -p "$W" || exit 1

# --- checkpoints during pruning -------------------------------------------
D=$W/prune
"$A" train "$CFG" --set train.steps=1000000 --set train.checkpoint_every=1 --set train.keep=1 \
    --set train.eval_every=0 --out "$D" 2>"$W/prune.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null' EXIT
wait_for_ckpt "$D" "$pid" || fail "prune: no checkpoint appeared: $(tail -3 "$W/prune.log")"
# Each listing races the run's next prune; after enough of them some listed
# file was gone by its read. Bounded: at most 400 listings or 120 s.
gone=0 t0=$(date +%s)
for i in $(seq 1 400); do
    out=$("$A" checkpoints "$D" 2>&1)
    rc=$?
    if grep -q DAMAGED <<<"$out" || [ "$rc" != 0 ]; then
        fail "prune: listing $i (exit $rc) while the run pruned: $out"
    fi
    grep -q "  gone: " <<<"$out" && gone=$((gone + 1))
    [ "$gone" -ge 2 ] && break
    [ $(($(date +%s) - t0)) -lt 120 ] || break
    kill -0 "$pid" 2>/dev/null || fail "prune: the run ended early: $(tail -3 "$W/prune.log")"
done
kill -TERM "$pid"
wait "$pid"
rc=$?
trap - EXIT
[ "$rc" = 143 ] || fail "prune: the run exited $rc after SIGTERM: $(tail -3 "$W/prune.log")"
"$A" checkpoints "$D" >/dev/null || fail "prune: a damaged checkpoint after the stop"
echo "checkpoints during pruning: $i listings, $gone met a checkpoint pruned meanwhile, none DAMAGED"

# --- ab signalled while its child starts ----------------------------------
# The test scaler `block` holds the child inside its plugin's init (after
# train installed its signal handlers, before any step) until we let it go.
sed 's/^name = tiny_sgd$/name = tiny_sgd_b/' "$CFG" >"$W/b.ini"
cp "$CFG" "$W/a.ini"
S=$W/study
AMPTRAIN_PLUGIN_PATH=$P AMP_BLOCK_INIT=train AMP_BLOCK_READY=$W/ab.ready AMP_BLOCK_RELEASE=$W/ab.release \
    "$A" ab "$W/a.ini" "$W/b.ini" --seeds 1 --set scaler.plugin=block --out "$S" 2>"$W/ab.log" &
abpid=$!
for i in $(seq 1 6000); do
    [ -e "$W/ab.ready" ] && break
    kill -0 "$abpid" 2>/dev/null || fail "ab: ended before its child started: $(tail -3 "$W/ab.log")"
    sleep 0.01
done
[ -e "$W/ab.ready" ] || fail "ab: the child never reached its scaler's init"
kill -TERM "$abpid"
# ab forwards the signal; the child notes it (its handler says so in its log)
C=$S/runs/tiny_sgd/seed-5
for i in $(seq 1 6000); do
    grep -q "amptrain: SIGTERM: stopping before the first step" "$C/train.log" 2>/dev/null && break
    sleep 0.01
done
grep -q "amptrain: SIGTERM: stopping before the first step" "$C/train.log" ||
    fail "ab: the child did not say at once that it stops: $(cat "$C/train.log")"
touch "$W/ab.release"
timeout 120 tail --pid="$abpid" -f /dev/null || fail "ab: still running 120 s after SIGTERM"
wait "$abpid"
rc=$?
[ "$rc" = 143 ] || fail "ab: exit $rc after SIGTERM, expected 143: $(tail -3 "$W/ab.log")"
[ -z "$(newest_ckpt "$C")" ] || fail "ab: the child checkpointed although stopped before its first step"
grep -q "stopped by SIGTERM before the first step; nothing was written" "$C/train.log" ||
    fail "ab: the child did not stop before its first step: $(tail -3 "$C/train.log")"
grep -q "stopped by SIGTERM; it wrote no checkpoint; its log is in $C" "$W/ab.log" ||
    fail "ab: the child left no checkpoint but ab says: $(grep stopped "$W/ab.log")"
echo "ab stopped while its child started: $(grep -o 'stopped by SIGTERM; .*' "$W/ab.log")"
