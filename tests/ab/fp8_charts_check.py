#!/usr/bin/env python3
"""fp8_charts_check.py REPORT.html RUNS_DIR ARM_INDEX

Checks the FP8 charts of an `amptrain ab` report against the metrics.jsonl
files of one arm's runs (RUNS_DIR/seed-*/metrics.jsonl):

- chart-fp8-scale-<ARM>: one path per per-tensor scaled (layer, role) of the
  first seed, whose data-scales lists exactly the steps where that operand's
  scale changes and the new scale, and whose `d` has a vertex per change;
- chart-fp8-heat-<ARM>: per (role, layer) and kind (saturated, flushed) one
  cell per span of steps, whose data-value is the mean count per step over
  the span and the seeds, recomputed here from the step lines.
"""
import glob
import json
import math
import os
import re
import sys
from html.parser import HTMLParser

report, runs_dir, arm = sys.argv[1], sys.argv[2], sys.argv[3]
BUCKETS = 30  # FP8_BUCKETS in core/ab/ab_report.c
fail = []


def seed_of(path):
    return int(re.search(r"seed-(\d+)", path).group(1))


files = sorted(glob.glob(os.path.join(runs_dir, "seed-*", "metrics.jsonl")), key=seed_of)
if not files:
    sys.exit(f"fp8_charts_check: no {runs_dir}/seed-*/metrics.jsonl")
runs = []
for fn in files:
    steps = [json.loads(l) for l in open(fn, encoding="utf-8")]
    runs.append([s for s in steps if "test_acc" not in s and "fp8" in s])
if not runs[0]:
    sys.exit(f"fp8_charts_check: {files[0]} has no step line with an fp8 array")


class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.svg = None
        self.items = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "chart" in (a.get("class") or "").split():
            self.svg = a.get("id")
            self.items[self.svg] = []
        elif self.svg and "data" in (a.get("class") or "").split():
            self.items[self.svg].append((tag, a))

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None


p = P()
p.feed(open(report, encoding="utf-8").read())


def close(a, b):
    return a == b or abs(a - b) <= 1e-6 * max(abs(a), abs(b))


# ---- the scale chart: the first seed, per-tensor operands only
first = runs[0]
slots = [(o["layer"], o["role"]) for o in first[0]["fp8"]]
tensor = [i for i, o in enumerate(first[0]["fp8"]) if o["scaling"] != "mx32"]
sid = f"chart-fp8-scale-{arm}"
if tensor and sid not in p.items:
    fail.append(f"{sid}: missing")
paths = {}
for tag, a in p.items.get(sid, []):
    if tag == "path" and a.get("data-arm") == arm:
        paths[(a.get("data-layer"), a.get("data-role"))] = a
want = {slots[i] for i in tensor}
if set(paths) != want:
    fail.append(f"{sid}: operands {sorted(set(paths) ^ want)} differ from metrics.jsonl's")
for i in tensor:
    a = paths.get(slots[i])
    if a is None:
        continue
    changes, prev = [], None
    for s in first:
        v = s["fp8"][i]["scale"]
        if v is not None and v > 0 and v != prev:
            changes.append((s["step"], v))
            prev = v
    got = [(int(t.split(":")[0]), float(t.split(":")[1])) for t in a.get("data-scales", "").split()]
    if len(got) != len(changes) or any(g[0] != c[0] or not close(g[1], c[1]) for g, c in zip(got, changes)):
        fail.append(f"{sid}: {slots[i]} data-scales {got[:4]}... != metrics {changes[:4]}...")
    d = a.get("d", "")
    if d.count("M") != 1 or d.count("V") != len(changes) - 1:
        fail.append(f"{sid}: {slots[i]} path has {d.count('V')} changes, metrics {len(changes) - 1}")

# ---- the heat map: mean count per step over each span and the seeds
hid = f"chart-fp8-heat-{arm}"
cells = {}
for tag, a in p.items.get(hid, []):
    if tag == "rect":
        cells.setdefault((a["data-role"], a["data-layer"], a["data-kind"]), []).append(a)
if not cells:
    fail.append(f"{hid}: no cells")
npts = min(len(r) for r in runs)
nb = min(npts, BUCKETS)
for i, (layer, role) in enumerate(slots):
    for kind in ("saturated", "flushed"):
        row = cells.get((role, layer, kind), [])
        if len(row) != nb:
            fail.append(f"{hid}: {role} {layer} {kind}: {len(row)} cells, expected {nb}")
            continue
        for j, c in enumerate(row):
            i0, i1 = npts * j // nb, npts * (j + 1) // nb
            want_v = sum(r[k]["fp8"][i][kind] for r in runs for k in range(i0, i1)) / len(runs) / (i1 - i0)
            got_v = float(c["data-value"])
            if not close(got_v, want_v) or int(c["data-step0"]) != first[i0]["step"] \
                    or int(c["data-step1"]) != first[i1 - 1]["step"]:
                fail.append(f"{hid}: {role} {layer} {kind} span {j}: {got_v} steps "
                            f"{c['data-step0']}-{c['data-step1']}, expected {want_v} steps "
                            f"{first[i0]['step']}-{first[i1 - 1]['step']}")
                break
            if not math.isfinite(got_v) or (got_v > 0) != (c.get("fill") != "#f7f9f7"):
                fail.append(f"{hid}: {role} {layer} {kind} span {j}: colour {c.get('fill')} for {got_v}")
                break
nonzero = sum(float(c["data-value"]) > 0 for row in cells.values() for c in row)
for f in fail[:20]:
    print("fp8_charts_check:", f)
if not fail:
    print(f"fp8_charts_check: {len(paths)} scale lines, {sum(map(len, cells.values()))} heat cells "
          f"({nonzero} nonzero) over {len(runs)} seed(s) agree with metrics.jsonl")
sys.exit(1 if fail else 0)
