#!/usr/bin/env python3
"""Writes tests/data/tokens_numpy_{u2,i4,u4}.npy with real NumPy (run by hand
in a venv with numpy; never by the tests): the first 300 character ids of
data/tinyshakespeare.txt (ids as core/data/text.c assigns them) saved by
numpy.save in each dtype the tokens dataset reads. The tests check that
write_tokens.py writes the same bytes.

  python3 -m venv /tmp/npvenv && /tmp/npvenv/bin/pip install numpy
  /tmp/npvenv/bin/python tests/tokens/numpy_reference.py
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
data = open(os.path.join(HERE, "..", "..", "data", "tinyshakespeare.txt"), "rb").read()
vocab = sorted(set(data))
rank = {b: i for i, b in enumerate(vocab)}
ids = [rank[b] for b in data[:300]]
for name, dtype in (("u2", np.uint16), ("i4", np.int32), ("u4", np.uint32)):
    np.save(os.path.join(HERE, "..", "data", "tokens_numpy_%s.npy" % name), np.array(ids, dtype=dtype))
