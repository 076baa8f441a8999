#!/bin/bash
# SIGTERM to a running `amptrain ab` reaches its child run too: ab exits 143,
# writes no ab.json/report.html, leaves no training process behind, and the
# same command afterwards starts the study over and completes.
# usage: stop_check.sh AMPTRAIN CONFIG_A CONFIG_B WORKDIR
set -u
A=$1 CA=$2 CB=$3 W=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W" || exit 1

"$A" ab "$CA" "$CB" --seeds 2 --set run.device=cpu --set train.steps=1000000 --out "$W/study" 2>"$W/stop.log" &
pid=$!
# wait until the first child run has started training (its log has a step)
for _ in $(seq 1 600); do
    grep -q "^step " "$W"/study/runs/*/seed-*/train.log 2>/dev/null && break
    sleep 0.05
done
grep -q "^step " "$W"/study/runs/*/seed-*/train.log 2>/dev/null || fail "no run started: $(cat "$W/stop.log")"
child=$(pgrep -P "$pid")
[ -n "$child" ] || fail "no child run found under ab (pid $pid)"
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 143 ] || fail "ab exited $rc after SIGTERM, expected 143: $(tail -3 "$W/stop.log")"
for _ in $(seq 1 100); do kill -0 "$child" 2>/dev/null || break; sleep 0.05; done
! kill -0 "$child" 2>/dev/null || { kill -9 "$child"; fail "the child run $child outlived ab"; }
grep -q "stopped by SIGTERM" "$W/stop.log" || fail "no 'stopped by SIGTERM' message: $(tail -3 "$W/stop.log")"
[ ! -e "$W/study/ab.json" ] && [ ! -e "$W/study/report.html" ] || fail "a stopped study wrote ab.json or report.html"
ls "$W"/study/runs/*/seed-*/checkpoints/ckpt-*.amp >/dev/null 2>&1 ||
    fail "the stopped child wrote no checkpoint"

"$A" ab "$CA" "$CB" --seeds 2 --set run.device=cpu --set train.steps=60 --out "$W/study" >"$W/again.out" 2>"$W/again.log" ||
    fail "the same command after a stop failed: $(tail -3 "$W/again.log")"
[ -s "$W/study/ab.json" ] && [ -s "$W/study/report.html" ] || fail "the rerun wrote no report"
echo "ab stopped by SIGTERM: exit 143, child stopped, no report; the rerun completed"
