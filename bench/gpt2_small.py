#!/usr/bin/env python3
"""GPT-2 small's training step: amptrain against PyTorch on the CPU.

For each round, and within it for each policy (fp32, bf16, fp8, nvfp4),
it runs `amptrain train configs/gpt2_small_<policy>.ini` for --steps steps
and reads summary.json (the median process CPU time and wall time of a
step, the peak resident set, the arenas' peak), then the same step in
PyTorch in a fresh process of this script (--torch-worker): GPT-2 small at
the configs' shape (12 layers, 12 heads, 768 wide, biases, tanh GELU, tied
embeddings, vocabulary 50,304, T 256, batch 1), AdamW (lr 6e-4, betas
0.9/0.95, weight decay 0.1 on the 2-D weights) with the gradient norm
clipped at 1.0; fp32 plain, bf16 under torch.autocast("cpu", bfloat16).
PyTorch has no CPU FP8 or NVFP4 training recipe: those rows are amptrain's
alone. Both sides run at the same thread count, one after the other, so a
drift in the machine's load hits both alike; CPU time (all threads' work)
is the figure that load distorts least.

PyTorch is a benchmark dependency only: without it the torch columns say
so and amptrain's are still measured. Exit status: 0 ok, 1 a run failed,
2 usage error.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_POLICIES = ("fp32", "bf16")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--amptrain", default=os.path.join(HERE, "..", "build", "amptrain"))
    p.add_argument("--configs", default=os.path.join(HERE, "..", "configs"))
    p.add_argument("--policies", default="fp32,bf16,fp8,nvfp4")
    p.add_argument("--steps", type=int, default=5, help="steps per measurement (median taken)")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--threads", type=int, default=0,
                   help="threads for both sides (default: AMPTRAIN_THREADS, else the cores)")
    p.add_argument("--python", default=sys.executable,
                   help="the Python with torch for the PyTorch side (e.g. a venv's)")
    p.add_argument("--torch-worker", default="", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.policies = [x for x in a.policies.split(",") if x]
    if a.threads <= 0:
        env = os.environ.get("AMPTRAIN_THREADS")
        a.threads = int(env) if env else (os.cpu_count() or 1)
    if min(a.steps, a.rounds) < 1:
        p.error("--steps and --rounds must be >= 1")
    return a


def amptrain_row(a, policy):
    cfg = os.path.join(a.configs, "gpt2_small_%s.ini" % policy)
    with tempfile.TemporaryDirectory(prefix="gpt2_small_") as out:
        env = dict(os.environ, AMPTRAIN_THREADS=str(a.threads))
        r = subprocess.run([a.amptrain, "train", cfg, "--set", "train.steps=%d" % a.steps,
                            "--set", "train.eval_every=0", "--set", "data.eval_iters=1",
                            "--out", out], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("amptrain train %s failed (%d): %s"
                               % (cfg, r.returncode, r.stderr.strip()[-400:]))
        s = json.load(open(os.path.join(out, "summary.json")))
    mem = s["memory_peak_bytes"]
    return {"cpu_ms": s["median_cpu_ms"], "wall_ms": s["median_step_ms"],
            "rss": s["peak_rss_bytes"], "arenas": mem["total"],
            "activations": mem["activations"], "params": s["params"]}


def torch_worker(a, policy):
    """One PyTorch measurement in this (fresh) process; prints a JSON line."""
    import torch
    nn, F = torch.nn, torch.nn.functional
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    C, nh, V, T, L = 768, 12, 50304, 256, 12

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)

        def forward(self, x):
            B = x.shape[0]
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, T, nh, C // nh).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(C), Attention(), nn.LayerNorm(C)
            self.mlp = nn.Sequential(nn.Linear(C, 4 * C), nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * C, C))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
            self.h = nn.ModuleList(Block() for _ in range(L))
            self.ln_f = nn.LayerNorm(C)
            self.lm_head = nn.Linear(C, V, bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(T))
            for b in self.h:
                x = b(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, V), targets.view(-1))

    model = GPT()
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": other, "weight_decay": 0.0}],
                            lr=6e-4, betas=(0.9, 0.95), eps=1e-8)
    x, y = torch.randint(0, 2048, (1, T)), torch.randint(0, 2048, (1, T))
    cpu, wall = [], []
    for _ in range(a.steps):
        c0, w0 = time.process_time(), time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if policy == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(x, y)
        else:
            loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss.item()
        cpu.append((time.process_time() - c0) * 1e3)
        wall.append((time.perf_counter() - w0) * 1e3)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"cpu_ms": statistics.median(cpu), "wall_ms": statistics.median(wall),
                      "rss": rss, "version": torch.__version__,
                      "cpu_ms_each": cpu, "wall_ms_each": wall}))


def torch_row(a, policy):
    r = subprocess.run([a.python, os.path.abspath(__file__), "--torch-worker", policy,
                        "--steps", str(a.steps), "--threads", str(a.threads)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1][:100]
    return json.loads(r.stdout.strip().splitlines()[-1]), ""


def main(argv):
    a = parse_args(argv)
    if a.torch_worker:
        torch_worker(a, a.torch_worker)
        return 0
    if not os.access(a.amptrain, os.X_OK):
        print("gpt2_small: %s is not an executable (build first, or --amptrain)" % a.amptrain,
              file=sys.stderr)
        return 2
    res = {p: {"amp": [], "torch": []} for p in a.policies}
    why, version = "", ""
    load = [os.getloadavg()[0]]
    try:
        for r in range(a.rounds):
            for p in a.policies:
                res[p]["amp"].append(amptrain_row(a, p))
                if p in TORCH_POLICIES and not why:
                    t, why = torch_row(a, p)
                    if t:
                        res[p]["torch"].append(t)
                        version = t["version"]
            print("  round %d/%d done" % (r + 1, a.rounds), file=sys.stderr)
    except RuntimeError as e:
        print("gpt2_small: %s" % e, file=sys.stderr)
        return 1
    load.append(os.getloadavg()[0])
    med = lambda rows, k: statistics.median(x[k] for x in rows)
    print("GPT-2 small (%s parameters), T 256, batch 1, %d thread(s); median of %d steps, %d "
          "round(s); load average %.1f at the start, %.1f at the end; torch %s"
          % (res[a.policies[0]]["amp"][0]["params"], a.threads, a.steps, a.rounds, load[0],
             load[1], version or "not run (%s)" % why))
    print()
    print("| policy | amptrain CPU ms/step | torch CPU ms/step | torch/amptrain (CPU) | amptrain "
          "wall ms | torch wall ms | amptrain peak RSS MiB | arenas MiB | RSS/arenas | "
          "activations MiB | torch peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for p in a.policies:
        am, tr = res[p]["amp"], res[p]["torch"]
        mib = lambda b: b / 2**20
        tc = "%.0f" % med(tr, "cpu_ms") if tr else "n/a"
        ratio = "%.2f" % (med(tr, "cpu_ms") / med(am, "cpu_ms")) if tr else "n/a"
        tw = "%.0f" % med(tr, "wall_ms") if tr else "n/a"
        trss = "%.0f" % mib(med(tr, "rss")) if tr else "n/a"
        print("| %s | %.0f | %s | %s | %.0f | %s | %.0f | %.0f | %.2f | %.0f | %s |"
              % (p, med(am, "cpu_ms"), tc, ratio, med(am, "wall_ms"), tw, mib(med(am, "rss")),
                 mib(med(am, "arenas")), med(am, "rss") / med(am, "arenas"),
                 mib(med(am, "activations")), trss))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
