#!/usr/bin/env python3
"""Issue 13's CPU ratios, measured side by side: for each instruction-set
path, bench_step's floor and its fp32, fp16+dynamic and bf16+none steps,
interleaved round after round so a drift in the machine's speed hits every
path alike.

Each round runs, for each path, one bench_step process (all three policies
and the FP32 floor) with AMPTRAIN_ISA set to that path. The table gives per
path the median over rounds of each figure, and the median over rounds of
each round's ratios:

  fp32/floor   the FP32 step against the same GEMMs alone (target <= 1.15)
  fp16/fp32    the 16-bit steps against the FP32 step   (target <= 1.10 on
  bf16/fp32    AVX2 machines; on AVX512_BF16 ones bf16 >= 1.5x faster)

and the activation memory of the 16-bit policies against FP32's (target
<= 0.55), which does not vary.

  python3 bench/cpu_paths.py                        # paths this CPU has, 5 rounds
  python3 bench/cpu_paths.py --paths avx2 --rounds 9 --threads 1

Paths: avx512 (the default where the CPU has it), avx2, avx512_bf16 (the
opt-in native BF16 GEMMs) and generic; a path the CPU lacks is left out.
Exit status: 0 ok, 1 a run failed, 2 usage error.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

POLICIES = ("fp32", "fp16+dynamic", "bf16+none")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--bench-step", default=os.path.join(here, "..", "build", "bench", "bench_step"),
                   help="path to bench_step (default: build/bench/bench_step)")
    p.add_argument("--paths", default="",
                   help="comma-separated ISA paths (default: every one this CPU has)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=30, help="timed steps per bench_step run")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="AMPTRAIN_THREADS (default 1)")
    p.add_argument("extra", nargs="*", help="more bench_step arguments, after --")
    a = p.parse_args(argv)
    if a.rounds < 1 or a.steps < 1 or a.warmup < 0 or a.threads < 1:
        p.error("--rounds, --steps and --threads want positive numbers")
    return a


def cpu_paths():
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    paths = []
    if {"avx512f", "avx512bw", "f16c"} <= flags:
        paths.append("avx512")
    if {"avx2", "fma", "f16c"} <= flags:
        paths.append("avx2")
    if "avx512_bf16" in flags and "avx512" in paths:
        paths.append("avx512_bf16")
    return paths or ["generic"]


ROW = re.compile(r"^\|\s*(fp32|fp16\+dynamic|bf16\+none)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|")
ACT = re.compile(r"^activations:\s*(.*)$")


def run_once(a, path):
    env = dict(os.environ, AMPTRAIN_ISA=path, AMPTRAIN_THREADS=str(a.threads))
    cmd = [a.bench_step, "--steps", str(a.steps), "--warmup", str(a.warmup)] + a.extra
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write("cpu_paths: %s (AMPTRAIN_ISA=%s) failed:\n%s" % (" ".join(cmd), path, r.stderr))
        sys.exit(1)
    out = {"path_line": ""}
    for line in r.stdout.splitlines():
        m = ROW.match(line)
        if m:
            out[m.group(1)] = float(m.group(2))
            out["floor"] = float(m.group(3))
        if line.startswith("amptrain path:"):
            out["path_line"] = line
        m = ACT.match(line)
        if m:
            out["act"] = m.group(1)
    missing = [p for p in POLICIES + ("floor",) if p not in out]
    if missing:
        sys.stderr.write("cpu_paths: no %s in bench_step's output:\n%s" % (", ".join(missing), r.stdout))
        sys.exit(1)
    return out


def main(argv):
    a = parse_args(argv)
    if not os.access(a.bench_step, os.X_OK):
        sys.stderr.write("cpu_paths: %s is not built (cmake --build build)\n" % a.bench_step)
        return 2
    have = cpu_paths()
    paths = [p for p in a.paths.split(",") if p] if a.paths else have
    for p in paths:
        if p not in ("generic", "avx2", "avx512", "avx512_bf16"):
            sys.stderr.write("cpu_paths: unknown path %r (generic, avx2, avx512, avx512_bf16)\n" % p)
            return 2
    runs = {p: [] for p in paths}
    for r in range(a.rounds):
        for p in paths:
            runs[p].append(run_once(a, p))
        sys.stderr.write("round %d/%d done\n" % (r + 1, a.rounds))
    med = statistics.median
    print("bench_step per ISA path, %d thread(s), %d interleaved rounds of %d steps after %d warm-up;"
          " medians over rounds (ratios: median of each round's ratio)" % (a.threads, a.rounds, a.steps, a.warmup))
    print()
    print("| path | floor ms | fp32 ms | fp16 ms | bf16 ms | fp32/floor | fp16/fp32 | bf16/fp32 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for p in paths:
        rs = runs[p]
        fl, f32, f16, b16 = (med([x[k] for x in rs]) for k in ("floor",) + POLICIES)
        r_floor = med([x["fp32"] / x["floor"] for x in rs])
        r16 = med([x["fp16+dynamic"] / x["fp32"] for x in rs])
        rb16 = med([x["bf16+none"] / x["fp32"] for x in rs])
        print("| %s | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f | %.3f |" % (p, fl, f32, f16, b16, r_floor, r16, rb16))
    print()
    for p in paths:
        print("%s: %s" % (p, runs[p][0]["path_line"]))
    act = runs[paths[0]][0].get("act")
    if act:
        print("activations: %s" % act)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
