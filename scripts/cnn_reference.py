#!/usr/bin/env python3
"""PyTorch reference for amptrain's CNN (tests/test_cnn_reference.c).

A tiny network with the shapes that break convolution and pooling code
(stride 2, padding, an overlapping 3x3/2 pool, a 2x2 kernel, channel counts
that are not multiples of 8), built from the very layers string amptrain
parses, with amptrain's parameter names:

    conv(5,3,stride=2,pad=1) bn relu pool(3,stride=2,pad=1) conv(7,2) bn relu fc(9) relu fc

on [6, 3, 11, 9] images and 4 classes. Computed in float64 (the truth an
FP32 run is measured against) and written as F64, except the labels and
num_batches_tracked (I64, as PyTorch keeps them):

    layers (metadata)       the layers string
    init.<name>             the initial parameters and buffers (state_dict)
    x [5, 6, 3, 11, 9]      five batches; y [5, 6] their labels
    logits0, loss0          the first batch's forward in training mode
    grad0.<name>            the gradients of that loss (mean cross-entropy)
    losses [5]              the loss of each of 5 SGD steps (one batch each;
                            lr 0.1, momentum 0.9, weight decay 0.01)
    final.<name>            parameters and buffers after the 5 steps
                            (running statistics with momentum 0.1, the
                            unbiased variance; num_batches_tracked = 5)
    eval_logits             batch 0 in evaluation mode after the 5 steps

usage: scripts/cnn_reference.py [OUT]   (default tests/data/cnn_reference.safetensors)
Needs torch (Debian: python3-torch; or pip install torch). The committed
file was made with torch 1.13 on the CPU.
"""
import json
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

LAYERS = "conv(5,3,stride=2,pad=1) bn relu pool(3,stride=2,pad=1) conv(7,2) bn relu fc(9) relu fc"
BATCH, C, H, W, CLASSES, STEPS = 6, 3, 11, 9, 4, 5
LR, MOMENTUM, WD = 0.1, 0.9, 0.01


class Net(nn.Module):
    """The layers string written by hand, with amptrain's attribute names."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 5, 3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(5)  # momentum 0.1, eps 1e-5
        self.conv2 = nn.Conv2d(5, 7, 2)
        self.bn2 = nn.BatchNorm2d(7)
        self.fc1 = nn.Linear(7 * 2 * 2, 9)
        self.fc2 = nn.Linear(9, CLASSES)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))  # [6, 5, 6, 5]
        x = F.max_pool2d(x, 3, stride=2, padding=1)  # [6, 5, 3, 3]
        x = F.relu(self.bn2(self.conv2(x)))  # [6, 7, 2, 2]
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def write_safetensors(path, tensors, meta):
    """Minimal safetensors writer (the format is an 8-byte header length, a
    JSON header and the raw little-endian data), so no extra package is needed."""
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        t = t.detach().contiguous()
        dtype = {torch.float64: "F64", torch.float32: "F32", torch.int64: "I64"}[t.dtype]
        data = t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "cnn_reference.safetensors")
    torch.manual_seed(12)
    net = Net().double()
    # The inputs are FP32 values (computed on in FP64), so an FP32 run starts
    # from exactly the same numbers.
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(p.float().double())
    x = torch.randn(STEPS, BATCH, C, H, W, dtype=torch.float64).float().double()
    y = torch.randint(0, CLASSES, (STEPS, BATCH), dtype=torch.int64)
    t = {"x": x, "y": y}
    for k, v in net.state_dict().items():
        t["init." + k] = v.clone()

    net.train()
    logits = net(x[0])
    loss = F.cross_entropy(logits, y[0])
    loss.backward()
    t["logits0"] = logits.detach().clone()
    t["loss0"] = loss.detach().reshape(1).clone()
    for k, p in net.named_parameters():
        t["grad0." + k] = p.grad.detach().clone()

    # Five SGD steps from the same initial state (the first one on batch 0
    # again, with its running-statistics update), as amptrain's session does.
    net.load_state_dict({k[5:]: v for k, v in t.items() if k.startswith("init.")})
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WD)
    losses = []
    for s in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(net(x[s]), y[s])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    t["losses"] = torch.tensor(losses, dtype=torch.float64)
    for k, v in net.state_dict().items():
        t["final." + k] = v.clone()
    net.eval()
    with torch.no_grad():
        t["eval_logits"] = net(x[0]).clone()

    write_safetensors(out, t, {"layers": LAYERS, "lr": str(LR), "momentum": str(MOMENTUM),
                               "weight_decay": str(WD), "torch": torch.__version__})
    print(f"wrote {out}: loss0 {t['loss0'].item():.9f}, losses {losses}")


if __name__ == "__main__":
    main()
