#!/usr/bin/env python3
"""Writes tests/data/hf_train_reference.json: what PyTorch + transformers
compute when they train the tiny Hugging Face fixtures (tests/data/hf_gpt2,
tests/data/hf_llama) on amptrain's batches, for tests/hf/train_reference.sh.

Run by hand, never by CI, in a venv with PyPI's packages (nothing is
downloaded from a hub):

    python3 -m venv /tmp/hfvenv
    /tmp/hfvenv/bin/pip install torch transformers safetensors numpy
    /tmp/hfvenv/bin/python scripts/hf_train_reference.py [--out tests/data/hf_train_reference.json]

The run it mirrors is tests/hf/train_ref.ini: [model] init = the folder,
[data] dataset = text on the shipped data/tinyshakespeare.txt, block_size
32 (the folders' n_positions / max_position_embeddings), batch 2, seed 1,
AdamW lr 1e-3, betas 0.9/0.99, eps 1e-8, weight decay 0.1 on the 2-D
tensors only (amptrain's grouping, nanoGPT's), no clipping, no schedule.

The batches are amptrain's: its window batcher (core/data/windows.c, core/util/rng.h)
is written out below: at step s (from 0) the generator is xoshiro256**
seeded by amp_rng_seed_stream(seed, "TXTTRN" ^ s), and each of the batch's
rows starts at amp_rng_below(n_train - T) within the first
n_train = int(0.9 n) characters (ids: the sorted distinct bytes).

Per model it writes:
  - fp32.loss / fp64.loss: the loss of each of 20 AdamW steps (the step's
    forward, before its update), trained in FP32 and in FP64 from the same
    weights on the same batches. The FP64 run is the reference the test
    holds amptrain to; the FP32 run shows how far FP32's rounding alone
    moves a run of these 20 steps (`fp32_vs_fp64`), which is the size of
    the difference another summation order (amptrain's GEMMs, whichever
    kernels OpenBLAS picks for the CPU) may make.
  - weights: after the 20 steps, per tensor (Hugging Face's names and
    layouts, as `amptrain export --hf` writes them): its shape, the FP64
    run's L2 norm and 16 values at evenly spaced flat indices, and the
    largest |FP32 - FP64| over the tensor.
  - RoPE in the FP64 run is computed in FP64 (transformers computes the
    angles in FP32 whatever the model's dtype).
For the Llama it also writes "bf16": the first batch's loss and
gradients under torch.autocast("cpu", torch.bfloat16) (autocast's op
lists: the Linears' GEMMs and the attention in BF16, RMSNorm, softmax and
the loss in FP32; FP32 master weights), and the same FP32 gradients
beside them: per tensor its largest |gradient|, N_GRAD values at evenly
spaced flat indices of each, and the largest |bf16 - fp32| over the
tensor. The test reads amptrain's gradients back from one SGD step at
lr 1 (tests/hf/bf16_step.ini: w - g, one FP32 rounding).

tests/hf/train_reference.sh (ctest hf_train_reference) runs amptrain and
compares; tests/hf/train_compare.py says what and within what. Regenerate
this file when the fixtures, the shipped corpus, amptrain's window batcher
or the configs change.
"""
import argparse
import json
import math
import os

import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM

SEED, B, STEPS = 1, 2, 20
LR, BETAS, EPS, WD = 1e-3, (0.9, 0.99), 1e-8, 0.1
M64 = (1 << 64) - 1
TXTTRN = 0x54585454524E0000
N_SAMPLES = 16
N_GRAD = 64


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return x, z ^ (z >> 31)


class Rng:
    """core/util/rng.h: xoshiro256** seeded through splitmix64."""

    def __init__(self, seed, stream):
        _, ka = splitmix64(seed)
        _, kb = splitmix64(stream ^ 0x5DEECE66D)
        x = ka ^ ((kb * 0xD1342543DE82EF95) & M64)
        self.s = []
        for _ in range(4):
            x, z = splitmix64(x)
            self.s.append(z)

    def next(self):
        s = self.s
        rotl = lambda v, k: ((v << k) | (v >> (64 - k))) & M64
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def below(self, n):
        threshold = (M64 + 1 - n) % n
        while True:
            x = self.next()
            if x >= threshold:
                return x % n


def batches(text_path, T, steps):
    data = open(text_path, "rb").read()
    chars = sorted(set(data))
    ids = {c: i for i, c in enumerate(chars)}
    tokens = torch.tensor([ids[c] for c in data], dtype=torch.long)
    n_train = int(0.9 * len(data))
    out = []
    for step in range(steps):
        rng = Rng(SEED, TXTTRN ^ step)
        starts = [rng.below(n_train - T) for _ in range(B)]
        x = torch.stack([tokens[s:s + T] for s in starts])
        y = torch.stack([tokens[s + 1:s + T + 1] for s in starts])
        out.append((x, y))
    return out, len(chars)


def rope64(model):
    """The rotary embedding's angles in FP64 (transformers takes them in FP32)."""
    rot = model.model.rotary_emb
    inv = 1.0 / (rot.config.rope_theta if hasattr(rot.config, "rope_theta") else
                 rot.config.rope_parameters["rope_theta"]) ** (
        torch.arange(0, rot.inv_freq.numel() * 2, 2, dtype=torch.float64) / (rot.inv_freq.numel() * 2))

    def forward(x, position_ids):
        freqs = position_ids[:, :, None].double() * inv[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    rot.forward = forward


def train(folder, dtype, data, steps):
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).to(dtype)
    model.train()  # dropout is 0 in the fixtures
    if dtype == torch.float64 and model.config.model_type == "llama":
        rope64(model)
    params = dict(model.named_parameters())
    decay = [p for p in params.values() if p.dim() >= 2]
    no_decay = [p for p in params.values() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": WD},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=LR, betas=BETAS, eps=EPS)
    losses = []
    for x, y in data[:steps]:
        opt.zero_grad(set_to_none=True)
        logits = model(x).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {n: p.detach().clone() for n, p in model.state_dict().items()}


def spread(n, k):
    return [round(i * (n - 1) / (k - 1)) for i in range(k)]


def grads(folder, x, y, autocast):
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        logits = model(x).logits
    loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1))
    loss.backward()
    return loss.item(), {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def bf16_entry(folder, x, y):
    lb, gb = grads(folder, x, y, True)
    lf, gf = grads(folder, x, y, False)
    out = {"loss": lb, "fp32_loss": lf, "grads": {}}
    for n in sorted(gb):
        a, b = gb[n].reshape(-1).double(), gf[n].reshape(-1).double()
        idx = spread(a.numel(), N_GRAD)
        out["grads"][n] = {"max_abs": float(a.abs().max()), "index": idx,
                           "bf16": [float(a[i]) for i in idx], "fp32": [float(b[i]) for i in idx],
                           "bf16_vs_fp32": float((a - b).abs().max())}
    worst = max(v["bf16_vs_fp32"] / v["max_abs"] for v in out["grads"].values())
    print(f"bf16 autocast: loss {lb:.7f} (fp32 {lf:.7f}); gradients up to {worst:.3g} of a "
          f"tensor's largest from FP32's")
    return out


def weight_stats(w64, w32):
    out = {}
    for n in sorted(w64):
        a, b = w64[n].double(), w32[n].double()
        flat = a.reshape(-1)
        idx = spread(flat.numel(), N_SAMPLES)
        out[n] = {"shape": list(a.shape), "l2": math.sqrt(float((a * a).sum())),
                  "max_abs": float(a.abs().max()), "index": idx,
                  "values": [float(flat[i]) for i in idx],
                  "fp32_vs_fp64": float((a - b).abs().max())}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="tests/data")
    ap.add_argument("--text", default="data/tinyshakespeare.txt")
    ap.add_argument("--out", default="tests/data/hf_train_reference.json")
    args = ap.parse_args()
    torch.set_num_threads(1)
    result = {"script": "scripts/hf_train_reference.py", "torch": torch.__version__,
              "transformers": __import__("transformers").__version__, "steps": STEPS,
              "config": "tests/hf/train_ref.ini", "models": {}}
    for name in ("hf_gpt2", "hf_llama"):
        folder = os.path.join(args.data, name)
        T = json.load(open(os.path.join(folder, "config.json"))).get("n_positions") or \
            json.load(open(os.path.join(folder, "config.json")))["max_position_embeddings"]
        data, vocab = batches(args.text, T, STEPS)
        l32, w32 = train(folder, torch.float32, data, STEPS)
        l64, w64 = train(folder, torch.float64, data, STEPS)
        rel = max(abs(a - b) / b for a, b in zip(l32, l64))
        entry = {"block_size": T, "vocab": vocab,
                 "batch0_x": data[0][0][0, :8].tolist(),
                 "fp32": {"loss": l32}, "fp64": {"loss": l64},
                 "loss_fp32_vs_fp64": rel, "weights": weight_stats(w64, w32)}
        worst = max(v["fp32_vs_fp64"] / v["max_abs"] for v in entry["weights"].values())
        print(f"{name}: loss {l64[0]:.6f} -> {l64[-1]:.6f}; FP32 vs FP64: losses {rel:.3g} relative, "
              f"weights {worst:.3g} of a tensor's largest")
        if name == "hf_llama":
            entry["bf16"] = bf16_entry(folder, data[0][0], data[0][1])
        result["models"][name] = entry
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
