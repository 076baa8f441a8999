#!/usr/bin/env python3
"""Writes tests/data/gpt_reference.safetensors: a tiny GPT in PyTorch, as
nanoGPT's model.py writes it, for tests/test_gpt_reference.c (the llm.c
test_gpt2 idea). Run by hand, never by CI:

    python3 scripts/gpt_reference.py [--out tests/data/gpt_reference.safetensors]

It needs PyTorch: Debian's python3-torch (1.13, /usr/bin/python3) or a
wheel from PyPI. The file holds, with nanoGPT's state_dict names:
  - the initial weights (GPT-2 init, seed 1337; lm_head.weight is tied to
    transformer.wte.weight and stored once, as amptrain's parameter table
    has it);
  - a batch x, y [B, T] of tinyshakespeare characters (ids of the sorted
    unique characters, stored as F32, exact);
  - fp32: logits [B, T, V], the mean cross-entropy loss, every parameter's
    gradient ("grad.<name>"), and the losses of 10 AdamW steps on that
    batch (lr 1e-3, betas 0.9/0.99, eps 1e-8, weight decay 0.1 on the 2-D
    tensors only, nanoGPT's grouping);
  - fp16 and bf16: the loss and the gradients under autocast semantics
    ("fp16.loss", "fp16.grad.<name>", ...). torch 1.13 has no FP16 autocast
    on the CPU, so the script applies autocast's CUDA op lists itself: the
    inputs of every linear/matmul are cast to the 16-bit type and its output
    is 16-bit (computed in FP32 from the rounded inputs, as a GEMM with FP32
    accumulation does), softmax, layer_norm and cross_entropy run in FP32,
    GELU keeps its 16-bit input type, the embedding and the residual stream
    stay FP32. A cast is x.to(dtype).float(), whose backward rounds the
    gradient to the 16-bit type, as autograd does through autocast's casts.
    fp16 uses a static loss scale of 1024 (grads are unscaled before saving).
"""
import argparse
import json
import math
import os
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

N_LAYER, N_HEAD, N_EMBD, BLOCK, BATCH = 2, 2, 32, 16, 4
LR, BETAS, EPS, WD, STEPS = 1e-3, (0.9, 0.99), 1e-8, 0.1, 10
FP16_SCALE = 1024.0


class Cast:
    """Where autocast rounds: identity for fp32."""

    def __init__(self, dtype=None):
        self.dtype = dtype

    def __call__(self, x):
        return x if self.dtype is None else x.to(self.dtype).float()

    def linear(self, x, lin):
        """A Linear whose operands and output round where autocast's do; a
        subclass (scripts/gpt_fp8_reference.py) changes how its GEMM runs."""
        y = F.linear(self(x), self(lin.weight), None if lin.bias is None else self(lin.bias))
        return self(y)

    def softmax(self, att):
        """The attention's masked softmax (FP32: autocast's fp32 list); a
        subclass (scripts/gpt_nvfp4_reference.py) changes its backward."""
        return F.softmax(att, dim=-1)


def linear(cast, x, lin):
    return cast.linear(x, lin)


class LayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class Block(nn.Module):
    def __init__(self, bias):
        super().__init__()
        self.ln_1 = LayerNorm(N_EMBD, bias)
        self.attn = nn.Module()
        self.attn.c_attn = nn.Linear(N_EMBD, 3 * N_EMBD, bias=bias)
        self.attn.c_proj = nn.Linear(N_EMBD, N_EMBD, bias=bias)
        self.ln_2 = LayerNorm(N_EMBD, bias)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(N_EMBD, 4 * N_EMBD, bias=bias)
        self.mlp.c_proj = nn.Linear(4 * N_EMBD, N_EMBD, bias=bias)

    def attention(self, cast, x):
        B, T, C = x.size()
        q, k, v = linear(cast, x, self.attn.c_attn).split(N_EMBD, dim=2)
        q = q.view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2)
        k = k.view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2)
        v = v.view(B, T, N_HEAD, C // N_HEAD).transpose(1, 2)
        # nanoGPT's manual path: att = (q @ k^T) * (1/sqrt(hs)); both 16-bit ops
        att = cast(cast(q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1))))
        mask = torch.tril(torch.ones(T, T)).view(1, 1, T, T)
        att = att.masked_fill(mask == 0, float("-inf"))
        att = cast.softmax(att)  # FP32 (autocast's fp32 list)
        y = cast(cast(att) @ v)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return linear(cast, y, self.attn.c_proj)

    def forward(self, cast, x):
        x = x + self.attention(cast, self.ln_1(x))
        h = linear(cast, self.ln_2(x), self.mlp.c_fc)
        h = cast(F.gelu(h, approximate="tanh"))  # keeps its 16-bit input type
        return x + linear(cast, h, self.mlp.c_proj)


class GPT(nn.Module):
    def __init__(self, vocab, bias=True):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, N_EMBD),
            wpe=nn.Embedding(BLOCK, N_EMBD),
            h=nn.ModuleList([Block(bias) for _ in range(N_LAYER)]),
            ln_f=LayerNorm(N_EMBD, bias),
        ))
        self.lm_head = nn.Linear(N_EMBD, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * N_LAYER))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets, cast=Cast()):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)  # FP32
        for block in self.transformer.h:
            x = block(cast, x)
        x = self.transformer.ln_f(x)
        logits = linear(cast, x, self.lm_head)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def write_safetensors(path, tensors, meta):
    header, blobs, off = {"__metadata__": meta}, [], 0
    for name, t in tensors:
        data = t.detach().to(torch.float32).contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def grads_under(model, x, y, cast, scale):
    model.zero_grad(set_to_none=True)
    logits, loss = model(x, y, cast)
    (loss * scale).backward()
    return logits, loss, {n: p.grad.detach() / scale for n, p in model.named_parameters()}


def adamw(params):
    """nanoGPT's AdamW over [(name, param)]: weight decay on the 2-D tensors only."""
    decay = [p for n, p in params if p.dim() >= 2]
    no_decay = [p for n, p in params if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": WD},
                              {"params": no_decay, "weight_decay": 0.0}], lr=LR, betas=BETAS, eps=EPS)


def model_from(ref):
    """The GPT with the initial weights of this script's file (its tensors
    `ref`), and its batch: (model, [(name, param)], x, y)."""
    model = GPT(ref["transformer.wte.weight"].shape[0])
    params = list(model.named_parameters())  # the tied weight once, as wte
    with torch.no_grad():
        for n, p in params:
            p.copy_(ref[n])
    return model, params, ref["ref.x"].long(), ref["ref.y"].long()


GEMM_DTYPE = [torch.float32]  # a policy script's --order-noise: float64, another accumulation


def gemm(a, b):
    """a @ b summed in GEMM_DTYPE[0], as FP32: a policy script's GEMMs."""
    return (a.to(GEMM_DTYPE[0]) @ b.to(GEMM_DTYPE[0])).float()


def gemm_bias(xd, wd, b, lead):
    """x W^T + b on the values the GEMM reads ([rows, in], [out, in]), FP32,
    shaped [*lead, out]: a policy script's Linear forward."""
    y = gemm(xd, wd.t())
    if b is not None:
        y = y + b
    return y.reshape(*lead, wd.shape[0])


def order_noise(a, b, kind_of):
    """The test's measures between two runs a, b ([(name, tensor)]) that
    differ only in how the GEMMs accumulate: what another implementation may
    differ by. kind_of(name) -> (the kind it is reported under, 1 when it is
    compared element by element (relative), 0 against its largest value)."""
    a, b = dict(a), dict(b)
    worst = {}
    for k in a:
        kind, per_element = kind_of(k)
        if per_element:
            d = ((a[k] - b[k]).abs() / a[k].abs()).max().item()
        else:
            d = (a[k] - b[k]).abs().max().item() / a[k].abs().max().item()
        if d >= worst.get(kind, (0.0, ""))[0]:
            worst[kind] = (d, k)
    for kind, (d, k) in sorted(worst.items()):
        print(f"  order noise {kind}: {d:.3e} ({k})")


def policy_main(out_name, run, meta, kind_of, what):
    """main() of a script that runs this GPT under a precision policy
    (gpt_fp8_reference.py, gpt_nvfp4_reference.py): run(ref, verbose) from
    the weights and batch of --ref, written to --out (tests/data/<out_name>)
    with meta and this optimizer's settings; --order-noise runs it again
    with GEMM_DTYPE[0] (the policy's GEMMs) float64 and prints order_noise."""
    from safetensors.torch import load_file

    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default=os.path.join(here, "..", "tests", "data", "gpt_reference.safetensors"))
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "data", out_name))
    ap.add_argument("--order-noise", action="store_true",
                    help=f"also run the {what} GEMMs in float64 and print how far that moves each measure")
    args = ap.parse_args()
    ref = load_file(args.ref)
    out = run(ref, True)
    if args.order_noise:
        GEMM_DTYPE[0] = torch.float64
        order_noise(out, run(ref, False), kind_of)
        GEMM_DTYPE[0] = torch.float32
    meta = {"torch": torch.__version__, **meta, "lr": str(LR), "beta1": str(BETAS[0]),
            "beta2": str(BETAS[1]), "eps": str(EPS), "weight_decay": str(WD)}
    write_safetensors(args.out, out, meta)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes)")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "data", "gpt_reference.safetensors"))
    ap.add_argument("--data", default=os.path.join(here, "..", "data", "tinyshakespeare.txt"))
    args = ap.parse_args()
    torch.manual_seed(1337)
    text = open(args.data, encoding="ascii").read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    n = int(0.9 * len(data))
    ix = torch.randint(n - BLOCK - 1, (BATCH,))
    x = torch.stack([data[i:i + BLOCK] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + BLOCK] for i in ix])

    model = GPT(len(chars))
    params = list(model.named_parameters())  # the tied weight appears once, as wte
    init = [(n, p.detach().clone()) for n, p in params]
    out = [(n, t) for n, t in init]
    out += [("ref.x", x.float()), ("ref.y", y.float())]

    logits, loss, grads = grads_under(model, x, y, Cast(), 1.0)
    out += [("ref.logits", logits.detach()), ("ref.loss", loss.detach().reshape(1))]
    out += [("grad." + n, grads[n]) for n, _ in params]
    for tag, dt, scale in (("fp16", torch.float16, FP16_SCALE), ("bf16", torch.bfloat16, 1.0)):
        _, l16, g16 = grads_under(model, x, y, Cast(dt), scale)
        out += [(tag + ".loss", l16.detach().reshape(1))]
        out += [(tag + ".grad." + n, g16[n]) for n, _ in params]
        print(f"{tag}: loss {l16.item():.6f} (fp32 {loss.item():.6f})")

    opt = adamw(params)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad(set_to_none=True)
        _, l = model(x, y)
        l.backward()
        opt.step()
        losses.append(l.item())
    print("fp32 AdamW losses:", " ".join(f"{v:.6f}" for v in losses))
    out += [("ref.losses", torch.tensor(losses, dtype=torch.float64))]
    meta = {"torch": torch.__version__, "n_layer": str(N_LAYER), "n_head": str(N_HEAD),
            "n_embd": str(N_EMBD), "block_size": str(BLOCK), "bias": "true", "vocab": str(len(chars)),
            "lr": str(LR), "beta1": str(BETAS[0]), "beta2": str(BETAS[1]), "eps": str(EPS),
            "weight_decay": str(WD), "fp16_loss_scale": str(FP16_SCALE)}
    write_safetensors(args.out, out, meta)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes), loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
