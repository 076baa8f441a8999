#!/usr/bin/env python3
"""PyTorch reference for amptrain's NVFP4 format (core/backend/kernels/nvfp4.h),
written from the format's definition (docs/nvfp4-formats.md), not from amptrain's code.

Writes tests/data/nvfp4_reference.txt, which tests/test_nvfp4_torch.c reads (the
test never imports torch). One line per tensor:

    t <layout> <rows> <cols> <s_dec bits> <x bits...> <codes...> <scales...> <y bits...>

layout `rows` (1x16 blocks along each row, scales [rows][ceil(cols/16)]) or `tiles`
(16x16 tiles, scales [ceil(rows/16)][ceil(cols/16)]); x the FP32 inputs, codes the
E2M1 codes (hex, sign in bit 3), scales the E4M3 block-scale bytes (hex), y the
decoded FP32 values, all row-major. The rule, in FP32:

    S_enc = min(448*6 / amax_tensor, FLT_MAX); 1 if amax is 0 or S_enc is 0; S_dec = 1/S_enc
    s_blk = e4m3(min(amax_block * (S_enc * fp32(1/6)), FLT_MAX))  (torch.float8_e4m3fn
            after a clamp to 448: round to nearest even, saturating)
    enc   = min(1 / (float(s_blk) * S_dec), FLT_MAX)
    q     = the E2M1 value nearest to clamp(x * enc, -6, 6), a tie to the even code,
            the sign kept (NaN: +0), chosen here by distances in float64
    y     = (e2m1(q) * float(s_blk)) * S_dec

amaxes ignore NaN. Cases: every code at a block scale of 1, every rounding tie, block
maxima over many binades (the E4M3 scale's ties and subnormals), zeros and -0, an
all-zero block, a block whose scale flushes to 0, +-inf, NaN, short last blocks, random
tensors with heavy tails, and 16x16 tiles.

Regenerate (CPU is enough):
    python3 -m venv venv-torch && venv-torch/bin/pip install torch
    venv-torch/bin/python scripts/nvfp4_reference.py [OUTDIR]   (default tests/data)
The committed file was made with torch 2.15.0 on x86-64.
"""
import os
import random
import struct
import sys

import torch

F32 = torch.float32
FLT_MAX = torch.finfo(F32).max
GRID = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6], dtype=torch.float64)


def bits_of(t):
    return [v & 0xFFFFFFFF for v in t.contiguous().view(torch.int32).flatten().tolist()]


def f32(v):
    return torch.tensor(v, dtype=F32)


def e2m1_codes(v):
    """The definition: nearest grid magnitude, ties to the even code, sign kept, NaN +0."""
    nan = torch.isnan(v)
    a = v.abs().clamp(max=6.0).to(torch.float64)
    a = torch.where(nan, torch.zeros_like(a), a)
    d = (a.unsqueeze(-1) - GRID).abs()
    best = d.min(dim=-1, keepdim=True).values
    even = (torch.arange(8) % 2 == 0).to(torch.int64)
    score = (d == best).to(torch.int64) * (1 + even)  # among the nearest, the even code
    mag = score.argmax(dim=-1)
    sign = torch.signbit(v) & ~nan
    return mag | (sign.to(torch.int64) << 3)


def e2m1_value(q):
    v = GRID.to(F32)[q & 7]
    return torch.where((q & 8) != 0, -v, v)


def nan_abs(x):
    a = x.abs()
    return torch.where(torch.isnan(a), torch.zeros_like(a), a)


def quantize(x, layout):
    R, C = x.shape
    amax = nan_abs(x).max()
    s_enc = torch.clamp(f32(448.0 * 6.0) / amax, max=FLT_MAX)
    if amax == 0 or s_enc == 0:
        s_enc = f32(1.0)
    s_dec = f32(1.0) / s_enc
    rb = 1 if layout == "rows" else 16
    nbr, nbc = (R + rb - 1) // rb, (C + 15) // 16
    scales = torch.zeros((nbr, nbc), dtype=torch.uint8)
    codes = torch.zeros((R, C), dtype=torch.int64)
    y = torch.zeros((R, C), dtype=F32)
    factor = s_enc * f32(1.0 / 6.0)
    for br in range(nbr):
        for bc in range(nbc):
            blk = x[br * rb:(br + 1) * rb, bc * 16:(bc + 1) * 16]
            bmax = nan_abs(blk).max()
            s = torch.clamp(bmax * factor, max=FLT_MAX).clamp(max=448.0).to(torch.float8_e4m3fn)
            sf = s.to(F32)
            enc = torch.clamp(f32(1.0) / (sf * s_dec), max=FLT_MAX)
            q = e2m1_codes(torch.clamp(blk * enc, -6.0, 6.0))
            scales[br, bc] = s.view(torch.uint8)
            codes[br * rb:(br + 1) * rb, bc * 16:(bc + 1) * 16] = q
            y[br * rb:(br + 1) * rb, bc * 16:(bc + 1) * 16] = (e2m1_value(q) * sf) * s_dec
    return s_dec, codes, scales, y


def line(layout, x):
    s_dec, codes, scales, y = quantize(x, layout)
    R, C = x.shape
    parts = ["t", layout, str(R), str(C), "%08x" % bits_of(s_dec.reshape(1))[0]]
    parts += ["%08x" % b for b in bits_of(x)]
    parts += ["%x" % c for c in codes.flatten().tolist()]
    parts += ["%02x" % s for s in scales.flatten().tolist()]
    parts += ["%08x" % b for b in bits_of(y)]
    return " ".join(parts)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data")
    rnd = random.Random(4)
    torch.manual_seed(4)
    cases = []
    codes = [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    # a tensor amax of 448*6 makes S_enc 1, a block amax of 6 its scale 1: the block's
    # values reach the cast as they are: every code, then every tie, both signs
    every = codes + [-v for v in codes]
    ties = [6, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5, -6]
    near = []
    for t in [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5]:
        lo = struct.unpack("<f", struct.pack("<I", struct.unpack("<I", struct.pack("<f", t))[0] - 1))[0]
        hi = struct.unpack("<f", struct.pack("<I", struct.unpack("<I", struct.pack("<f", t))[0] + 1))[0]
        near += [lo, hi]
    near = (near + [6.0, 7.5])[:16]
    cases.append(("rows", torch.tensor([every, ties, near, [2688.0] + [1.0] * 15], dtype=F32)))
    # block maxima over many binades (E4M3 scale ties, subnormal scales, one that
    # flushes to 0), zeros, -0, an all-zero block, inf and NaN
    rows = []
    for e in range(-24, 12):
        m = 2.0 ** e * rnd.choice([1.0, 1.0625, 1.125, 1.5, 1.75, 1.9375])
        rows.append([m * rnd.uniform(-1, 1) for _ in range(15)] + [m])
    rows.append([0.0] * 16)
    rows.append([-0.0, 0.0, 1e-30, -1e-30] + [1e-3] * 12)
    cases.append(("rows", torch.tensor(rows, dtype=F32)))
    cases.append(("rows", torch.tensor([[1.0, float("inf"), -2.0] + [0.5] * 13,
                                        [float("nan"), 3.0] + [-1.0] * 14], dtype=F32)))
    cases.append(("rows", torch.tensor([[-float("inf"), 1.0, float("nan")] + [2.0] * 17], dtype=F32)))
    # random tensors: normal, heavy-tailed, short last blocks
    for (R, C) in [(8, 64), (5, 37), (3, 17), (1, 5)]:
        cases.append(("rows", torch.randn(R, C, dtype=F32)))
        cases.append(("rows", (torch.randn(R, C, dtype=F32) ** 3) * 10.0))
    # 16x16 tiles, one with short edges
    cases.append(("tiles", torch.randn(32, 48, dtype=F32) * 0.05))
    cases.append(("tiles", torch.randn(20, 37, dtype=F32) ** 3))
    w = torch.randn(16, 32, dtype=F32)
    w[:, 16:] *= 1e-4
    cases.append(("tiles", w))
    path = os.path.join(out, "nvfp4_reference.txt")
    with open(path, "w") as f:
        f.write("# scripts/nvfp4_reference.py: torch %s\n" % torch.__version__)
        for layout, x in cases:
            f.write(line(layout, x) + "\n")
    print("wrote %s: %d tensors" % (path, len(cases)))


if __name__ == "__main__":
    main()
