#!/usr/bin/env python3
"""Reads amptrain's TensorBoard event files with TensorBoard's own reader.

The test suite decodes the event files itself (tests/tensorboard/tb_decode.c:
framing, masked CRC-32C, Event protobufs). This script checks once, outside
the suite, that the real `tensorboard` package loads them too: it trains three
small runs with `[run] tensorboard = true` (the tiny task with evaluations;
a one-layer GPT under fp8, whose per-operand telemetry gives the
underflow/<layer>/<role> and saturation/<layer>/<role> tags; the tiny task
resumed from a checkpoint behind its history's end), loads each
run's tensorboard/ folder with
tensorboard.backend.event_processing.event_accumulator.EventAccumulator
(every scalar kept: size_guidance 0), and compares every scalar series with
the run's metrics.jsonl: the same steps, and each value equal to the line's
number as a float32. Timings (step_ms, cpu_ms) are compared but not printed,
so the output is the same from run to run.

Its output is committed as tests/data/tensorboard/reference_read.txt.
Regenerate, from the repository root after a build (PyPI reachable):

    python3 -m venv /tmp/tbvenv && /tmp/tbvenv/bin/pip install tensorboard
    /tmp/tbvenv/bin/python scripts/tensorboard_check.py build/amptrain \
        > tests/data/tensorboard/reference_read.txt

Exit status 0 when every series matches, 1 otherwise (the mismatch printed).
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

from tensorboard import version as tb_version
from tensorboard.backend.event_processing import event_accumulator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SGD = os.path.join(ROOT, "tests/checkpoint/tiny_sgd.ini")
RUNS = [
    ("tiny_sgd", SGD, ["--set", "train.steps=50", "--set", "train.eval_every=20"], False),
    ("gpt_fp8", os.path.join(ROOT, "tests/configs/gpt_scaled_tiny.ini"),
     ["--set", "run.device=cpu", "--set", "train.steps=4"], False),
    # 70 steps with checkpoints at 20, 40 and 60; the one at 60 removed, then
    # --resume: the history is cut back to step 40 and written again
    ("tiny_sgd_resumed", SGD, ["--set", "train.steps=70", "--set", "train.eval_every=20",
                               "--set", "train.checkpoint_every=20"], True),
]
TIMED = ("train/step_ms", "train/cpu_ms")


def f32(x):
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def expected(jsonl):
    """{tag: [(step, value)]} from metrics.jsonl, as amptrain maps it."""
    out = {}
    for line in open(jsonl):
        r = json.loads(line)
        group = "train" if "loss" in r else "eval"
        for k, v in r.items():
            if k in ("step", "epoch") or v is None:
                continue
            if k == "fp8":
                for op in v:
                    for src, kind in (("flushed", "underflow"), ("saturated", "saturation")):
                        tag = "%s/%s/%s" % (kind, op["layer"], op["role"])
                        out.setdefault(tag, []).append((r["step"], f32(op[src])))
                continue
            out.setdefault("%s/%s" % (group, k), []).append((r["step"], f32(v)))
    return out


def check(amptrain, name, config, sets, resume, work):
    out = os.path.join(work, name)
    env = dict(os.environ, AMPTRAIN_THREADS="1")
    subprocess.run([amptrain, "train", config, *sets, "--set", "run.tensorboard=true", "--out", out],
                   check=True, env=env, stderr=subprocess.DEVNULL)
    if resume:
        os.remove(os.path.join(out, "checkpoints/ckpt-00000060.amp"))
        log = subprocess.run([amptrain, "train", "--resume", out], check=True, env=env,
                             stderr=subprocess.PIPE, text=True).stderr
        if "ckpt-00000040.amp" not in log:
            sys.exit("%s: did not resume from step 40:\n%s" % (name, log))
    files = sorted(os.listdir(os.path.join(out, "tensorboard")))
    acc = event_accumulator.EventAccumulator(os.path.join(out, "tensorboard"),
                                             size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    tags = sorted(acc.Tags()["scalars"])
    want = expected(os.path.join(out, "metrics.jsonl"))
    print("run %s%s: %d event file (%s), file_version %s" %
          (name, " (resumed at step 40 of 70)" if resume else "", len(files),
           files[0].rsplit(".", 2)[0] + ".<secs>.<host>", acc.file_version))
    bad = 0
    if tags != sorted(want):
        print("  MISMATCH: tags read %s, metrics.jsonl gives %s" % (tags, sorted(want)))
        bad += 1
    total = 0
    for tag in tags:
        got = [(e.step, e.value) for e in acc.Scalars(tag)]
        total += len(got)
        same = got == want.get(tag)
        if not same:
            print("  MISMATCH %s: read %s, metrics.jsonl %s" % (tag, got[:4], want.get(tag, [])[:4]))
            bad += 1
        if tag.startswith(("underflow/", "saturation/")) and not tag.endswith("/input"):
            continue  # one role per operand kind is enough to show
        shown = "(timing)" if tag in TIMED else "first %.7g last %.7g" % (got[0][1], got[-1][1])
        print("  %-40s %3d points, steps %d..%d, %s: %s" %
              (tag, len(got), got[0][0], got[-1][0], shown, "equal" if same else "DIFFERENT"))
    print("  %d tags, %d scalars read by EventAccumulator, %s metrics.jsonl" %
          (len(tags), total, "all equal to" if not bad else "NOT all equal to"))
    return bad


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: tensorboard_check.py AMPTRAIN")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print("tensorboard %s, EventAccumulator (scripts/tensorboard_check.py); %s, CPU %s "
          "(the values are this CPU's)" % (tb_version.VERSION, time.strftime("%Y-%m-%d", time.gmtime()), cpu))
    with tempfile.TemporaryDirectory() as work:
        bad = sum(check(os.path.abspath(sys.argv[1]), *r, work) for r in RUNS)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
