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

Three models (--models, default all three); the MLP and the GPT are
bench_step's, the CNN bench_cnn's:

  mlp  Linear-ReLU-...-Linear, cross-entropy, SGD with momentum 0.9, lr 0.01,
       on random data;
  gpt  nanoGPT's model.py at the shakespeare_char shape (4 layers, 4 heads,
       128 wide, block 64, batch 12, vocab 65, no biases): embeddings,
       pre-LN blocks with causal self-attention (F.scaled_dot_product_attention,
       is_causal, as nanoGPT runs it) and a tanh-GELU MLP, ln_f, the LM head
       tied to the token embedding, cross-entropy; AdamW (lr 1e-3, betas 0.9,
       0.99, weight decay 0.1 on the 2-D weights only) with the gradient norm
       clipped at 1.0, as configs/gpt_shakespeare_*.ini train it; random
       tokens;
  cnn  the configs/cnn_fashion_*.ini network (conv(32,3,pad=1) bn relu
       pool(2) conv(64,3,pad=1) bn relu pool(2) fc(128) relu fc) on random
       1x28x28 images, batch 128, SGD with momentum 0.9, lr 0.01.

It prints one table per model: per policy the median over rounds of each
side's median step time and median process CPU time per step, and the
medians over rounds of the ratios torch/amptrain (above 1: amptrain is
faster) of both.

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
    p.add_argument("--models", default="mlp,gpt,cnn",
                   help="comma-separated: mlp, gpt, cnn (default: all three)")
    p.add_argument("--bench-cnn", default=os.path.join(here, "..", "build", "bench", "bench_cnn"),
                   help="path to amptrain's bench_cnn (default: build/bench/bench_cnn)")
    p.add_argument("--features", type=int, default=784, help="mlp: input width")
    p.add_argument("--hidden", default="1024,1024", help="mlp: hidden widths")
    p.add_argument("--classes", type=int, default=10, help="mlp: output width")
    p.add_argument("--batch", type=int, default=0,
                   help="rows per step (default: mlp 256, gpt 12 windows)")
    p.add_argument("--n-layer", type=int, default=4, help="gpt: layers")
    p.add_argument("--n-head", type=int, default=4, help="gpt: heads")
    p.add_argument("--n-embd", type=int, default=128, help="gpt: width")
    p.add_argument("--block-size", type=int, default=64, help="gpt: context")
    p.add_argument("--vocab", type=int, default=65,
                   help="gpt: vocabulary (bench_step's is the shipped corpus's, 65)")
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
    a.models = [x for x in a.models.split(",") if x]
    for x in a.models:
        if x not in ("mlp", "gpt", "cnn"):
            p.error("--models: unknown model %r (mlp, gpt, cnn)" % x)
    if a.n_embd % a.n_head:
        p.error("--n-embd must split into --n-head heads")
    for x in a.policies:
        if x not in ("fp32", "bf16", "fp16"):
            p.error("--policies: unknown policy %r (fp32, bf16, fp16)" % x)
    if a.threads <= 0:
        env = os.environ.get("AMPTRAIN_THREADS")
        a.threads = int(env) if env else (os.cpu_count() or 1)
    if min(a.steps, a.rounds) < 1 or a.batch < 0 or a.warmup < 0:
        p.error("--steps, --rounds >= 1, --batch, --warmup >= 0")
    return a


AMP_LABEL = {"fp32": "fp32", "bf16": "bf16+none", "fp16": "fp16+dynamic"}


def batch_of(a, model):
    return a.batch or {"gpt": 12, "cnn": 128}.get(model, 256)


def amptrain_cnn_ms(a, policy, env):
    cmd = [a.bench_cnn, "--policy", policy, "--steps", str(a.steps), "--warmup", str(a.warmup),
           "--batch", str(batch_of(a, "cnn"))]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("bench_cnn failed (%d): %s" % (r.returncode, r.stderr.strip()))
    ms = cpu = None
    kernels = ""
    for line in r.stdout.splitlines():
        m = re.match(r"\|\s*%s\s*\|\s*([0-9.]+)\s*\|\s*([0-9.]+)\s*\|" % re.escape(policy), line)
        if m:
            ms, cpu = float(m.group(1)), float(m.group(2))
        if line.startswith("amptrain path:"):
            kernels = line.split(":", 1)[1].strip()
    if ms is None:
        raise RuntimeError("no %s row in bench_cnn's output:\n%s" % (policy, r.stdout))
    return ms, cpu, kernels


def amptrain_ms(a, model, policy):
    env = dict(os.environ, AMPTRAIN_THREADS=str(a.threads))
    if model == "cnn":
        return amptrain_cnn_ms(a, policy, env)
    cmd = [a.bench_step, "--model", model, "--no-floor", "--policy", policy, "--steps",
           str(a.steps), "--warmup", str(a.warmup), "--batch", str(batch_of(a, model))]
    if model == "gpt":
        cmd += ["--n-layer", str(a.n_layer), "--n-head", str(a.n_head), "--n-embd",
                str(a.n_embd), "--block-size", str(a.block_size),
                "--activation", "gelu_tanh"]  # the tanh GELU of make_gpt, like for like
    else:
        cmd += ["--hidden", a.hidden, "--features", str(a.features), "--classes", str(a.classes)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("bench_step failed (%d): %s" % (r.returncode, r.stderr.strip()))
    kernels = ""
    ms = cpu = None
    for line in r.stdout.splitlines():
        m = re.match(r"\|\s*%s\s*\|\s*([0-9.]+)\s*\|" % re.escape(AMP_LABEL[policy]), line)
        if m:
            ms = float(m.group(1))
            cols = [c.strip() for c in line.strip().strip("|").split("|")]
            cpu = float(cols[7]) if len(cols) > 7 else None  # step cpu ms
        if line.startswith(AMP_LABEL[policy] + " kernels:"):
            kernels = line.split(":", 1)[1].strip()
        if model == "gpt" and line.startswith("bench_step: GPT"):
            v = re.search(r"vocab (\d+)", line)
            if v and int(v.group(1)) != a.vocab:
                raise RuntimeError("bench_step's GPT has vocab %s, torch's %d (--vocab)"
                                   % (v.group(1), a.vocab))
    if ms is None:
        raise RuntimeError("no %s row in bench_step's output:\n%s" % (policy, r.stdout))
    return ms, cpu, kernels


def make_gpt(torch, a):
    """nanoGPT's GPT (model.py) without dropout or biases, tanh GELU."""
    nn, F = torch.nn, torch.nn.functional
    C, nh = a.n_embd, a.n_head

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(C, 3 * C, bias=False)
            self.c_proj = nn.Linear(C, C, bias=False)

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, T, nh, C // nh).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C, bias=False)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(C, bias=False)
            self.mlp = nn.Sequential(nn.Linear(C, 4 * C, bias=False), nn.GELU(approximate="tanh"),
                                     nn.Linear(4 * C, C, bias=False))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(a.vocab, C)
            self.wpe = nn.Embedding(a.block_size, C)
            self.h = nn.ModuleList(Block() for _ in range(a.n_layer))
            self.ln_f = nn.LayerNorm(C, bias=False)
            self.lm_head = nn.Linear(C, a.vocab, bias=False)
            self.lm_head.weight = self.wte.weight  # tied

        def forward(self, idx, targets):
            T = idx.shape[1]
            x = self.wte(idx) + self.wpe(torch.arange(T))
            for b in self.h:
                x = b(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    return GPT()


def make_cnn(torch):
    """The configs/cnn_fashion_*.ini network, PyTorch's layers."""
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


class TorchStep:
    def __init__(self, torch, a, model, policy):
        self.torch, self.policy, self.model_name = torch, policy, model
        nn = torch.nn
        torch.manual_seed(1)
        batch = batch_of(a, model)
        if model == "gpt":
            self.model = make_gpt(torch, a)
            decay = [p for p in self.model.parameters() if p.dim() >= 2]
            other = [p for p in self.model.parameters() if p.dim() < 2]
            self.opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                          {"params": other, "weight_decay": 0.0}],
                                         lr=1e-3, betas=(0.9, 0.99), eps=1e-8)
            self.x = torch.randint(0, a.vocab, (batch, a.block_size))
            self.y = torch.randint(0, a.vocab, (batch, a.block_size))
            self.clip = 1.0
        elif model == "cnn":
            self.model = make_cnn(torch)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
            self.x = torch.randn(batch, 1, 28, 28)
            self.y = torch.randint(0, 10, (batch,))
            self.clip = None
        else:
            widths = [a.features] + a.hidden_list + [a.classes]
            layers = []
            for i, (w_in, w_out) in enumerate(zip(widths[:-1], widths[1:])):
                layers.append(nn.Linear(w_in, w_out))
                if i < len(widths) - 2:
                    layers.append(nn.ReLU())
            self.model = nn.Sequential(*layers)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
            self.x = torch.randn(batch, a.features)
            self.y = torch.randint(0, a.classes, (batch,))
            self.clip = None
        self.loss = nn.CrossEntropyLoss()
        self.dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[policy]
        self.scaler = torch.amp.GradScaler("cpu") if policy == "fp16" else None

    def forward(self):
        if self.model_name == "gpt":
            return self.model(self.x, self.y)
        return self.loss(self.model(self.x), self.y)

    def step(self):
        torch = self.torch
        self.opt.zero_grad(set_to_none=True)
        if self.dtype is None:
            loss = self.forward()
        else:
            with torch.autocast("cpu", dtype=self.dtype):
                loss = self.forward()
        if self.scaler:
            self.scaler.scale(loss).backward()
            if self.clip:
                self.scaler.unscale_(self.opt)
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            loss.backward()
            if self.clip:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
            self.opt.step()
        return loss.detach().item()


def torch_ms(torch, a, model, policy):
    s = TorchStep(torch, a, model, policy)
    for _ in range(a.warmup):
        s.step()
    t, c = [], []
    for _ in range(a.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        s.step()
        t.append((time.perf_counter() - t0) * 1e3)
        c.append((time.process_time() - c0) * 1e3)
    return statistics.median(t), statistics.median(c)


def describe(a, model):
    if model == "gpt":
        return ("GPT %d layers, %d heads, %d wide, block %d, vocab %d, batch %d, AdamW + clip"
                % (a.n_layer, a.n_head, a.n_embd, a.block_size, a.vocab, batch_of(a, model)))
    if model == "cnn":
        return ("CNN (configs/cnn_fashion_*.ini) on 1x28x28, batch %d, SGD momentum"
                % batch_of(a, model))
    return "MLP %d-%s-%d, batch %d, SGD momentum" % (a.features, a.hidden.replace(",", "-"),
                                                    a.classes, batch_of(a, model))


def main(argv):
    a = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("compare_torch: PyTorch is not installed (pip install torch); nothing to compare",
              file=sys.stderr)
        return 3
    torch.set_num_threads(a.threads)
    for m, exe, opt in (("mlp", a.bench_step, "--bench-step"), ("gpt", a.bench_step, "--bench-step"),
                        ("cnn", a.bench_cnn, "--bench-cnn")):
        if m in a.models and not os.access(exe, os.X_OK):
            print("compare_torch: %s is not an executable (build first, or %s)" % (exe, opt),
                  file=sys.stderr)
            return 2
    fp16_ok = True
    fp16_why = ""
    try:
        small = argparse.Namespace(**dict(vars(a), steps=1, warmup=0, batch=2))
        for m in a.models:
            torch_ms(torch, small, m, "fp16")
    except Exception as e:  # this torch has no CPU fp16 autocast/GradScaler
        fp16_ok = False
        fp16_why = str(e).splitlines()[0][:80]
    print("compare_torch: %d thread(s) each; %d rounds of (amptrain, torch) per model and policy, "
          "each the median of %d steps after %d warm-up"
          % (a.threads, a.rounds, a.steps, a.warmup))
    print("torch %s (%s); amptrain %s" % (torch.__version__, torch.backends.cpu.get_cpu_capability()
                                          if hasattr(torch.backends, "cpu") else "?", a.bench_step))
    res = {(m, p): {"amp": [], "cpu": [], "torch": [], "tcpu": [], "ratio": [], "cratio": [],
                    "kernels": ""}
           for m in a.models for p in a.policies}
    try:
        for r in range(a.rounds):
            for m in a.models:
                for p in a.policies:
                    am, cpu, kern = amptrain_ms(a, m, p)
                    d = res[(m, p)]
                    d["amp"].append(am)
                    d["cpu"].append(cpu)
                    d["kernels"] = kern
                    if p == "fp16" and not fp16_ok:
                        continue
                    tm, tc = torch_ms(torch, a, m, p)
                    d["torch"].append(tm)
                    d["tcpu"].append(tc)
                    d["ratio"].append(tm / am)
                    if cpu:
                        d["cratio"].append(tc / cpu)
            print("  round %d/%d done" % (r + 1, a.rounds), file=sys.stderr)
    except RuntimeError as e:
        print("compare_torch: %s" % e, file=sys.stderr)
        return 1
    for m in a.models:
        print()
        print(describe(a, m))
        print()
        print("| policy | amptrain ms | torch ms | torch/amptrain | min-max | "
              "amptrain CPU ms | torch CPU ms | CPU torch/amptrain |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for p in a.policies:
            d = res[(m, p)]
            am = statistics.median(d["amp"])
            ac = statistics.median(d["cpu"]) if None not in d["cpu"] else float("nan")
            if d["torch"]:
                tm, ra = statistics.median(d["torch"]), statistics.median(d["ratio"])
                tc = statistics.median(d["tcpu"])
                cr = statistics.median(d["cratio"]) if d["cratio"] else float("nan")
                print("| %s | %.3f | %.3f | %.2f | %.2f-%.2f | %.3f | %.3f | %.2f |"
                      % (p, am, tm, ra, min(d["ratio"]), max(d["ratio"]), ac, tc, cr))
            else:
                print("| %s | %.3f | n/a | n/a (%s) | | %.3f | n/a | n/a |" % (p, am, fp16_why, ac))
        if "fp32" in a.policies:
            # per round (the policies of a round ran back to back), then the median
            fp32 = res[(m, "fp32")]["amp"]
            print()
            print("amptrain step / amptrain fp32 step (median of the rounds' ratios): " + ", ".join(
                "%s %.2f" % (p, statistics.median(x / f for x, f in zip(res[(m, p)]["amp"], fp32)))
                for p in a.policies))
            fcpu = res[(m, "fp32")]["cpu"]
            if all(x is not None for p in a.policies for x in res[(m, p)]["cpu"]):
                print("the same with amptrain's CPU time per step (bench_step's step cpu ms): " +
                      ", ".join("%s %.2f" % (p, statistics.median(
                          x / f for x, f in zip(res[(m, p)]["cpu"], fcpu))) for p in a.policies))
        for p in a.policies:
            print("amptrain %s kernels: %s" % (p, res[(m, p)]["kernels"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
