#!/usr/bin/env python3
"""Writes tests/data/gpt_fp8_reference.safetensors: the GPT of
scripts/gpt_reference.py (same weights, same batch: both read from
tests/data/gpt_reference.safetensors) under amptrain's `fp8` policy, for
tests/test_gpt_fp8_reference.c. Run by hand, never by CI.

The policy (amptrain's fp8 plugin with these keys): everything as bf16
autocast (gpt_reference.py's Cast(torch.bfloat16)), plus every Linear but
lm_head (c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj; `layer.lm_head = bf16`)
runs its GEMM on FP8 operands scaled per tensor: recipe delayed, format
hybrid (E4M3 for the input and the weight, E5M2 for the output gradient),
amax_history_len 4, amax_compute max, margin 0. With
  quant(v, s, fmt) = clamp(v * s in FP32, -max, max).to(float8 fmt)
  deq(q, s)        = q.float() * float32(1 / s)
a Linear y = x W^T + b does
  forward:  qX = quant(x (its bf16 values), s_x, E4M3), qW = quant(master W
            (FP32), s_w, E4M3); y = deq(qX) deq(qW)^T + b (FP32, b in bf16),
            rounded to bf16 (the Cast after it).
  backward: dY arrives rounded to bf16 (the Cast's backward);
            qdY = quant(dY, s_g, E5M2); dX = deq(qdY) deq(qW) (FP32, the Cast
            before it rounds it to bf16); dW = deq(qdY)^T deq(qX) rounded to
            bf16; db = column sums of dY (rounded to bf16 by the bias' Cast).
Each (layer, role) slot records the amax of the tensor it quantized (the bf16
input, the FP32 master weight, the bf16 output gradient). A step's scales are
fixed for the whole step; at its end each slot pushes its amax into a history
of 4 and takes scale = float32(max / max(history)) (448 for E4M3, 57344 for
E5M2), keeping the previous scale when that amax is 0 or not finite. The
first step's scales are 1.

It runs 4 AdamW steps on the batch (gpt_reference.py's optimizer: lr 1e-3,
betas 0.9/0.99, eps 1e-8, weight decay 0.1 on the 2-D tensors only) and
writes, all F32:
  fp8.losses                       [4] the loss of each step
  fp8.scale.<layer>.<role>         [4] the scale each step used
  fp8.amax.<layer>.<role>          [4] the amax each step saw
      (<role>: input, weight, grad_output; <layer>: amptrain's layer name,
      e.g. transformer.h.0.attn.c_attn)
  fp8.step0.grad.<param>           every gradient of step 0
  fp8.last.start.<param>           the weights the last step started from
  fp8.last.grad.<param>            every gradient of the last step
  fp8.final.<param>                the weights after the last step
It also prints how far step 0 is from the plain bf16 policy (the loss and
each gradient), the sign that FP8 rounds.

Regenerate (CPU is enough; a few seconds after the import). The venv can sit
anywhere, e.g. beside the checkout:
    python3 -m venv venv-torch && venv-torch/bin/pip install torch safetensors
    venv-torch/bin/python scripts/gpt_fp8_reference.py \\
        [--ref tests/data/gpt_reference.safetensors] \\
        [--out tests/data/gpt_fp8_reference.safetensors]
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_reference as gr  # noqa: E402  (the model, the casts, the writer)

STEPS, HISTORY = 4, 4
ROLES = ("input", "weight", "grad_output")
FORMATS = {"input": (torch.float8_e4m3fn, 448.0), "weight": (torch.float8_e4m3fn, 448.0),
           "grad_output": (torch.float8_e5m2, 57344.0)}
FP8_LINEARS = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")


class Slot:
    """One (layer, role): the scale this step quantizes with, the amax seen."""

    def __init__(self, role):
        self.dtype, self.fmax = FORMATS[role]
        self.scale = np.float32(1.0)
        self.history = []  # newest last, at most HISTORY
        self.amax = np.float32(0.0)  # this step's (max over the step's tensors)
        self.scales, self.amaxes = [], []

    def quantize(self, v):
        """Dequantized values of quant(v, scale): the codes, widened."""
        self.amax = max(self.amax, np.float32(v.abs().max().item()))
        s = torch.tensor(self.scale, dtype=torch.float32)
        q = (v * s).clamp(-self.fmax, self.fmax).to(self.dtype)
        inv = torch.tensor(np.float32(1.0) / self.scale, dtype=torch.float32)
        return q.to(torch.float32) * inv

    def step_end(self):
        self.scales.append(float(self.scale))
        self.amaxes.append(float(self.amax))
        self.history = (self.history + [float(self.amax)])[-HISTORY:]
        amax = max(self.history)  # amax_compute = max
        if amax > 0 and np.isfinite(amax):
            self.scale = np.float32(self.fmax / amax)  # margin 0; double, then FP32
        self.amax = np.float32(0.0)


class Fp8LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, slots):
        x2 = x.reshape(-1, x.shape[-1])
        xd, wd = slots["input"].quantize(x2), slots["weight"].quantize(w)
        ctx.save_for_backward(xd, wd)
        ctx.slots, ctx.shape, ctx.has_bias = slots, x.shape, b is not None
        return gr.gemm_bias(xd, wd, b, x.shape[:-1])

    @staticmethod
    def backward(ctx, dy):
        xd, wd = ctx.saved_tensors
        dy2 = dy.reshape(-1, dy.shape[-1])
        gd = ctx.slots["grad_output"].quantize(dy2)
        dx = gr.gemm(gd, wd).reshape(ctx.shape)
        dw = gr.gemm(gd.t(), xd).to(torch.bfloat16).float()  # the param dtype's rounding
        db = dy2.sum(0) if ctx.has_bias else None  # dY's bf16 values, not the codes
        return dx, dw, db, None


class Fp8Cast(gr.Cast):
    """bf16 autocast, with the FP8 GEMM on the Linears that have slots."""

    def __init__(self, slots_of):
        super().__init__(torch.bfloat16)
        self.slots_of = slots_of  # id(nn.Linear) -> {role: Slot}

    def linear(self, x, lin):
        slots = self.slots_of.get(id(lin))
        if slots is None:  # lm_head: layer.lm_head = bf16
            if gr.GEMM_DTYPE[0] == torch.float32:
                return super().linear(x, lin)
            return self(gr.gemm(self(x), self(lin.weight).t()))  # no bias (tied head)
        b = None if lin.bias is None else self(lin.bias)
        return self(Fp8LinearFn.apply(self(x), lin.weight, b, slots))


def run(ref, verbose):
    """The 4 fp8 steps from the reference's weights and batch: [(name, tensor)]."""
    model, params, x, y = gr.model_from(ref)
    slots_of, layers = {}, []
    for name, mod in model.named_modules():
        if any(name.endswith(s) for s in FP8_LINEARS):
            slots_of[id(mod)] = {r: Slot(r) for r in ROLES}
            layers.append((name, slots_of[id(mod)]))
    cast = Fp8Cast(slots_of)
    # the plain bf16 policy at the same weights: how far FP8 moves step 0
    _, l16, g16 = gr.grads_under(model, x, y, gr.Cast(torch.bfloat16), 1.0)

    opt = gr.adamw(params)
    losses, out = [], []
    for step in range(STEPS):
        if step == STEPS - 1:
            out += [("fp8.last.start." + n, p.detach().clone()) for n, p in params]
        opt.zero_grad(set_to_none=True)
        _, loss = model(x, y, cast)
        loss.backward()
        grads = {n: p.grad.detach().clone() for n, p in params}
        if step == 0:
            out += [("fp8.step0.grad." + n, grads[n]) for n, _ in params]
            rel = abs(loss.item() - l16.item()) / abs(l16.item())
            worst = max((grads[n] - g16[n]).abs().max().item() / g16[n].abs().max().item()
                        for n, _ in params)
            if verbose:
                print(f"step 0: fp8 loss {loss.item():.7f}, bf16 {l16.item():.7f} (rel diff {rel:.3e})")
                for n, _ in params:
                    d = (grads[n] - g16[n]).abs().max().item() / g16[n].abs().max().item()
                    print(f"  grad {n}: max|fp8 - bf16| / max|bf16| = {d:.3e}")
                print(f"  worst gradient tensor: {worst:.3e}")
        if step == STEPS - 1:
            out += [("fp8.last.grad." + n, grads[n]) for n, _ in params]
        opt.step()
        losses.append(loss.item())
        for _, slots in layers:
            for r in ROLES:
                slots[r].step_end()
    if verbose:
        print("fp8 AdamW losses:", " ".join(f"{v:.7f}" for v in losses))
    for name, slots in layers:
        for r in ROLES:
            if verbose:
                print(f"  {name}.{r}: scales {slots[r].scales} amax {slots[r].amaxes}")
            out += [(f"fp8.scale.{name}.{r}", torch.tensor(slots[r].scales, dtype=torch.float64)),
                    (f"fp8.amax.{name}.{r}", torch.tensor(slots[r].amaxes, dtype=torch.float64))]
    out += [("fp8.losses", torch.tensor(losses, dtype=torch.float64))]
    out += [("fp8.final." + n, p.detach()) for n, p in params]
    return out


def kind_of(name):
    """How --order-noise reports a tensor: the gradients and weights against
    their largest value, the losses, scales and amaxes element by element."""
    kind = name.split(".")[1] if not name.startswith("fp8.losses") else "losses"
    return kind, kind not in ("step0", "last", "final")


def main():
    meta = {"steps": str(STEPS), "recipe": "delayed", "format": "hybrid",
            "amax_history_len": str(HISTORY), "amax_compute": "max", "margin": "0",
            "bf16_layers": "lm_head"}
    gr.policy_main("gpt_fp8_reference.safetensors", run, meta, kind_of, "FP8")


if __name__ == "__main__":
    main()
