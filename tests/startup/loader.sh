#!/bin/bash
# amptrain started through the dynamic loader (`ld-linux-x86-64.so.2
# amptrain train ...`, where /proc/self/exe names the loader): the start-up
# restart runs the program again through the loader, the built-in plugins
# are found beside the program, and `ab`'s child runs start; with the wait
# variables already set (no restart) too. Without a readable /proc the
# errors say that the executable's location could not be read.
# usage: loader.sh AMPTRAIN WORK_DIR
set -u
. "$(dirname "$0")/../config/lib.sh" # A, W, TESTS, fail, expect
# the loader this executable names (PT_INTERP), as the distribution places it
LD=$(readelf -l "$A" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
[ -n "$LD" ] || LD=$(ldd "$A" 2>/dev/null | awk '$1 ~ /^\/.*ld-linux/ {print $1; exit}')
[ -x "$LD" ] || { echo "SKIP: no dynamic loader found for $A (readelf/ldd)"; exit 77; }
C=$TESTS/../configs
UNSET=(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OPENBLAS_THREAD_TIMEOUT AMPTRAIN_LOG=debug)
SET=(env OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4 AMPTRAIN_LOG=debug)
TRAIN=(train "$C/tiny_fp16_dynamic.ini" --set train.steps=2)

expect 0 'test_acc' "${UNSET[@]}" "$LD" "$A" "${TRAIN[@]}" --out "$W/restarted"
grep -q 'start-up: execution 2' "$W/log" || fail "through $LD: no restart: $(grep start-up "$W/log")"
[ -f "$W/restarted/summary.json" ] || fail "through $LD: no summary.json"
expect 0 'test_acc' "${SET[@]}" "$LD" "$A" "${TRAIN[@]}" --out "$W/direct"
! grep -q 'start-up: execution 2' "$W/log" || fail "through $LD with the variables set: restarted"
echo "ok  train through $LD: restarted through the loader, and with the wait variables set"

expect 0 'precision +fp16 ' "${SET[@]}" "$LD" "$A" plugins
echo "ok  plugins through $LD: the built-in plugins beside the program"

for env_kind in UNSET SET; do
    declare -n E=$env_kind
    expect 0 'ab\.json' "${E[@]}" "$LD" "$A" ab "$C/tiny_fp16_dynamic.ini" "$C/tiny_fp16_none.ini" \
        --seeds 1 --set train.steps=2 --out "$W/ab_$env_kind"
    for arm in "$W/ab_$env_kind"/runs/*/seed-*; do
        grep -q 'test_acc' "$arm/train.log" || fail "ab through $LD ($env_kind): $arm: $(tail -2 "$arm/train.log")"
    done
    [ -f "$W/ab_$env_kind/ab.json" ] || fail "ab through $LD ($env_kind): no ab.json"
done
echo "ok  ab through $LD: its child runs trained"

# --ranks 2: mpirun starts the loader with the program on every rank.
# Under AddressSanitizer OpenMPI's own leaks (never freed, components
# unloaded at exit) are suppressed by library in the mpi tests; started
# through the loader their frames have no module name to match, so leak
# checking is off for these ranks (memory errors are still caught).
if command -v mpirun >/dev/null && ldd "$A" | grep -q libmpi; then
    RANKS_ENV=("${SET[@]}")
    [ -n "${ASAN_OPTIONS:-}" ] && RANKS_ENV+=(ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0")
    expect 0 'ab\.json' "${RANKS_ENV[@]}" "$LD" "$A" ab "$C/tiny_fp16_dynamic.ini" "$C/tiny_fp16_none.ini" \
        --seeds 1 --ranks 2 --set train.steps=2 --out "$W/ab_ranks"
    for arm in "$W/ab_ranks"/runs/*/seed-*; do
        grep -q 'on 2 ranks' "$arm/train.log" || fail "ab --ranks 2 through $LD: $arm: $(tail -2 "$arm/train.log")"
    done
    echo "ok  ab --ranks 2 through $LD: the ranks trained"
fi

# No /proc: a mount namespace with an empty folder over it (root, or user
# namespaces); skipped where neither is allowed.
cat >"$W/noproc" <<'SH'
#!/bin/sh
ns=-m
unshare $ns sh -c 'mount -t tmpfs none /proc' 2>/dev/null || ns=-rm
exec unshare $ns sh -c 'mount -t tmpfs none /proc && exec "$@"' sh "$@"
SH
chmod +x "$W/noproc"
noproc() { "$W/noproc" "$@"; }
if [ -n "${ASAN_OPTIONS:-}" ]; then
    # the sanitizers read their options and the threads from /proc: without
    # it LeakSanitizer fails at exit whatever the program did
    echo "under AddressSanitizer: the check without /proc is left out"
elif noproc true 2>/dev/null; then
    expect 2 "not beside the executable: the executable's location could not be read \(/proc/self/exe: " \
        "$W/noproc" "$A" "${TRAIN[@]}" --out "$W/noproc_run"
    ! grep -q 'none exists); set' "$W/log" || fail "without /proc: the plugin error hides the cause"
    expect 1 "none beside the executable: the executable's location could not be read" "$W/noproc" "$A" plugins -v
    echo "ok  without /proc: the errors say the executable's location could not be read"
else
    echo "no mount namespace here: the check without /proc is left out"
fi
