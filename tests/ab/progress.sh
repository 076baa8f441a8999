#!/bin/bash
# What `amptrain ab` prints as its runs go. Off a terminal: one line per run,
# "[k/n] ARM seed S ... test_acc A test_loss L (T s)", nothing redrawn. On a
# terminal (a pty from script(1)): the same line once each run has ended and
# a live line redrawn with \r, "[k/n] ARM seed S | step i/N | run time |
# study TIME | ETA E", where E is estimated from the finished runs' wall
# times: each run not yet finished counts its arm's mean (an arm without a
# finished run: the mean of all), less what the current run has taken. At a
# run's first draw it has taken nothing, so E is checked there against the
# estimate recomputed from the "(T s)" of the runs before it.
# usage: progress.sh AMPTRAIN TINY_SGD.ini WORK_DIR
set -u
A=$1 CFG=$2 W=$3
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
# a terminal's output as lines: each redraw on its own, the clear-to-end-of-line codes dropped
lines() { tr '\r' '\n' <"$1" | sed $'s/\033\\[K//g' | grep -a .; }
rm -rf "$W" && mkdir -p "$W" || exit 1
command -v script >/dev/null || fail "script(1) (util-linux) is needed to give the study a terminal"
sed 's/^name = tiny_sgd$/name = tiny_sgd_b/' "$CFG" >"$W/b.ini"
# runs of about 1.5 s here: long enough for a redraw with the step
study=(ab "$CFG" "$W/b.ini" --seeds 2 --set train.steps=1500 --set train.checkpoint_every=0)

# off a terminal: the lines as always
"$A" "${study[@]}" --out "$W/plain" 2>"$W/plain.log" >/dev/null || fail "the study failed: $(tail -3 "$W/plain.log")"
grep -q $'\r' "$W/plain.log" && fail "a \\r off a terminal"
grep -q "ETA" "$W/plain.log" && fail "the live line off a terminal: $(grep -m1 ETA "$W/plain.log")"
runs=$(grep -Ec '^\[[1-4]/4\] tiny_sgd(_b)? seed [56] \.\.\. test_acc [0-9.]+ test_loss [0-9.]+ \([0-9.]+ s\)$' "$W/plain.log")
[ "$runs" = 4 ] || fail "not 4 run lines '[k/4] ARM seed S ... test_acc A test_loss L (T s)' off a terminal: $(grep '^\[' "$W/plain.log")"

# on a terminal: the live line
script -qec "'$A' ${study[*]} --out '$W/tty'" /dev/null >"$W/tty.log" 2>&1 </dev/null ||
    fail "the study on a terminal failed: $(tail -c 600 "$W/tty.log")"
lines "$W/tty.log" >"$W/tty.lines"
grep -aq $'\r\\[[1-4]/4\\] ' "$W/tty.log" || fail "the live line is not redrawn with \\r"
for k in 1 2 3 4; do
    grep -aEq "^\\[$k/4\\] tiny_sgd(_b)? seed [56] \\| [0-9hms]+ \\| study [0-9hms]+ \\| ETA ([0-9hms]+|-)$" "$W/tty.lines" ||
        fail "no live line '[$k/4] ARM seed S | TIME | study TIME | ETA E': $(grep -a "^\\[$k/4\\]" "$W/tty.lines")"
done
[ "$(grep -aEc '^\[[1-4]/4\] tiny_sgd(_b)? seed [56] \.\.\. test_acc [0-9.]+ test_loss [0-9.]+ \([0-9.]+ s\)$' "$W/tty.lines")" = 4 ] ||
    fail "not 4 finished-run lines on a terminal: $(grep -a ' \.\.\. ' "$W/tty.lines")"
# the step of the current run, read from its log, once a run lasted past a redraw
long=$(grep -aEo '\(([0-9.]+) s\)$' "$W/tty.lines" | tr -d '()s ' | awk '$1 >= 1.5' | head -1)
if [ -n "$long" ]; then
    grep -aEq '^\[[1-4]/4\] tiny_sgd(_b)? seed [56] \| step [1-9][0-9]*/1500 \| ' "$W/tty.lines" ||
        fail "a run took $long s but no live line shows its step: $(grep -a '| step' "$W/tty.lines" | head -3)"
fi

# The ETA at each run's first draw against the finished runs' wall times.
awk '
function secs(t,   s) { s = 0
    if (t ~ /h/) { split(t, h, "h"); s += h[1] * 3600; t = h[2] }
    if (t ~ /m/) { split(t, m, "m"); s += m[1] * 60; t = m[2] }
    sub(/s$/, "", t); return s + t }
/^\[[0-9]+\/4\] .* \.\.\. / {            # a finished run: [k/4] ARM seed S ... (T s)
    split($1, kk, /[\[\/\]]/); k = kk[2]; arm[k] = $2
    t = $(NF - 1); sub(/^\(/, "", t); wall[k] = t; next }
/^\[[0-9]+\/4\] .* \| ETA / {             # a live line
    split($1, kk, /[\[\/\]]/); k = kk[2]
    if (!(k in first)) { first[k] = $0; run_arm[k] = $2; eta[k] = $NF } }
END {
    checked = 0
    for (k = 2; k <= 4; k++) {
        if (!(k in eta) || eta[k] == "-") { print "run " k ": no ETA at its first draw: " first[k]; bad = 1; continue }
        # means over the runs finished before k
        all = 0; n = 0; delete sum; delete cnt
        for (j = 1; j < k; j++) { sum[arm[j]] += wall[j]; cnt[arm[j]]++; all += wall[j]; n++ }
        expect = 0
        for (j = k; j <= 4; j++) { a = run_arm[j]; expect += (a in cnt) ? sum[a] / cnt[a] : all / n }
        got = secs(eta[k])
        # the displayed walls are rounded to 0.1 s, the ETA to 1 s
        if (got < expect - 1 || got > expect + 1) {
            printf "run %d: ETA %s, expected %.1f s from the finished runs\n", k, eta[k], expect; bad = 1 }
        checked++
        printf "run %d/4 starts: ETA %s (finished runs give %.1f s)\n", k, eta[k], expect
    }
    exit bad || checked != 3 }' "$W/tty.lines" >"$W/eta.txt"
rc=$?
cat "$W/eta.txt"
[ $rc = 0 ] || fail "the ETA is not the finished runs' estimate"
lines "$W/tty.log" | grep -aE '^\[[1-4]/4\] .* \| ETA' | head -4
