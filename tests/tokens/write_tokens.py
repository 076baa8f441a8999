#!/usr/bin/env python3
"""Writes token id files in the formats `[data] dataset = tokens` reads, with
the Python standard library only (NumPy need not be installed).

  write_tokens.py chars TEXT OUTDIR
      The character ids amptrain's text dataset assigns to TEXT (core/data/text.c:
      the sorted distinct bytes, id = rank; the first int(0.9 n) characters
      train, the rest validate), as OUTDIR/{bin,llmc,npy}/{train,val}.<ext>:
      nanoGPT raw uint16 .bin, llm.c shards (magic 20240520, version 1) and
      .npy <u2. Also OUTDIR/shifted/train.bin: the training ids one token
      late (ids[1:]), the data of an off-by-one reader.
  write_tokens.py npy DTYPE COUNT OUT.npy
      The first COUNT character ids of data/tinyshakespeare.txt as a .npy of
      DTYPE (<u2, <i4, <u4), byte for byte what numpy.save writes (checked
      against tests/data/tokens_numpy_*.npy, written by real NumPy).
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "data", "tinyshakespeare.txt")
CODES = {"<u2": "H", "<i4": "i", "<u4": "I"}


def char_ids(path):
    data = open(path, "rb").read()
    vocab = sorted(set(data))
    rank = {b: i for i, b in enumerate(vocab)}
    return [rank[b] for b in data], len(vocab)


def npy_bytes(ids, descr):
    # numpy.lib.format, version 1.0: the dict, padded with spaces so that
    # magic + 4 + header (ending in '\n') is a multiple of 64.
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, len(ids))
    pad = 64 - (10 + len(d) + 1) % 64
    header = (d + " " * (pad % 64) + "\n").encode("latin1")
    body = struct.pack("<%d%s" % (len(ids), CODES[descr]), *ids)
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + body


def llmc_bytes(ids):
    header = [0] * 256
    header[0], header[1], header[2] = 20240520, 1, len(ids)
    return struct.pack("<256i", *header) + struct.pack("<%dH" % len(ids), *ids)


def raw_bytes(ids):
    return struct.pack("<%dH" % len(ids), *ids)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main(argv):
    if len(argv) == 4 and argv[1] == "chars":
        ids, _ = char_ids(argv[2])
        out = argv[3]
        n_train = int(len(ids) * 0.9)
        splits = {"train": ids[:n_train], "val": ids[n_train:]}
        for name, part in splits.items():
            write(os.path.join(out, "bin", name + ".bin"), raw_bytes(part))
            write(os.path.join(out, "llmc", name + ".bin"), llmc_bytes(part))
            write(os.path.join(out, "npy", name + ".npy"), npy_bytes(part, "<u2"))
        write(os.path.join(out, "shifted", "train.bin"), raw_bytes(splits["train"][1:]))
        write(os.path.join(out, "shifted", "val.bin"), raw_bytes(splits["val"]))
        return 0
    if len(argv) == 5 and argv[1] == "npy" and argv[2] in CODES:
        ids, _ = char_ids(CORPUS)
        write(argv[4], npy_bytes(ids[: int(argv[3])], argv[2]))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
