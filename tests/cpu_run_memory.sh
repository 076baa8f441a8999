#!/bin/sh
# cpu_run_memory.sh AMPTRAIN CONFIG
# A training run with [run] device = cpu (docs/performance-threads.md,
# "Memory"): loads no CUDA library at any time (glibc's LD_DEBUG=files
# names every object the loader maps, dlopen'ed ones included), and its
# summary.json reports the process's peak RSS beside the arena bytes, at
# most 2x their total. (The libraries' share was 150 MiB of a 232 MiB peak
# at the nanoGPT shape when the CUDA runtime loaded with every run; the
# issue's 1.5x goal is measured, not pinned, so allocator noise cannot flake
# this.) Where no NVIDIA driver is installed, device = auto maps none
# either. POSIX sh; python3 reads the JSON.
set -u
[ $# -eq 2 ] || { echo "usage: cpu_run_memory.sh AMPTRAIN CONFIG" >&2; exit 2; }
bin=$1 cfg=$2
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cpu_mem.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT
cuda_libs='libcudart|libcublas|libcudnn|libnccl|libcuda\.so|libamptrain_cuda'
# AddressSanitizer's shadow memory and redzones are resident too: the bound
# on peak RSS holds only for an uninstrumented build (the rest still runs)
asan=0
ldd "$bin" 2>/dev/null | grep -q libasan && asan=1

run() { # run NAME DEVICE: trains 10 steps, LD_DEBUG's lines in NAME.ld
    LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/$1.ld" "$bin" train "$cfg" --set run.device="$2" \
        --set train.steps=10 --set train.eval_every=0 --out "$tmp/$1" >"$tmp/$1.log" 2>&1
    rc=$?
    [ "$rc" = 0 ] || { cat "$tmp/$1.log" >&2; bad "$1: amptrain exited $rc"; return 1; }
}
# "generating link map": the file was found and mapped (a dlopen that finds
# nothing logs only its "file=" line)
maps_cuda() {
    cat "$tmp/$1".ld.* 2>/dev/null | grep -E "file=[^ ]*($cuda_libs)[^ ]* .*generating link map" |
        sed 's/^[[:space:]]*[0-9]*:[[:space:]]*//; s/ *\[.*//' | sort -u | tr '\n' ' '
}

if run cpu cpu; then
    got=$(maps_cuda cpu)
    [ -z "$got" ] || bad "device = cpu loaded CUDA libraries: $got"
    ls "$tmp"/cpu.ld.* >/dev/null 2>&1 || bad "LD_DEBUG wrote nothing: cannot tell what was loaded"
    python3 - "$tmp/cpu/summary.json" "$asan" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))
rss, total = s.get("peak_rss_bytes"), s["memory_peak_bytes"]["total"]
if not isinstance(rss, int) or rss <= 0:
    sys.exit("FAIL: summary.json: peak_rss_bytes is %r, expected a positive integer" % (rss,))
if sys.argv[2] == "1":
    print("ok  device = cpu: peak RSS %.1f MiB reported (built with AddressSanitizer, whose shadow "
          "memory is resident: the 2x bound is not checked)" % (rss / 2**20))
elif rss > 2 * total:
    sys.exit("FAIL: peak RSS %.1f MiB is over 2x the arenas' %.1f MiB" % (rss / 2**20, total / 2**20))
else:
    print("ok  device = cpu: peak RSS %.1f MiB, arenas %.1f MiB (%.2fx)" % (rss / 2**20, total / 2**20, rss / total))
PY
    [ "$fail" = 0 ] && echo "ok  device = cpu mapped no CUDA library"
fi
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' && run auto auto; then
    got=$(maps_cuda auto)
    [ -z "$got" ] || bad "device = auto without an NVIDIA driver loaded CUDA libraries: $got"
    [ -n "$got" ] || echo "ok  device = auto without a driver mapped no CUDA library"
fi
exit "$fail"
