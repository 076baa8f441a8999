#!/usr/bin/env python3
"""PyTorch / torchao reference for amptrain's FP8 formats (core/backend/kernels/fp8.h, mx.h).

Writes two text files that tests/test_fp8_torch.c and tests/test_mx_torchao.c
read (the tests never import torch):

  tests/data/fp8_casts.txt   one line per FP32 input:
        c <x bits> <e4m3> <e5m2>
      the codes of x.clamp(-max, max).to(torch.float8_e4m3fn / float8_e5m2)
      (the saturating cast: clamp first, then PyTorch's round-to-nearest-even
      cast), for every FP32 exponent field with mantissas at and next to the
      rounding ties of both formats, the midpoints between neighbouring FP8
      values (both ties, subnormals, the saturation boundary), +-0, +-inf,
      NaNs, plus random inputs; and one line per FP8 code and format:
        d <fmt> <code> <bits of code.view(dtype).to(torch.float32)>
  tests/data/mxfp8_torchao.txt   one line per 32-value block:
        m <fmt> <scale> <x0..x31 bits> <e0..e31> <spec>
      scale and elements from torchao.prototype.mx_formats.mx_tensor.to_mx
      (block_size 32, ScaleCalculationMode.FLOOR) on a [blocks, 32] FP32
      tensor; <spec> is '-' or, for blocks whose scale byte is 0 with a
      nonzero amax (where torchao divides by 2^-126 instead of the scale's
      own 2^-127, see mx.h), the 32 elements the spec's X = 2^-127 gives,
      computed as x.mul(2**127).clamp(-max, max).to(dtype).

Regenerate (CPU is enough; about a minute including the import; installing
takes a few minutes):
    python3 -m venv venv-torch && venv-torch/bin/pip install torch torchao
    venv-torch/bin/python scripts/fp8_reference.py [OUTDIR]   (default tests/data)
The committed files were made with torch 2.15.0 and torchao 0.18.0 on x86-64.
NaN blocks: torchao writes x / +inf there (its float reading of scale 0xff),
so an inf element becomes the CPU's default NaN (negative on x86); the
committed bits are x86's.
"""
import os
import random
import struct
import sys

import torch
from torchao.prototype.mx_formats.mx_tensor import to_mx

FMTS = (("e4m3", torch.float8_e4m3fn, 448.0), ("e5m2", torch.float8_e5m2, 57344.0))


def f32(bits):
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def tensor_of_bits(bits):
    return torch.tensor([b - (1 << 32) if b >= 1 << 31 else b for b in bits],
                        dtype=torch.int32).view(torch.float32)


def bits_of(t):
    return [v & 0xFFFFFFFF for v in t.contiguous().view(torch.int32).flatten().tolist()]


def sat_cast(x, dtype, mx):
    return x.clamp(-mx, mx).to(dtype).view(torch.uint8)


def cast_inputs(rng):
    ins = set()
    for e in range(256):
        mants = {0, 1, 0x7FFFFF, 0x400000, rng.getrandbits(23)}
        for drop in (20, 21):  # the FP32 bits E4M3 / E5M2 normals drop
            for k in (0, 1, 2, 3):
                tie = (k << drop) | (1 << (drop - 1))
                mants.update({tie - 1, tie, tie + 1})
        for m in mants:
            for s in (0, 1):
                ins.add((s << 31) | (e << 23) | (m & 0x7FFFFF))
    # midpoints between neighbouring FP8 values, and their FP32 neighbours
    for _, dtype, _ in FMTS:
        codes = torch.arange(0, 0x80, dtype=torch.int32).to(torch.uint8)
        vals = codes.view(dtype).to(torch.float64).tolist()
        finite = sorted(v for v in vals if v == v and abs(v) != float("inf"))
        for lo, hi in zip(finite, finite[1:] + [finite[-1] * 2]):
            mid = struct.unpack("<I", struct.pack("<f", (lo + hi) / 2))[0]
            for b in (mid - 1, mid, mid + 1):
                ins.update({b, b | 0x80000000})
    specials = [0x7F800000, 0x7FC00000, 0x7FA00000, 0x7F800001, 0x7FFFFFFF, 0x00000001,
                0x007FFFFF, 0x00800000, 0x7F7FFFFF]
    for b in specials:
        ins.update({b, b | 0x80000000})
    for _ in range(2000):
        ins.add(rng.getrandbits(32))
    return sorted(ins)


def write_casts(path, rng):
    ins = cast_inputs(rng)
    x = tensor_of_bits(ins)
    outs = [sat_cast(x, dtype, mx).tolist() for _, dtype, mx in FMTS]
    with open(path, "w") as f:
        f.write("# scripts/fp8_reference.py: torch %s\n" % torch.__version__)
        for i, b in enumerate(ins):
            f.write("c %08x %02x %02x\n" % (b, outs[0][i], outs[1][i]))
        for name, dtype, _ in FMTS:
            codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
            dec = bits_of(codes.view(dtype).to(torch.float32))
            for c in range(256):
                f.write("d %s %02x %08x\n" % (name, c, dec[c]))
    return len(ins)


def mx_blocks(rng):
    """[n, 32] FP32 blocks that reach every branch of the scale rule."""
    blocks = []

    def rand_block(lo_exp, hi_exp):
        return [rng.choice((1, -1)) * rng.uniform(1, 2) * 2.0 ** rng.randint(lo_exp, hi_exp)
                for _ in range(32)]

    for e in range(-149, 128, 3):  # amax across every binade, elements spread below it
        b = rand_block(max(e - 12, -149), e)
        blocks.append(b)
    for e in (-120, -119, -118, -117, -100, 0, 10, 119, 120, 126, 127):
        blocks.append(rand_block(e - 3, e))
    zero = [0.0] * 32
    blocks.append(zero)
    blocks.append([-0.0 if i % 2 else 0.0 for i in range(32)])
    for amax_bits in (0x3F800000, 0x3FFFFFFF, 0x43E00000, 0x43FFFFFF, 0x00000001, 0x007FFFFF,
                      0x00800000, 0x7F7FFFFF, 0x7F000000, 0x04000000, 0x04FFFFFF):
        b = rand_block(-20, 0)
        b = [v * f32(amax_bits) / 2 for v in b]
        b[rng.randrange(32)] = f32(amax_bits) * rng.choice((1, -1))
        blocks.append(b)
    for special in (float("nan"), float("inf"), -float("inf")):
        b = rand_block(-5, 5)
        b[rng.randrange(32)] = special
        blocks.append(b)
    b = rand_block(-5, 5)
    b[3], b[9] = float("inf"), float("nan")
    blocks.append(b)
    # elements on the rounding ties of the element format under the scale
    for e in (-3, 0, 7, 40):
        b = [rng.choice((1, -1)) * (rng.randint(8, 15) + 0.5) / 8 * 2.0 ** (e - rng.randint(0, 12))
             for _ in range(32)]
        b[0] = 1.9375 * 2.0 ** e
        blocks.append(b)
    # FP32 bit patterns with the sign and payload of NaNs kept
    out = []
    for b in blocks:
        out.append([struct.unpack("<I", struct.pack("<f", v))[0] for v in b])
    out.append([0x7FA00000] + [0x3F800000] * 31)  # signalling NaN
    out.append([0xFFC00001] + [0xBF800000] * 31)  # negative NaN
    return out


def write_mx(path, rng):
    blocks = mx_blocks(rng)
    x = tensor_of_bits([v for b in blocks for v in b]).reshape(len(blocks), 32)
    with open(path, "w") as f:
        f.write("# scripts/fp8_reference.py: torch %s\n" % torch.__version__)
        for name, dtype, mx in FMTS:
            scale, data = to_mx(x, dtype, 32)
            scale = scale.view(torch.uint8).reshape(len(blocks)).tolist()
            data = data.view(torch.uint8).reshape(len(blocks), 32).tolist()
            for i, b in enumerate(blocks):
                amax_nonzero = any((v & 0x7FFFFFFF) != 0 for v in b)
                spec = "-"
                if scale[i] == 0 and amax_nonzero:
                    row = x[i].mul(2.0 ** 127)
                    spec = " ".join("%02x" % c for c in sat_cast(row, dtype, mx).tolist())
                f.write("m %s %02x %s %s %s\n" % (name, scale[i], " ".join("%08x" % v for v in b),
                                                  " ".join("%02x" % c for c in data[i]), spec))
    return len(blocks)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")
    rng = random.Random(20260812)
    n = write_casts(os.path.join(out, "fp8_casts.txt"), rng)
    m = write_mx(os.path.join(out, "mxfp8_torchao.txt"), rng)
    print("fp8_casts.txt: %d inputs; mxfp8_torchao.txt: %d blocks per format" % (n, m))


if __name__ == "__main__":
    main()
