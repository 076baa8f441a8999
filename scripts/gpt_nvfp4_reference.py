#!/usr/bin/env python3
"""Writes tests/data/gpt_nvfp4_reference.safetensors: the GPT of
scripts/gpt_reference.py (same weights, same batch: both read from
tests/data/gpt_reference.safetensors) under amptrain's `nvfp4` policy with
the full recipe, for tests/test_gpt_nvfp4_reference.c. Run by hand, never
by CI; PyTorch is no dependency of the build or the tests.

Regenerate (CPU is enough; a few seconds after the import). Only the
package index is needed, e.g.
    python3 -m venv /tmp/tv && /tmp/tv/bin/pip install torch numpy safetensors
    /tmp/tv/bin/python scripts/gpt_nvfp4_reference.py [--order-noise] \\
        [--ref tests/data/gpt_reference.safetensors] \\
        [--out tests/data/gpt_nvfp4_reference.safetensors]
(The torch wheel's CUDA dependencies are large and unused here. Where they
are unwanted, `pip install --no-deps torch` plus its pure-Python
dependencies (filelock typing-extensions sympy networkx jinja2 fsspec
setuptools) works where torch can load the CUDA runtime libraries; its
import then names any nvidia-* package still missing, to be installed the
same way.) The committed file was made with torch 2.15.0 on x86-64.

The policy (amptrain's nvfp4 plugin with its defaults: weight_blocks = 2d,
hadamard = 1, stochastic_rounding = 1; `layer.transformer.h.1.* = bf16`
and `layer.lm_head = bf16`, the last block and the head kept in BF16 as
configs/gpt_shakespeare_nvfp4.ini keeps them): everything as bf16 autocast
(gpt_reference.py's Cast(torch.bfloat16)), and the four Linears of block 0
(attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj) run their GEMMs in FP32 on
NVFP4 operands, each quantize-dequantized just before the GEMM reads it
(docs/nvfp4-formats.md, written here from that definition):

  S_enc = min(2688 / amax_tensor, FLT_MAX) (1 when amax is 0); S_dec = 1/S_enc
  s_blk = e4m3(min(448, amax_block * (S_enc * fp32(1/6))))   (torch.float8_e4m3fn)
  enc   = min(1 / (float(s_blk) * S_dec), FLT_MAX)
  q     = E2M1(clamp(x * enc, -6, 6)): nearest, ties to the even code; or
          stochastic: up with probability (|v| - lo) / (hi - lo), the
          uniform the top 24 of the element's 32 random bits times 2^-24
  deq   = (e2m1(q) * float(s_blk)) * S_dec               (all FP32)

A Linear y = x W^T + b (x: its input's bf16 values, W: the FP32 master):
  forward:  y = deq(x in 1x16 blocks along in) deq(W in 16x16 tiles)^T + b
            (FP32; b in bf16), rounded to bf16;
  backward: dY arrives rounded to bf16;
            dW = deq(sr(RHT(dY)))^T deq(RHT(x)), both in 1x16 blocks down
                 the columns (along the rows, dW's reduction), rounded to bf16;
            dX = deq(sr(dY in 1x16 blocks along out)) deq(W's tiles) (FP32,
                 rounded to bf16 where the Cast before it rounds);
            db = column sums of dY's bf16 values, rounded to bf16.
  RHT: each group of 16 rows is multiplied by H S / 4 (H the 16x16
  Sylvester Hadamard matrix, S = diag of signs: bit k of the step's 16
  sign bits set negates row k of the group), computed as the butterflies
  of the fast Walsh-Hadamard transform in natural order, as nvfp4.h does
  (the same FP32 additions in the same order: bit for bit).
  Random bits: splitmix64 (Steele, Lea & Flood), ported with integer ops:
    key      = mix(mix(mix(seed + G) ^ (step + C1)) ^ (tensor + C2))
    bits(j)  = mix(key + (j + 1) * G) >> 32        (j: the element's index
               in the row-major [rows, cols] operand)
    signs    = mix(tensor_key(seed, step, 0x484144414d415244)) & 0xffff
  tensor = (slot << 32) | call: slot the operand's index among the model's
  NVFP4 operands (layer-major, roles input, weight, grad_output: block 0's
  c_attn 0..2, c_proj 3..5, c_fc 6..8, mlp.c_proj 9..11), call its
  stochastic quantizes so far in the step (dW's dY 0, dX's dY 1). The
  run's seed is 1337; step counts optimizer steps finished.
The attention's softmax backward is amptrain's (KitSoftmax below): it
reads the probabilities the layer saved in bf16, where autograd would read
its FP32 output; with the attention near uniform at initialisation that
moves the gradients of q and k, and through them the NVFP4 layers' dY, by
a few bf16 steps, and then stochastic rounding's choices.

It runs 2 AdamW steps on the batch (gpt_reference.py's optimizer: lr 1e-3,
betas 0.9/0.99, eps 1e-8, weight decay 0.1 on the 2-D tensors only) and
writes, all F32:
  nvfp4.losses                      [2] the loss of each step
  nvfp4.amax.<layer>.<role>         [2] the tensor amax each step's first
      quantize of that operand saw (input: the forward's x; weight: the
      master; grad_output: dY after the transform, the dW GEMM's)
  nvfp4.step<i>.grad.<param>        every gradient of step i
  nvfp4.step1.start.<param>         the weights step 1 started from
  nvfp4.final.<param>               the weights after the last step
It also prints how far step 0 is from the plain bf16 policy, the sign that
NVFP4 rounds, and with --order-noise how far running every Linear's GEMM
in float64 moves each measure (what a GEMM that sums in another order can
move them by: an E2M1 code that lands on its neighbour).
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_reference as gr  # noqa: E402  (the model, the casts, the writer)
from nvfp4_reference import e2m1_codes, e2m1_value  # noqa: E402  (E2M1 from its definition)

STEPS, SEED = 2, 1337
ROLES = ("input", "weight", "grad_output")
NV_LINEARS = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")
NV_BLOCK = 0  # transformer.h.1.* and lm_head stay bf16
F32 = torch.float32
FLT_MAX = torch.finfo(F32).max
GRID = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]

# ---- splitmix64, as nvfp4.h (uint64 arithmetic wraps mod 2^64) ----
U = np.uint64
G, C1, C2 = U(0x9E3779B97F4A7C15), U(0x632BE59BD9B4E019), U(0x8CB92BA72F3D8DD7)
M1, M2 = U(0xBF58476D1CE4E5B9), U(0x94D049BB133111EB)
HADAMARD_TENSOR = U(0x484144414D415244)


def mix64(z):
    with np.errstate(over="ignore"):
        z = np.asarray(z, dtype=np.uint64)
        z = (z ^ (z >> U(30))) * M1
        z = (z ^ (z >> U(27))) * M2
        return z ^ (z >> U(31))


def tensor_key(seed, step, tensor):
    with np.errstate(over="ignore"):
        k = mix64(U(seed) + G)
        k = mix64(k ^ (U(step) + C1))
        return mix64(k ^ (U(tensor) + C2))


def random_bits(key, n):
    """The 32 random bits of elements 0..n-1 under key, as int64."""
    with np.errstate(over="ignore"):
        j = np.arange(n, dtype=np.uint64)
        r = mix64(U(key) + (j + U(1)) * G) >> U(32)
    return torch.from_numpy(r.astype(np.int64))


def hadamard_signs(seed, step):
    return int(mix64(tensor_key(seed, step, HADAMARD_TENSOR)) & U(0xFFFF))


# ---- the format ----

def f32(v):
    return torch.tensor(v, dtype=F32)


def e2m1_sr_codes(v, r):
    """Stochastic rounding of clamp(v, -6, 6): the two grid values lo <= |v| <
    hi around it, up when the uniform u = (r >> 8) * 2^-24 is below
    (|v| - lo) / (hi - lo) (exact in float64). v is finite here."""
    a = v.abs().clamp(max=6.0).to(torch.float64)
    grid = torch.tensor(GRID, dtype=torch.float64)
    lo_i = (a.unsqueeze(-1) >= grid).to(torch.int64).sum(-1) - 1  # index of lo
    hi_i = (lo_i + 1).clamp(max=7)
    lo, hi = grid[lo_i], grid[hi_i]
    p = torch.where(hi > lo, (a - lo) / (hi - lo), torch.zeros_like(a))
    u = (r >> 8).to(torch.float64) * 2.0 ** -24
    mag = torch.where(u < p, hi_i, lo_i)
    return mag | (torch.signbit(v).to(torch.int64) << 3)


def qdq(x, rb, cb, key=None):
    """deq(quant(x)) for x [R, C] (R % rb == 0, C % cb == 0) in blocks of
    rb x cb: (1, 16) along the rows, (16, 1) down the columns, (16, 16)
    tiles. key: stochastic rounding with that tensor key, else RNE.
    Returns (values, tensor amax)."""
    R, C = x.shape
    amax = x.abs().max()
    s_enc = torch.clamp(f32(448.0 * 6.0) / amax, max=FLT_MAX)
    if amax == 0 or s_enc == 0:
        s_enc = f32(1.0)
    s_dec = f32(1.0) / s_enc
    blocks = x.reshape(R // rb, rb, C // cb, cb)
    bmax = blocks.abs().amax(dim=(1, 3), keepdim=True)
    s = torch.clamp(bmax * (s_enc * f32(1.0 / 6.0)), max=FLT_MAX).clamp(max=448.0)
    sf = s.to(torch.float8_e4m3fn).to(F32)
    enc = torch.clamp(f32(1.0) / (sf * s_dec), max=FLT_MAX)
    v = torch.clamp(blocks * enc, -6.0, 6.0)
    if key is None:
        q = e2m1_codes(v)
    else:
        r = random_bits(key, R * C).reshape(R // rb, rb, C // cb, cb)
        q = e2m1_sr_codes(v, r)
    y = (e2m1_value(q) * sf) * s_dec
    return y.reshape(R, C), float(amax)


def rht(x, signs):
    """x [R, C] (R % 16 == 0) with every group of 16 rows times H S / 4:
    the signs, the butterflies in natural order, * 0.25 (exact)."""
    R, C = x.shape
    t = x.reshape(R // 16, 16, C).clone()
    neg = torch.tensor([(signs >> k) & 1 for k in range(16)], dtype=torch.bool)
    t[:, neg] = -t[:, neg]
    h = 1
    while h < 16:
        for i in range(0, 16, 2 * h):
            for j in range(i, i + h):
                a, b = t[:, j].clone(), t[:, j + h].clone()
                t[:, j], t[:, j + h] = a + b, a - b
        h *= 2
    return (t * 0.25).reshape(R, C)


class Operands:
    """One NVFP4 Linear's three operands: their slot indices and the amax
    of each one's first quantize this step."""

    def __init__(self, first_slot):
        self.slot = {r: first_slot + i for i, r in enumerate(ROLES)}
        self.amax = {r: 0.0 for r in ROLES}
        self.amaxes = {r: [] for r in ROLES}

    def step_end(self):
        for r in ROLES:
            self.amaxes[r].append(self.amax[r])
            self.amax[r] = 0.0


class Step:
    """The step's index and each grad_output operand's stochastic quantizes
    so far in it (the seed is SEED)."""

    def __init__(self):
        self.index, self.calls = 0, {}

    def key(self, slot):
        call = self.calls.get(slot, 0)
        self.calls[slot] = call + 1
        return tensor_key(SEED, self.index, (slot << 32) | call)

    def signs(self):
        return hadamard_signs(SEED, self.index)


STEP = Step()


class Nvfp4LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, ops):
        x2 = x.reshape(-1, x.shape[-1])
        xd, ax = qdq(x2, 1, 16)  # 1x16 along in, RNE
        wd, aw = qdq(w, 16, 16)  # 16x16 tiles of the master, RNE
        ops.amax["input"] = max(ops.amax["input"], ax)
        ops.amax["weight"] = max(ops.amax["weight"], aw)
        ctx.save_for_backward(x2, wd)
        ctx.ops, ctx.shape, ctx.has_bias = ops, x.shape, b is not None
        return gr.gemm_bias(xd, wd, b, x.shape[:-1])

    @staticmethod
    def backward(ctx, dy):
        x2, wd = ctx.saved_tensors
        ops, g = ctx.ops, ctx.ops.slot["grad_output"]
        dy2 = dy.reshape(-1, dy.shape[-1])
        signs = STEP.signs()
        # dW = dY^T X: both transformed, blocks down the columns; dY stochastic
        gt = rht(dy2, signs)
        gq, ag = qdq(gt, 16, 1, STEP.key(g))
        ops.amax["grad_output"] = max(ops.amax["grad_output"], ag)
        xq, _ = qdq(rht(x2, signs), 16, 1)
        dw = gr.gemm(gq.t(), xq).to(torch.bfloat16).float()  # the param dtype's rounding
        # dX = dY W: dY in blocks along out (no transform), stochastic again
        gq2, _ = qdq(dy2, 1, 16, STEP.key(g))
        dx = gr.gemm(gq2, wd).reshape(ctx.shape)
        db = dy2.sum(0) if ctx.has_bias else None  # dY's bf16 values, not the codes
        return dx, dw, db, None


class KitSoftmax(torch.autograd.Function):
    """The masked softmax as amptrain's attention layer runs it: the forward
    as F.softmax (FP32); the backward from the probabilities the layer saved
    in its dtype (bf16: a rounding point of the forward) rather than
    autograd's FP32 output, one row at a time: dot = sum_j p_j dp_j added in
    j order, then ds_j = p_j (dp_j - dot), all FP32 (dp: the gradient of the
    probabilities, already bf16; the Cast in front rounds ds to bf16). The
    attention is near uniform at initialisation, so dp_j - dot cancels and
    torch's own backward (FP32 p, a vectorised sum) gives ds values a few
    bf16 steps away, which reach the NVFP4 Linears' dY."""

    @staticmethod
    def forward(ctx, s):
        p = F.softmax(s, dim=-1)
        ctx.save_for_backward(p.to(torch.bfloat16).float())
        return p

    @staticmethod
    def backward(ctx, dp):
        (p,) = ctx.saved_tensors
        dot = torch.zeros_like(p[..., 0])
        for j in range(p.shape[-1]):
            dot = dot + p[..., j] * dp[..., j]
        return p * (dp - dot.unsqueeze(-1))


class Nvfp4Cast(gr.Cast):
    """bf16 autocast, with NVFP4 GEMMs on the Linears that have operands."""

    def __init__(self, ops_of):
        super().__init__(torch.bfloat16)
        self.ops_of = ops_of  # id(nn.Linear) -> Operands

    def linear(self, x, lin):
        ops = self.ops_of.get(id(lin))
        if ops is None:  # block 1 and lm_head: layer.<glob> = bf16
            if gr.GEMM_DTYPE[0] == F32:
                return super().linear(x, lin)
            b = None if lin.bias is None else self(lin.bias)
            return self(gr.gemm_bias(self(x).reshape(-1, x.shape[-1]), self(lin.weight), b,
                                     x.shape[:-1]))
        b = None if lin.bias is None else self(lin.bias)
        return self(Nvfp4LinearFn.apply(self(x), lin.weight, b, ops))

    def softmax(self, att):
        return KitSoftmax.apply(att)


def run(ref, verbose):
    """The nvfp4 steps from the reference's weights and batch: [(name, tensor)]."""
    model, params, x, y = gr.model_from(ref)
    ops_of, layers = {}, []
    for k, suffix in enumerate(NV_LINEARS):
        name = f"transformer.h.{NV_BLOCK}.{suffix}"
        mod = model.get_submodule(name)
        ops_of[id(mod)] = Operands(3 * k)
        layers.append((name, ops_of[id(mod)]))
    cast = Nvfp4Cast(ops_of)
    _, l16, g16 = gr.grads_under(model, x, y, gr.Cast(torch.bfloat16), 1.0)

    opt = gr.adamw(params)
    losses, out = [], []
    STEP.index = 0
    for step in range(STEPS):
        STEP.calls = {}
        if step > 0:
            out += [(f"nvfp4.step{step}.start." + n, p.detach().clone()) for n, p in params]
        opt.zero_grad(set_to_none=True)
        _, loss = model(x, y, cast)
        loss.backward()
        grads = {n: p.grad.detach().clone() for n, p in params}
        out += [(f"nvfp4.step{step}.grad." + n, grads[n]) for n, _ in params]
        if step == 0 and verbose:
            rel = abs(loss.item() - l16.item()) / abs(l16.item())
            print(f"step 0: nvfp4 loss {loss.item():.7f}, bf16 {l16.item():.7f} (rel diff {rel:.3e})")
            worst = 0.0
            for n, _ in params:
                d = (grads[n] - g16[n]).abs().max().item() / g16[n].abs().max().item()
                worst = max(worst, d)
                print(f"  grad {n}: max|nvfp4 - bf16| / max|bf16| = {d:.3e}")
            print(f"  worst gradient tensor: {worst:.3e}")
        opt.step()
        losses.append(loss.item())
        for _, ops in layers:
            ops.step_end()
        STEP.index += 1
    if verbose:
        print("nvfp4 AdamW losses:", " ".join(f"{v:.7f}" for v in losses))
    for name, ops in layers:
        for r in ROLES:
            if verbose:
                print(f"  {name}.{r}: amax {ops.amaxes[r]}")
            out += [(f"nvfp4.amax.{name}.{r}", torch.tensor(ops.amaxes[r], dtype=torch.float64))]
    out += [("nvfp4.losses", torch.tensor(losses, dtype=torch.float64))]
    out += [("nvfp4.final." + n, p.detach()) for n, p in params]
    return out


def kind_of(name):
    """How --order-noise reports a tensor: the gradients and weights against
    their largest value, the losses and amaxes element by element."""
    parts = name.split(".")
    if parts[1] in ("losses", "amax", "final"):
        return parts[1], parts[1] != "final"
    return parts[1] + "." + parts[2], 0


def main():
    torch.set_num_threads(1)  # one summation order for torch's reductions, run after run
    meta = {"steps": str(STEPS), "seed": str(SEED), "weight_blocks": "2d", "hadamard": "1",
            "stochastic_rounding": "1", "bf16_layers": "transformer.h.1.*,lm_head"}
    gr.policy_main("gpt_nvfp4_reference.safetensors", run, meta, kind_of, "NVFP4")


if __name__ == "__main__":
    main()
