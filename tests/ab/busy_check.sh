#!/bin/bash
# Two arms with identical configs (only [run] name differs), while a CPU hog
# runs during the second arm's runs only: its wall time per step grows, its
# work does not. The study must flag the timing as disturbed (the wall/CPU
# ratio moved between runs), compare CPU time, and call no speed difference
# significant, in the table, ab.json and report.html.
# usage: busy_check.sh AMPTRAIN CONFIG WORKDIR
set -u
A=$1 C=$2 W=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$W" && mkdir -p "$W" || exit 1
sed "0,/^name = .*/s//name = same_a/" "$C" >"$W/same_a.ini"
sed "0,/^name = .*/s//name = same_b/" "$C" >"$W/same_b.ini"
# one thread: the hog then slows the run's wall clock, never its CPU time
export AMPTRAIN_THREADS=1 OMP_NUM_THREADS=1
"$A" ab "$W/same_a.ini" "$W/same_b.ini" --seeds 3 --set run.device=cpu --set model.hidden=1024 \
    --set data.batch_size=512 --set train.steps=300 --out "$W/study" >"$W/table.txt" 2>"$W/ab.log" &
ab=$!
# Two busy loops, stopped except while one of same_b's runs is the child.
hogs=()
for _ in 1 2; do
    sh -c 'while :; do :; done' &
    hogs+=($!)
done
kill -STOP "${hogs[@]}"
trap 'kill -KILL "${hogs[@]}" 2>/dev/null' EXIT
state=stopped
while kill -0 "$ab" 2>/dev/null; do
    want=stopped
    for c in $(pgrep -P "$ab"); do
        { tr '\0' ' ' <"/proc/$c/cmdline"; } 2>/dev/null | grep -q same_b.ini && want=running
    done
    if [ "$want" != "$state" ]; then
        [ "$want" = running ] && kill -CONT "${hogs[@]}" || kill -STOP "${hogs[@]}"
        state=$want
    fi
    sleep 0.01
done
wait "$ab" || fail "ab failed: $(tail -5 "$W/ab.log")"
cat "$W/table.txt"
grep -q "^timing disturbed: .*wall/CPU time per step ranged" "$W/table.txt" ||
    fail "the table does not say the timing was disturbed"
row=$(grep "^same_b " "$W/table.txt") || fail "no same_b row"
echo "$row" | grep -q "not judged: timing disturbed" || fail "same_b's speed verdict: $row"
echo "$row" | grep -Eq " yes " && fail "a significant difference between identical arms: $row"
grep -q '"timing": {"basis": "cpu", "disturbed": true' "$W/study/ab.json" ||
    fail "ab.json does not record the disturbed timing on the CPU basis"
grep -q '"speed": {[^}]*"significant": true' "$W/study/ab.json" &&
    fail "ab.json calls a speed difference significant"
grep -q 'id="timing-disturbed"' "$W/study/report.html" || fail "the report has no timing warning"
grep -q 'significantly faster\|significantly slower' "$W/study/report.html" &&
    fail "the report calls a speed difference significant"
echo "busy_check: ok"
