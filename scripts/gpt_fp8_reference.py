#!/usr/bin/env python3
"""Writes tests/data/gpt_fp8_reference.safetensors: the tiny GPT of
scripts/gpt_reference.py (same initial weights and batch, read back from
tests/data/gpt_reference.safetensors) trained 4 AdamW steps under the `fp8`
policy, for tests/test_gpt_fp8_reference.c. Run by hand, never by CI:

    python3 -m venv venv && venv/bin/pip install torch
    venv/bin/python scripts/gpt_fp8_reference.py [--out tests/data/gpt_fp8_reference.safetensors]

The policy, as docs/fp8.md defines it: bf16 autocast everywhere (as
gpt_reference.py's bf16 run), and every Linear but lm_head (kept bf16 by
`layer.lm_head = bf16`) with FP8 operands, delayed scaling, the hybrid
format (E4M3 input and weight, E5M2 output gradient), amax_history_len 4,
amax_compute max, margin 0:
  quantize q = float8(clamp(v * s, -max, max))   (the product in FP32)
  dequantize  = float(q) * float32(1 / s)
  forward     y = deq(q(x, s_x)) . deq(q(W, s_w))^T + b, rounded to bf16
              (x: the layer's bf16 input; W: the FP32 master weights;
              b: the bf16 working bias)
  backward    dY (bf16, as the output's gradient is stored) -> q(dY, s_g);
              dX = deq(qdY) . deq(qW) in FP32 (rounded to bf16 where x is);
              dW = deq(qdY)^T . deq(qX), rounded to bf16; db = sum of dY,
              rounded to bf16.
Step 0 quantizes with every scale 1. After each step every operand's amax
of that step (max |x|, max |W|, max |dY|) enters its history, and the next
scale is max_of_format / max(history), the previous scale kept when that
amax is 0.

The file holds "fp8.losses" [4], per step t and operand
"step<t>.<layer>.<input|weight|grad_output>.scale" (the scale step t
quantized with) and ".amax" (what step t saw), and every parameter's
gradient at step 0 and step 3 ("step0.grad.<name>", "step3.grad.<name>").
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_reference as ref  # noqa: E402

STEPS, HISTORY = 4, 4
E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
FMAX = {E4M3: 448.0, E5M2: 57344.0}
ROLES = ("input", "weight", "grad_output")


class Slot:
    def __init__(self, fmt):
        self.fmt, self.scale, self.history, self.amax = fmt, 1.0, [], 0.0

    def see(self, v):
        self.amax = max(self.amax, v.abs().max().item())

    def end_step(self):
        self.history = ([self.amax] + self.history)[:HISTORY]
        a = max(self.history)
        if a > 0:  # the scale is an FP32 value
            self.scale = torch.tensor(FMAX[self.fmt] / a, dtype=torch.float64).float().item()
        self.amax = 0.0


def fake(v, slot):
    """deq(q(v)): FP32 in, FP32 out."""
    s = torch.tensor(slot.scale, dtype=torch.float32)
    m = FMAX[slot.fmt]
    q = (v * s).clamp(-m, m).to(slot.fmt).float()
    return q * (1.0 / s)


class Fp8Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, slots):
        sx, sw, sg = slots
        sx.see(x)
        sw.see(w)
        qx, qw = fake(x, sx), fake(w, sw)
        ctx.save_for_backward(qx, qw)
        ctx.sg, ctx.has_b = sg, b is not None
        y = qx @ qw.t()
        return y + b if b is not None else y

    @staticmethod
    def backward(ctx, dy):
        qx, qw = ctx.saved_tensors
        ctx.sg.see(dy)
        qdy = fake(dy, ctx.sg)
        rows = qdy.reshape(-1, qdy.shape[-1])
        dx = qdy @ qw
        dw = (rows.t() @ qx.reshape(-1, qx.shape[-1])).to(torch.bfloat16).float()
        db = dy.reshape(-1, dy.shape[-1]).sum(0).to(torch.bfloat16).float() if ctx.has_b else None
        return dx, dw, db, None


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default=os.path.join(here, "..", "tests", "data", "gpt_reference.safetensors"))
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "data", "gpt_fp8_reference.safetensors"))
    args = ap.parse_args()
    from safetensors.torch import load_file

    init = load_file(args.ref)
    vocab = init["transformer.wte.weight"].shape[0]
    model = ref.GPT(vocab)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(init[n])
    x, y = init["ref.x"].long(), init["ref.y"].long()

    names = {}
    for i, blk in enumerate(model.transformer.h):
        for lname, lin in (("attn.c_attn", blk.attn.c_attn), ("attn.c_proj", blk.attn.c_proj),
                           ("mlp.c_fc", blk.mlp.c_fc), ("mlp.c_proj", blk.mlp.c_proj)):
            names[id(lin)] = f"transformer.h.{i}.{lname}"
    slots = {n: (Slot(E4M3), Slot(E4M3), Slot(E5M2)) for n in names.values()}
    bf16 = ref.Cast(torch.bfloat16)
    plain_linear = ref.linear

    def linear(cast, xin, lin):
        if id(lin) not in names:  # lm_head: bf16
            return plain_linear(cast, xin, lin)
        b = None if lin.bias is None else cast(lin.bias)
        return cast(Fp8Linear.apply(cast(xin), lin.weight, b, slots[names[id(lin)]]))

    params = list(model.named_parameters())
    decay = [p for n, p in params if p.dim() >= 2]
    no_decay = [p for n, p in params if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": ref.WD},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=ref.LR, betas=ref.BETAS, eps=ref.EPS)
    out, losses = [], []
    _, bf16_loss = model(x, y, bf16)
    ref.linear = linear
    for t in range(STEPS):
        for n, ss in slots.items():
            for role, s in zip(ROLES, ss):
                out.append((f"step{t}.{n}.{role}.scale", torch.tensor([s.scale])))
        opt.zero_grad(set_to_none=True)
        _, loss = model(x, y, bf16)
        loss.backward()
        if t in (0, STEPS - 1):
            out += [(f"step{t}.grad.{n}", p.grad.detach().clone()) for n, p in params]
        opt.step()
        losses.append(loss.item())
        for n, ss in slots.items():
            for role, s in zip(ROLES, ss):
                out.append((f"step{t}.{n}.{role}.amax", torch.tensor([s.amax])))
                s.end_step()
    out.append(("fp8.losses", torch.tensor(losses)))
    print("fp8 losses:", " ".join(f"{v:.7f}" for v in losses), f"(bf16 step 0: {bf16_loss.item():.7f})")
    g0 = {n: t for n, t in out if n.startswith("step0.grad.")}
    bf = init
    worst = max(((g0["step0.grad." + n] - bf["bf16.grad." + n]).abs().max() /
                 bf["bf16.grad." + n].abs().max()).item() for n, _ in params)
    print(f"fp8 vs bf16 at step 0: loss {losses[0] - bf16_loss.item():+.3e}, "
          f"worst gradient difference {worst:.3e} of the tensor's largest |bf16|")
    meta = {"torch": torch.__version__, "steps": str(STEPS), "amax_history_len": str(HISTORY),
            "recipe": "delayed", "format": "hybrid", "keep_bf16": "lm_head"}
    ref.write_safetensors(args.out, out, meta)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")


if __name__ == "__main__":
    main()
