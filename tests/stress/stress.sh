#!/bin/bash
# The stress test of issue 15: 8 concurrent `amptrain train` processes on 3
# run folders, ROUNDS rounds, each process stopped at a random moment by a
# random SIGINT, SIGTERM, SIGHUP or SIGKILL (sometimes two signals, sometimes
# none). Each process starts a new run in its folder, or resumes it when the
# folder holds checkpoints, so they race for the same folders.
#
# After every round, for every folder:
#  - every checkpoint validates (`amptrain checkpoints DIR` exits 0);
#  - metrics.jsonl holds one history: no NUL byte, its step records are
#    1, 2, 3, ... in order (never two runs interleaved), only its last line
#    may be cut short (a SIGKILL mid-write), and only without summary.json;
#  - a folder with summary.json holds one complete run: config.ini,
#    weights.safetensors and metrics.jsonl identical (timing fields masked)
#    to an uninterrupted reference run's.
# Every process ends in 0 (completed, or found its folder's run already
# complete), 2 (refused: the folder is locked, holds another run's
# checkpoints or has none to resume, each message checked), 128+signal
# (stopped with a checkpoint, or at once by a second signal), or 137
# (SIGKILL). Never 1, never a crash.
# At the end every folder is untouched (no run output), or holds one complete
# run, or holds checkpoints that --resume completes into that same run.
#
# usage: stress.sh AMPTRAIN CONFIG WORK_DIR [ROUNDS]
# ROUNDS defaults to $AMP_STRESS_ROUNDS, else 8; the full test of the issue is
# 50 (AMP_STRESS_ROUNDS=50).
set -u
A=$1 CFG=$2 W=$3
ROUNDS=${4:-${AMP_STRESS_ROUNDS:-8}}
NPROC=8 NDIR=3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W/logs" || exit 1
SETS=(--set run.device=cpu --set train.steps=300 --set train.checkpoint_every=10 --set train.log_every=1)

REF=$W/ref
"$A" train "$CFG" "${SETS[@]}" --out "$REF" 2>"$W/ref.log" || fail "reference run failed: $(tail -3 "$W/ref.log")"
mask() { sed -E 's/"(step_ms|cpu_ms)":[0-9.eE+-]+/"\1":T/g; s/"(wall_seconds|median_step_ms|median_comm_ms|median_cpu_ms|load_avg_start|load_avg_end|peak_rss_bytes)": ([0-9.eE+-]+|null)/"\1": T/; s/"host_round_trips_per_step": \{[^}]*\}/"host_round_trips_per_step": T/' "$1"; }
mask "$REF/metrics.jsonl" >"$W/ref.metrics"
mask "$REF/summary.json" >"$W/ref.summary"

# check_folder DIR WHEN: the invariants above
check_folder() {
    local d=$1 when=$2 f
    [ -d "$d" ] || return 0
    if ls "$d"/checkpoints/ckpt-*.amp >/dev/null 2>&1; then
        "$A" checkpoints "$d" >"$W/list.log" 2>&1 || fail "$when: a checkpoint does not validate: $(cat "$W/list.log")"
    fi
    f=$d/metrics.jsonl
    if [ -e "$f" ]; then
        [ "$(tr -d '\000' <"$f" | wc -c)" = "$(wc -c <"$f")" ] || fail "$when: $f holds NUL bytes"
        # step records in order 1..n; a cut last line only (no newline at the end)
        awk -v when="$when" -v f="$f" '
            { if (prev != "") bad = bad ? bad : check(prev, NR - 1); prev = $0 }
            function check(line, n,    s) {
                if (line !~ /^\{"step":[0-9]+,"epoch":[0-9]+,/ || line !~ /\}$/) return "line " n " is not a record: " line
                if (line ~ /"loss":/) {
                    s = line; sub(/^\{"step":/, "", s); sub(/,.*/, "", s)
                    if (s + 0 != last + 1) return "line " n ": step " s " after step " last
                    last = s + 0
                }
                return ""
            }
            END {
                if (bad) { print when ": " f ": " bad; exit 1 }
                if (prev != "" && (err = check(prev, NR))) { print "LAST " err; exit 2 }
            }' "$f" >"$W/awk.log"
        case $? in
        0) ;;
        2) # only a cut last line, and only in a run that is not complete
            [ -n "$(tail -c 1 "$f")" ] || fail "$when: $f: $(cat "$W/awk.log")"
            [ ! -e "$d/summary.json" ] || fail "$when: a complete run with a cut last line in $f" ;;
        *) fail "$(cat "$W/awk.log")" ;;
        esac
    fi
    if [ -e "$d/summary.json" ]; then
        for f in config.ini weights.safetensors metrics.jsonl; do
            [ -e "$d/$f" ] || fail "$when: $d has summary.json but no $f"
        done
        cmp -s "$REF/weights.safetensors" "$d/weights.safetensors" || fail "$when: $d/weights.safetensors differs from the reference"
        cmp -s "$REF/config.ini" "$d/config.ini" || fail "$when: $d/config.ini differs from the reference"
        cmp -s "$W/ref.metrics" <(mask "$d/metrics.jsonl") || fail "$when: $d/metrics.jsonl differs from the reference"
        cmp -s "$W/ref.summary" <(mask "$d/summary.json") || fail "$when: $d/summary.json differs from the reference"
    fi
}

SIGS=(INT TERM HUP KILL)
declare -A count
for r in $(seq 1 "$ROUNDS"); do
    pids=() dirs=() modes=() sigs=()
    for p in $(seq 0 $((NPROC - 1))); do
        d=$W/dir$((RANDOM % NDIR))
        log=$W/logs/r$r-p$p.log
        if ls "$d"/checkpoints/ckpt-*.amp >/dev/null 2>&1; then mode=resume; else mode=out; fi
        "$A" train "$CFG" "${SETS[@]}" --"$mode" "$d" 2>"$log" &
        pids+=($!) dirs+=("$d") modes+=("$mode")
    done
    # signals at random moments; one process in four is left alone
    for p in $(seq 0 $((NPROC - 1))); do
        if [ $((RANDOM % 4)) = 0 ]; then sigs+=(none); continue; fi
        sigs+=("${SIGS[RANDOM % 4]}")
    done
    for t in $(seq 1 12); do
        sleep "0.0$((RANDOM % 5))"
        for p in $(seq 0 $((NPROC - 1))); do
            s=${sigs[p]}
            [ "$s" = none ] && continue
            if [ $((RANDOM % 6)) = 0 ]; then
                kill -"$s" "${pids[p]}" 2>/dev/null
                # now and then a second, different signal: stop at once
                [ "$s" != KILL ] && [ $((RANDOM % 3)) = 0 ] && kill -INT "${pids[p]}" 2>/dev/null && kill -TERM "${pids[p]}" 2>/dev/null
                sigs[p]=none
            fi
        done
    done
    for p in $(seq 0 $((NPROC - 1))); do
        wait "${pids[p]}" 2>/dev/null
        rc=$?
        log=$W/logs/r$r-p$p.log
        case $rc in
        0) grep -Eq "test_acc|the run is already complete" "$log" || fail "round $r: exit 0 without a result: $(tail -2 "$log")" ;;
        2) grep -Eq "is in use by another process \(PID [0-9]+, amptrain train|holds [0-9]+ checkpoints? of an earlier run|no checkpoint in" "$log" ||
               fail "round $r: refused for another reason: $(tail -2 "$log")" ;;
        129 | 130 | 137 | 143) ;;
        *) fail "round $r: process $p (${modes[p]} ${dirs[p]}) exited $rc: $(tail -3 "$log")" ;;
        esac
        count[$rc]=$((${count[$rc]:-0} + 1))
    done
    for i in $(seq 0 $((NDIR - 1))); do check_folder "$W/dir$i" "round $r"; done
done

# The end: each folder is untouched, complete, or resumes into the same run.
ends=""
for i in $(seq 0 $((NDIR - 1))); do
    d=$W/dir$i
    if [ -e "$d/summary.json" ]; then
        ends="$ends dir$i:complete"
    elif ls "$d"/checkpoints/ckpt-*.amp >/dev/null 2>&1; then
        "$A" train "$CFG" "${SETS[@]}" --resume "$d" 2>"$W/final$i.log" ||
            fail "dir$i: the final resume failed: $(tail -3 "$W/final$i.log")"
        check_folder "$d" "final resume"
        [ -e "$d/summary.json" ] || fail "dir$i: the final resume wrote no summary"
        ends="$ends dir$i:resumed"
    else
        for f in config.ini metrics.jsonl summary.json weights.safetensors; do
            [ ! -e "$d/$f" ] || fail "dir$i: $f without a checkpoint or a summary"
        done
        ends="$ends dir$i:untouched"
    fi
done
summary=""
for k in $(printf '%s\n' "${!count[@]}" | sort -n); do summary="$summary exit $k: ${count[$k]};"; done
echo "stress: $ROUNDS rounds x $NPROC processes on $NDIR folders;$summary end:$ends"
