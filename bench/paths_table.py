#!/usr/bin/env python3
"""One table of the CPU's GEMM paths per model and policy: which path each
step ran when the backend chose by measurement, and how that compares with
every path pinned, with the fp32 step, with the CPU's ceiling and with
PyTorch.

For each model (mlp and gpt: bench_step; cnn: bench_cnn) and each policy
(fp32, fp16+dynamic, bf16+none) it runs, in interleaved rounds (the order
of the runs rotating per round, so a drift in the machine's speed falls on
all of them):

  tuned         the default: each GEMM shape's path chosen by measurement,
                from a private cache folder in a temporary directory that
                one untimed run per model fills first (so the timed runs
                read the choices and measure nothing)
  onednn-f32    AMPTRAIN_GEMM=onednn AMPTRAIN_GEMM_PATH=widened
  openblas-f32  AMPTRAIN_GEMM=openblas
  native        AMPTRAIN_GEMM_PATH=native (16-bit policies; only where the
                CPU has a native 16-bit GEMM, else 'not on this CPU')

and, with --torch-python, the same MLP and GPT steps in PyTorch
(bench/compare_torch.py's models, the CNN's included, run by that python in a child process,
torch.set_num_threads(--threads)).

The figure read is the median over the rounds of each run's median process
CPU time per step (bench_step's `step cpu ms`, bench_cnn's `CPU ms`, and
time.process_time around the PyTorch step), the wall time beside it in
parentheses. CPU time, because the machines these numbers come from are
shared: another job that takes the core stretches the wall time of a step
but not the CPU time the step itself used, so with one thread the CPU time
is the step's own work and compares paths steadily under a changing load.
With more threads it also counts the threads' waiting.

Columns: the tuned run's path mix (`N shapes: path xK, ...`); each run's
ms; tuned / best pinned candidate (median over rounds of the per-round
ratio to the candidate with the lowest median; target <= 1.03); 16-bit /
fp32 (tuned, paired by round; target <= 1.10); the step's GEMM GFLOP per
CPU-second against the one-core ceiling bench_peak measures (FP32 FMA; for
the 16-bit policies the BF16 dot or FP16 FMA where the CPU has it, named
'not on this CPU' where not); PyTorch's ms and PyTorch / amptrain (median
of the per-round ratios of CPU time; above 1 amptrain is faster; target
>= 1.0). A missed target is marked MISSED.

  python3 bench/paths_table.py                      # 5 rounds, 1 thread
  python3 bench/paths_table.py --rounds 3 --torch-python /path/to/venv/bin/python
  python3 bench/paths_table.py --tiny --rounds 1    # small shapes (the smoke test)

PyTorch is a reference only: no test needs it; without --torch-python its
columns say 'not run'. Exit status: 0 ok, 1 a run failed, 2 usage error.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

POLICIES = ("fp32", "fp16+dynamic", "bf16+none")
MODELS = ("mlp", "gpt", "cnn")
CNN_LABEL = {"fp32": "fp32", "fp16+dynamic": "fp16", "bf16+none": "bf16"}
TORCH_POLICY = {"fp32": "fp32", "fp16+dynamic": "fp16", "bf16+none": "bf16"}
# (name, environment); the tuned run sets only the cache
CANDIDATES = (
    ("onednn-f32", {"AMPTRAIN_GEMM": "onednn", "AMPTRAIN_GEMM_PATH": "widened"}),
    ("openblas-f32", {"AMPTRAIN_GEMM": "openblas"}),
    ("native", {"AMPTRAIN_GEMM_PATH": "native"}),
)
NO_NATIVE = "no native 16-bit GEMM"  # the backend's message where the CPU has none
TARGET_TUNED, TARGET_16, TARGET_TORCH = 1.03, 1.10, 1.0


class Failed(Exception):
    pass


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    build = os.path.join(here, "..", "build", "bench")
    p.add_argument("--build", default=build, help="folder of bench_step, bench_cnn, bench_peak "
                   "(default: build/bench)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    p.add_argument("--steps", type=int, default=20, help="timed steps per run (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    p.add_argument("--cnn-steps", type=int, default=10, help="bench_cnn's timed steps (default 10)")
    p.add_argument("--threads", type=int, default=1, help="AMPTRAIN_THREADS and torch's threads "
                   "(default 1)")
    p.add_argument("--models", default="mlp,gpt,cnn", help="any of mlp, gpt, cnn (default all)")
    p.add_argument("--torch-python", default="", help="a python with torch, for the PyTorch "
                   "columns (default: not run)")
    p.add_argument("--peak-seconds", type=float, default=0.3, help="bench_peak --seconds")
    p.add_argument("--tiny", action="store_true", help="small shapes, for a smoke run")
    p.add_argument("--torch-worker", default="", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.torch_worker:
        return a
    if min(a.rounds, a.steps, a.cnn_steps, a.threads) < 1 or a.warmup < 1 or a.peak_seconds <= 0:
        p.error("--rounds, --steps, --cnn-steps, --threads, --warmup want numbers >= 1 "
                "(the first step may measure; it is never timed)")
    a.models = [m for m in a.models.split(",") if m]
    for m in a.models:
        if m not in MODELS:
            p.error("--models: unknown model %r (mlp, gpt, cnn)" % m)
    if not a.models:
        p.error("--models: none given")
    if a.torch_python and not os.access(a.torch_python, os.X_OK):
        p.error("--torch-python %s: not an executable" % a.torch_python)
    # the shapes: bench_step's and compare_torch.py's defaults, or small ones
    if a.tiny:
        a.mlp = {"features": 64, "hidden": "32,32", "classes": 10, "batch": 16}
        a.gpt = {"n_layer": 1, "n_head": 2, "n_embd": 32, "block_size": 16, "batch": 2}
        a.cnn_batch = 4
    else:
        a.mlp = {"features": 784, "hidden": "1024,1024", "classes": 10, "batch": 256}
        a.gpt = {"n_layer": 4, "n_head": 4, "n_embd": 128, "block_size": 64, "batch": 12}
        a.cnn_batch = 128
    return a


# ---- the runs ---------------------------------------------------------------------------

def bench_cmd(a, model, steps, warmup):
    if model == "cnn":
        return [os.path.join(a.build, "bench_cnn"), "--steps", str(steps), "--warmup",
                str(warmup), "--batch", str(a.cnn_batch)]
    cmd = [os.path.join(a.build, "bench_step"), "--model", model, "--no-floor", "--steps",
           str(steps), "--warmup", str(warmup)]
    for p in POLICIES:
        cmd += ["--policy", p]
    if model == "gpt":
        g = a.gpt
        cmd += ["--batch", str(g["batch"]), "--n-layer", str(g["n_layer"]), "--n-head",
                str(g["n_head"]), "--n-embd", str(g["n_embd"]), "--block-size",
                str(g["block_size"]), "--activation", "gelu_tanh"]  # compare_torch's GELU
    else:
        m = a.mlp
        cmd += ["--batch", str(m["batch"]), "--hidden", m["hidden"], "--features",
                str(m["features"]), "--classes", str(m["classes"])]
    return cmd


ROW_STEP = re.compile(r"^\|\s*(fp32|fp16\+dynamic|bf16\+none)\s*\|\s*([\d.]+)\s*\|")
ROW_CNN = re.compile(r"^\|\s*(fp32|fp16|bf16)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|")
PATHS = re.compile(r"^GEMM paths \(([^)]*)\): (.*)$")


def run_bench(a, model, env_extra, steps, warmup):
    """{policy: (cpu_ms, wall_ms, paths)}, and the step's GEMM GFLOP and the vocab."""
    env = dict(os.environ, AMPTRAIN_THREADS=str(a.threads), **env_extra)
    cmd = bench_cmd(a, model, steps, warmup)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise Failed("%s%s failed (exit %d):\n%s" % (
            "".join("%s=%s " % kv for kv in sorted(env_extra.items())), " ".join(cmd),
            r.returncode, r.stderr.strip()))
    res, paths, info = {}, {}, {"gflop": None, "vocab": None}
    for line in r.stdout.splitlines():
        if model == "cnn":
            m = ROW_CNN.match(line)
            if m:
                pol = [p for p in POLICIES if CNN_LABEL[p] == m.group(1)][0]
                res[pol] = (float(m.group(3)), float(m.group(2)))
            g = re.match(r"^([\d.]+) GFLOP of convolutions and GEMMs per step", line)
        else:
            m = ROW_STEP.match(line)
            if m and m.group(1) not in res:  # the main table; the one against bf16 follows
                cols = [c.strip() for c in line.strip().strip("|").split("|")]
                res[m.group(1)] = (float(cols[7]), float(m.group(2)))  # step cpu ms, median ms
            g = re.search(r"step GEMMs: ([\d.e+-]+) GFLOP", line)
            v = re.search(r"vocab (\d+)", line) if line.startswith("bench_step: GPT") else None
            if v:
                info["vocab"] = int(v.group(1))
        if g:
            info["gflop"] = float(g.group(1))
        m = PATHS.match(line)
        if m:
            paths[m.group(1)] = m.group(2)
    missing = [p for p in POLICIES if p not in res]
    if missing or info["gflop"] is None:
        raise Failed("no %s in the output of %s:\n%s" % (", ".join(missing) or "GFLOP line",
                                                        " ".join(cmd), r.stdout))
    out = {}
    for p in POLICIES:
        mix = paths.get(p, paths.get("all policies", "-"))
        out[p] = res[p] + (re.sub(r" \(.*$", "", mix),)  # the mix without its sources
    return out, info


def native_available(a, model, cache_env):
    """Whether AMPTRAIN_GEMM_PATH=native runs here: a one-step probe."""
    try:
        run_bench(a, model, dict(cache_env, AMPTRAIN_GEMM_PATH="native"), 1, 1)
        return True, ""
    except Failed as e:
        if NO_NATIVE in str(e):
            return False, "not on this CPU"
        raise


def peaks(a):
    """bench_peak's GFLOP/s per kernel, the best of three runs (a busy machine only slows
    a run down); 0.0 for a kernel the CPU lacks."""
    best = {}
    exe = os.path.join(a.build, "bench_peak")
    for _ in range(3):
        r = subprocess.run([exe, "--seconds", str(a.peak_seconds)], capture_output=True, text=True)
        if r.returncode != 0:
            raise Failed("%s failed (exit %d): %s" % (exe, r.returncode, r.stderr.strip()))
        for line in r.stdout.splitlines():
            cols = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cols) == 5 and re.match(r"(fp32|bf16|fp16) ", cols[0]):
                v = 0.0 if cols[3] == "not on this CPU" else float(cols[3])
                best[cols[0]] = max(best.get(cols[0], 0.0), v)
    return best


def ceiling(pk, policy):
    """(GFLOP/s, text) of the kernel bounding the policy's GEMMs on one core."""
    f32 = [(v, k) for k, v in pk.items() if k.startswith("fp32") and v > 0]
    fv, fk = max(f32) if f32 else (0.0, "fp32 fma")
    kernel = {"bf16+none": "bf16 dot 512-bit", "fp16+dynamic": "fp16 fma 512-bit"}.get(policy)
    if kernel:
        v = pk.get(kernel, 0.0)
        if v > 0:
            return v, "%s %.1f" % (kernel, v)
        # the 16-bit operands widen into FP32 GEMMs here
        return fv, "%s: not on this CPU; %s %.1f" % (kernel.split(" 512")[0], fk, fv)
    return fv, "%s %.1f" % (fk, fv)


# ---- PyTorch ----------------------------------------------------------------------------

def torch_worker(spec):
    """Runs in --torch-python: each (model, policy) of the spec through compare_torch.py's
    TorchStep; one JSON line each, wall and CPU ms per step (medians)."""
    import argparse as ap
    s = json.loads(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import compare_torch
    import torch
    torch.set_num_threads(s["threads"])
    ns = ap.Namespace(**s["shape"])
    ns.hidden_list = [int(w) for w in ns.hidden.split(",") if w]
    for model, policy in s["jobs"]:
        ns.batch = s["batch"][model]
        try:
            st = compare_torch.TorchStep(torch, ns, model, policy)
            for _ in range(ns.warmup):
                st.step()
            wall, cpu = [], []
            for _ in range(ns.steps):
                t0, c0 = time.perf_counter(), time.process_time()
                st.step()
                wall.append((time.perf_counter() - t0) * 1e3)
                cpu.append((time.process_time() - c0) * 1e3)
            out = {"cpu": statistics.median(cpu), "wall": statistics.median(wall)}
        except Exception as e:  # e.g. a torch without CPU fp16 autocast
            out = {"error": str(e).splitlines()[0][:80] if str(e) else type(e).__name__}
        out.update(model=model, policy=policy, torch=torch.__version__)
        print(json.dumps(out), flush=True)
    return 0


def run_torch(a, models, vocab):
    jobs = [(m, TORCH_POLICY[p]) for m in models for p in POLICIES]
    if not jobs:
        return {}
    shape = dict(a.mlp, **a.gpt)
    shape.update(vocab=vocab or 65, steps=a.steps, warmup=a.warmup)
    spec = {"threads": a.threads, "shape": shape, "jobs": jobs,
            "batch": {"mlp": a.mlp["batch"], "gpt": a.gpt["batch"], "cnn": a.cnn_batch}}
    cmd = [a.torch_python, os.path.abspath(__file__), "--torch-worker", json.dumps(spec)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise Failed("the PyTorch step (%s) failed (exit %d): %s" % (a.torch_python, r.returncode,
                                                                    r.stderr.strip()[-2000:]))
    out = {}
    for line in r.stdout.splitlines():
        d = json.loads(line)
        pol = [p for p in POLICIES if TORCH_POLICY[p] == d["policy"]][0]
        out[(d["model"], pol)] = d
    return out


# ---- the table --------------------------------------------------------------------------

def med(v):
    return statistics.median(v) if v else None


def fmt_ms(cpu, wall):
    return "%.2f (%.2f)" % (med(cpu), med(wall)) if cpu else "-"


def verdict(x, target, le=True):
    ok = x <= target if le else x >= target
    return "%.3f%s" % (x, "" if ok else " MISSED")


def load_avg():
    try:
        return "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "?"


def main(argv):
    a = parse_args(argv)
    if a.torch_worker:
        return torch_worker(a.torch_worker)
    for exe in ["bench_peak"] + (["bench_step"] if set(a.models) & {"mlp", "gpt"} else []) + \
            (["bench_cnn"] if "cnn" in a.models else []):
        if not os.access(os.path.join(a.build, exe), os.X_OK):
            sys.stderr.write("paths_table: %s is not built (cmake --build build)\n"
                             % os.path.join(a.build, exe))
            return 2
    load0 = load_avg()
    t_start = time.time()
    tmp = tempfile.mkdtemp(prefix="amptrain-paths-")
    cache = {"AMPTRAIN_GEMM_CACHE": os.path.join(tmp, "gemm-cache")}
    try:
        return measure_and_print(a, cache, load0, t_start)
    except Failed as e:
        sys.stderr.write("paths_table: %s\n" % e)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def measure_and_print(a, cache, load0, t_start):
    pk = peaks(a)
    native_ok, native_why = native_available(a, a.models[0], cache)
    configs = [("tuned", {})] + [(n, e) for n, e in CANDIDATES if n != "native" or native_ok]
    # the untimed runs that fill the private cache: the tuned runs then measure nothing
    vocab = None
    for m in a.models:
        _, info = run_bench(a, m, cache, 1, 1)
        vocab = info["vocab"] or vocab
    sys.stderr.write("paths_table: cache warm; %d rounds\n" % a.rounds)
    jobs = [(m, c) for m in a.models for c in configs]
    if a.torch_python and set(a.models) & {"mlp", "gpt"}:
        jobs.append(("torch", None))
    # res[(model, config)][policy] = {"cpu": [...], "wall": [...], "mix": str}
    res = {}
    gflop = {}
    torch_res = {}
    torch_version = ""
    for r in range(a.rounds):
        for j in range(len(jobs)):
            model, c = jobs[(j + r) % len(jobs)]
            if model == "torch":
                for key, d in run_torch(a, a.models, vocab).items():
                    t = torch_res.setdefault(key, {"cpu": [], "wall": [], "round": [], "err": ""})
                    torch_version = d["torch"]
                    if "error" in d:
                        t["err"] = d["error"]
                    else:
                        t["cpu"].append(d["cpu"])
                        t["wall"].append(d["wall"])
                        t["round"].append(r)
                continue
            name, env = c
            steps = a.cnn_steps if model == "cnn" else a.steps
            out, info = run_bench(a, model, dict(cache, **env), steps, a.warmup)
            gflop[model] = info["gflop"]
            for p, (cpu, wall, mix) in out.items():
                d = res.setdefault((model, name), {}).setdefault(p, {"cpu": [], "wall": [],
                                                                   "mix": ""})
                d["cpu"].append(cpu)
                d["wall"].append(wall)
                d["mix"] = mix
        sys.stderr.write("paths_table: round %d/%d done (%.0f s)\n"
                         % (r + 1, a.rounds, time.time() - t_start))
    load1 = load_avg()

    cands = [n for n, _ in configs if n != "tuned"]
    print("paths_table: %d thread(s); %d interleaved rounds; bench_step %d timed steps after %d, "
          "bench_cnn %d after %d; %s shapes" % (a.threads, a.rounds, a.steps, a.warmup,
                                                a.cnn_steps, a.warmup, "tiny" if a.tiny else
                                                "default"))
    print("cells: median over the rounds of each run's median CPU ms per step (wall ms); ratios "
          "from CPU time, median of the per-round ratios")
    print("load average before %s, after %s; %.0f s" % (load0, load1, time.time() - t_start))
    print()
    head = ["model", "policy", "chosen paths (tuned)", "tuned ms"] + \
        ["%s ms" % n for n in cands] + \
        (["native ms"] if not native_ok else []) + \
        ["tuned / best (<= %.2f)" % TARGET_TUNED, "16-bit / fp32 (<= %.2f)" % TARGET_16,
         "ceiling GFLOP/s (1 core)", "step GFLOP/s (of ceiling)", "PyTorch ms",
         "PyTorch / amptrain (>= %.1f)" % TARGET_TORCH]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i < 3 else "---:" for i in range(len(head))) + "|")
    for m in a.models:
        for p in POLICIES:
            tuned = res[(m, "tuned")][p]
            row = [m, CNN_LABEL[p] if m == "cnn" else p, tuned["mix"],
                   fmt_ms(tuned["cpu"], tuned["wall"])]
            meds = {}
            for n in cands:
                d = res[(m, n)][p]
                if n == "native" and p == "fp32":
                    row.append("- (no 16-bit GEMMs)")
                    continue
                meds[n] = med(d["cpu"])
                row.append(fmt_ms(d["cpu"], d["wall"]))
            if not native_ok:
                row.append("- (no 16-bit GEMMs)" if p == "fp32" else native_why)
            best = min(meds, key=meds.get)
            ratio = med([t / b for t, b in zip(tuned["cpu"], res[(m, best)][p]["cpu"])])
            row.append("%s (best: %s)" % (verdict(ratio, TARGET_TUNED), best))
            if p == "fp32":
                row.append("-")
            else:
                f32 = res[(m, "tuned")]["fp32"]["cpu"]
                row.append(verdict(med([x / f for x, f in zip(tuned["cpu"], f32)]), TARGET_16))
            cv, ctext = ceiling(pk, p)
            gfs = gflop[m] * 1e3 / med(tuned["cpu"])  # GFLOP per CPU-second
            row.append(ctext)
            row.append("%.1f (%.0f%%)" % (gfs, 100.0 * gfs / cv) if cv > 0 else "%.1f" % gfs)
            if not a.torch_python:
                row += ["not run", "not run"]
            else:
                t = torch_res.get((m, p), {"cpu": [], "err": "no result"})
                if not t["cpu"]:
                    row += ["n/a (%s)" % t["err"], "-"]
                else:
                    row.append(fmt_ms(t["cpu"], t["wall"]))
                    pairs = [t["cpu"][i] / tuned["cpu"][r] for i, r in enumerate(t["round"])]
                    row.append(verdict(med(pairs), TARGET_TORCH, le=False))
            print("| " + " | ".join(row) + " |")
    print()
    print("GFLOP per step: " + ", ".join("%s %.4g" % (m, gflop[m]) for m in a.models) +
          "; step GFLOP/s: those GEMMs' (and the CNN's convolutions') flops per CPU-second of "
          "the tuned step, against one core's ceiling (bench_peak, best of 3 runs)")
    if a.torch_python:
        print("PyTorch %s (%s), compare_torch.py's models, %d thread(s)"
              % (torch_version or "?", a.torch_python, a.threads))
    if "cnn" in a.models:
        print("cnn: bench_cnn's policies set the model's dtypes without a loss scaler (it does "
              "not change a step's work); its path mix is the backend's over all three policies")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
