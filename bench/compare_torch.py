#!/usr/bin/env python3
"""amptrain against PyTorch on the CPU: the same training step, the same
shapes and the same thread count, measured side by side and interleaved.

For each round, and within it for each policy, it runs amptrain's
bench_step (one policy, --no-floor) and then the PyTorch step in this
process, so a drift in the machine's speed hits both alike:

  fp32  plain FP32                      | amptrain fp32
  bf16  torch.autocast("cpu", bfloat16) | amptrain bf16 plugin, no scaler
  fp16  torch.autocast("cpu", float16)  | amptrain fp16 plugin, dynamic scaler
        + torch.amp.GradScaler("cpu")     (n/a where this torch lacks CPU fp16)

The step is the MLP of bench_step: Linear-ReLU-...-Linear, cross-entropy,
SGD with momentum 0.9, lr 0.01, on random data. The GPT is not measured:
amptrain has no GPT model yet (add it here once it has).

It prints one table: per policy the median over rounds of each side's
median step time, and the median over rounds of the ratio
torch_ms / amptrain_ms (above 1: amptrain is faster).

PyTorch is a benchmark dependency only (pip install torch); nothing in the
test suite needs it. Exit status: 0 ok, 1 a run failed, 2 usage error,
3 torch is not installed.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--bench-step", default=os.path.join(here, "..", "build", "bench", "bench_step"),
                   help="path to amptrain's bench_step (default: build/bench/bench_step)")
    p.add_argument("--features", type=int, default=784)
    p.add_argument("--hidden", default="1024,1024")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=20, help="timed steps per measurement")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    p.add_argument("--threads", type=int, default=0,
                   help="threads for both sides (default: AMPTRAIN_THREADS, else the cores)")
    p.add_argument("--policies", default="fp32,bf16,fp16")
    a = p.parse_args(argv)
    try:
        a.hidden_list = [int(w) for w in a.hidden.split(",") if w]
    except ValueError:
        p.error("--hidden: expected comma-separated integers")
    a.policies = [x for x in a.policies.split(",") if x]
    for x in a.policies:
        if x not in ("fp32", "bf16", "fp16"):
            p.error("--policies: unknown policy %r (fp32, bf16, fp16)" % x)
    if a.threads <= 0:
        env = os.environ.get("AMPTRAIN_THREADS")
        a.threads = int(env) if env else (os.cpu_count() or 1)
    if min(a.steps, a.rounds, a.batch) < 1 or a.warmup < 0:
        p.error("--steps, --rounds, --batch >= 1, --warmup >= 0")
    return a


AMP_LABEL = {"fp32": "fp32", "bf16": "bf16+none", "fp16": "fp16+dynamic"}


def amptrain_ms(a, policy):
    env = dict(os.environ, AMPTRAIN_THREADS=str(a.threads))
    cmd = [a.bench_step, "--no-floor", "--policy", policy, "--steps", str(a.steps),
           "--warmup", str(a.warmup), "--batch", str(a.batch), "--hidden", a.hidden,
           "--features", str(a.features), "--classes", str(a.classes)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("bench_step failed (%d): %s" % (r.returncode, r.stderr.strip()))
    kernels = ""
    ms = None
    for line in r.stdout.splitlines():
        m = re.match(r"\|\s*%s\s*\|\s*([0-9.]+)\s*\|" % re.escape(AMP_LABEL[policy]), line)
        if m:
            ms = float(m.group(1))
        if line.startswith(AMP_LABEL[policy] + " kernels:"):
            kernels = line.split(":", 1)[1].strip()
    if ms is None:
        raise RuntimeError("no %s row in bench_step's output:\n%s" % (policy, r.stdout))
    return ms, kernels


class TorchStep:
    def __init__(self, torch, a, policy):
        self.torch, self.policy = torch, policy
        nn = torch.nn
        torch.manual_seed(1)
        widths = [a.features] + a.hidden_list + [a.classes]
        layers = []
        for i, (w_in, w_out) in enumerate(zip(widths[:-1], widths[1:])):
            layers.append(nn.Linear(w_in, w_out))
            if i < len(widths) - 2:
                layers.append(nn.ReLU())
        self.model = nn.Sequential(*layers)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.x = torch.randn(a.batch, a.features)
        self.y = torch.randint(0, a.classes, (a.batch,))
        self.loss = nn.CrossEntropyLoss()
        self.dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[policy]
        self.scaler = torch.amp.GradScaler("cpu") if policy == "fp16" else None

    def step(self):
        torch = self.torch
        self.opt.zero_grad(set_to_none=True)
        if self.dtype is None:
            loss = self.loss(self.model(self.x), self.y)
        else:
            with torch.autocast("cpu", dtype=self.dtype):
                loss = self.loss(self.model(self.x), self.y)
        if self.scaler:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            loss.backward()
            self.opt.step()
        return float(loss)


def torch_ms(torch, a, policy):
    s = TorchStep(torch, a, policy)
    for _ in range(a.warmup):
        s.step()
    t = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        s.step()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def main(argv):
    a = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("compare_torch: PyTorch is not installed (pip install torch); nothing to compare",
              file=sys.stderr)
        return 3
    torch.set_num_threads(a.threads)
    if not os.access(a.bench_step, os.X_OK):
        print("compare_torch: %s is not an executable (build first, or --bench-step)" % a.bench_step,
              file=sys.stderr)
        return 2
    fp16_ok = True
    try:
        torch_ms(torch, argparse.Namespace(**dict(vars(a), steps=1, warmup=0, batch=2)), "fp16")
    except Exception as e:  # this torch has no CPU fp16 autocast/GradScaler
        fp16_ok = False
        fp16_why = str(e).splitlines()[0][:80]
    print("compare_torch: MLP %d-%s-%d, batch %d, %d thread(s) each; %d rounds of (amptrain, torch) "
          "per policy, each the median of %d steps after %d warm-up"
          % (a.features, a.hidden.replace(",", "-"), a.classes, a.batch, a.threads, a.rounds,
             a.steps, a.warmup))
    print("torch %s (%s); amptrain %s" % (torch.__version__, torch.backends.cpu.get_cpu_capability()
                                          if hasattr(torch.backends, "cpu") else "?", a.bench_step))
    res = {p: {"amp": [], "torch": [], "ratio": [], "kernels": ""} for p in a.policies}
    try:
        for r in range(a.rounds):
            for p in a.policies:
                am, kern = amptrain_ms(a, p)
                res[p]["amp"].append(am)
                res[p]["kernels"] = kern
                if p == "fp16" and not fp16_ok:
                    continue
                tm = torch_ms(torch, a, p)
                res[p]["torch"].append(tm)
                res[p]["ratio"].append(tm / am)
            print("  round %d/%d done" % (r + 1, a.rounds), file=sys.stderr)
    except RuntimeError as e:
        print("compare_torch: %s" % e, file=sys.stderr)
        return 1
    print()
    print("| policy | amptrain ms | torch ms | torch/amptrain (median of rounds) | min-max ratio |")
    print("|---|---:|---:|---:|---:|")
    for p in a.policies:
        d = res[p]
        am = statistics.median(d["amp"])
        if d["torch"]:
            tm, ra = statistics.median(d["torch"]), statistics.median(d["ratio"])
            print("| %s | %.3f | %.3f | %.2f | %.2f-%.2f |" % (p, am, tm, ra, min(d["ratio"]),
                                                             max(d["ratio"])))
        else:
            print("| %s | %.3f | n/a | n/a (%s) | |" % (p, am, fp16_why))
    fp32 = statistics.median(res["fp32"]["amp"]) if "fp32" in res else None
    if fp32:
        print()
        print("amptrain step / amptrain fp32 step: " + ", ".join(
            "%s %.2f" % (p, statistics.median(res[p]["amp"]) / fp32) for p in a.policies))
    for p in a.policies:
        print("amptrain %s kernels: %s" % (p, res[p]["kernels"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
