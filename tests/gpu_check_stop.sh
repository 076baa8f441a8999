#!/bin/bash
# gpu_check_stop.sh SOURCE_DIR WORK_DIR
# The device run of scripts/gpu-check.sh, stopped by a signal in the middle
# of a part, still leaves $OUT/gpu-check/summary.md with every part in the
# run's order: the running one "stopped while running", the later ones "not
# run" saying the run was stopped; it ends at once (no waiting for the part)
# with exit 1. The build part is a stand-in `cmake` that sleeps (no GPU and
# no real build needed). Also: --dry-run lists every part, in the same
# order (the timing rows before the sanitizers), each with what it would
# run, and the caps sum to at most the 480 s budget.
set -u
[ $# -eq 2 ] || { echo "usage: gpu_check_stop.sh SOURCE_DIR WORK_DIR" >&2; exit 2; }
src=$1 work=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work/bin" "$work/out" "$work/debs" || exit 1
printf '#!/bin/sh\necho "stand-in cmake: sleeping"\nexec sleep 60\n' >"$work/bin/cmake"
chmod +x "$work/bin/cmake"
order="gpu prefix build gemm kernels fp8 nvfp4 ctest nccl parity bench cnn gpt torch memcheck_formats
  memcheck_gpt memcheck_cnn racecheck_kernels racecheck_gpt initcheck_gpt synccheck_gpt"

# parts_in SUMMARY: the part names of the table, in order
parts_in() { sed -n 's/^| \([a-z0-9_]*\) *|.*/\1/p' "$1" | grep -vx part | tr '\n' ' '; }

PATH=$work/bin:$PATH OUT=$work/out timeout 120 bash "$src/scripts/gpu-check.sh" --debs "$work/debs" \
    --build-dir "$work/build" >"$work/run.log" 2>&1 &
pid=$!
for _ in $(seq 1 900); do  # the environment part alone takes ~20 s here
    grep -q '^== build (limit' "$work/run.log" 2>/dev/null && break
    sleep 0.1
done
grep -q '^== build (limit' "$work/run.log" || fail "the build part never started: $(tail -n 5 "$work/run.log")"
t0=$SECONDS
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" = 1 ] || fail "exit status $rc after the stop, expected 1"
[ $((SECONDS - t0)) -lt 20 ] || fail "took $((SECONDS - t0)) s to stop (the part was not ended)"
sum=$work/out/gpu-check/summary.md
[ -f "$sum" ] || fail "no $sum after the stop"
[ "$(parts_in "$sum")" = "$(echo $order) " ] || fail "parts in $sum: '$(parts_in "$sum")', expected '$(echo $order)'"
grep -qE '^\| build +\| FAIL +\| +[0-9]+ \| stopped while running' "$sum" || fail "the build row does not say it was stopped: $(grep '^| build' "$sum")"
grep -qE '^\| gemm +\| - +\| +0 \| not run: the run was stopped' "$sum" || fail "the gemm row: $(grep '^| gemm' "$sum")"
grep -qE '^\| torch +\| - +\| +0 \| not run: the run was stopped' "$sum" || fail "the torch row: $(grep '^| torch' "$sum")"
echo "ok  stopped during the build: summary.md lists all $(echo $order | wc -w) parts, the build stopped, the rest not run"

PATH=$work/bin:$PATH timeout 60 bash "$src/scripts/gpu-check.sh" --dry-run --build-dir "$work/dry" >"$work/dry.log" 2>&1 ||
    fail "--dry-run failed: $(tail -n 5 "$work/dry.log")"
sum=$work/dry/gpu-check-logs/summary.md
[ "$(parts_in "$sum")" = "$(echo $order) " ] || fail "dry-run parts: '$(parts_in "$sum")'"
[ "$(grep -cE '^\| [a-z0-9_]+ +\| dry +\|' "$sum")" = $(($(echo $order | wc -w) - 1)) ] ||
    fail "not every part but gpu says what it would run: $(cat "$sum")"
echo "ok  --dry-run: every part in order, each with what it would run"
# The plan fits the device window: the prefix's 30 s and every part's cap
# sum to at most the default budget of 480 s, build included.
plan=$(grep -oE 'for up to [0-9]+ s' "$sum" | awk '{s += $4} END {print s + 30}')
[ "$plan" -le 480 ] || fail "the parts' caps sum to $plan s, past the 480 s budget"
echo "ok  the plan's caps: $plan s of the 480 s budget"
