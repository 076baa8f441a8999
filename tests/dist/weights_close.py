#!/usr/bin/env python3
"""Compares two amptrain weights.safetensors (F32 tensors) tensor by tensor:
prints each tensor's max |a - b| / max(1, max |b|) and the largest, and
exits 1 when any exceeds BOUND (or the names/shapes differ), 0 otherwise.
usage: weights_close.py A.safetensors B.safetensors BOUND"""
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack_from("<Q", raw, 0)
    header = json.loads(raw[8:8 + hlen])
    body = raw[8 + hlen:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            sys.exit(f"{path}: tensor {name} is {t['dtype']}, not F32")
        lo, hi = t["data_offsets"]
        out[name] = (tuple(t["shape"]), struct.unpack(f"<{(hi - lo) // 4}f", body[lo:hi]))
    return out


a, b, bound = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3])
if sorted(a) != sorted(b):
    sys.exit(f"other tensors: {sorted(a)} vs {sorted(b)}")
worst, worst_name = 0.0, ""
for name in sorted(a):
    (sa, va), (sb, vb) = a[name], b[name]
    if sa != sb:
        sys.exit(f"{name}: shape {sa} vs {sb}")
    scale = max([1.0] + [abs(x) for x in vb])
    d = max((abs(x - y) for x, y in zip(va, vb)), default=0.0) / scale
    if d > worst:
        worst, worst_name = d, name
    print(f"{name}: {d:.3e}")
print(f"largest: {worst:.3e} ({worst_name or 'all equal'}), bound {bound:g}")
sys.exit(1 if worst > bound else 0)
