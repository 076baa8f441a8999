#!/usr/bin/env python3
"""formats_check.py STUDY_DIR TABLE.txt ARM:FORMAT...

Checks the telemetry per number format of an `amptrain ab` study (STUDY_DIR
holds report.html and runs/<arm>/seed-*/metrics.jsonl; TABLE.txt is what
`ab` printed). For each ARM:FORMAT (FORMAT fp8, mxfp8 or nvfp4; ARM given
by its index and name, as 1=tiny_fp8):

- the flushed and saturated values per step of the arm's FORMAT operands,
  recomputed here from the runs' metrics.jsonl step lines (summed over the
  operands, the mean over every step line of every seed), are nonzero;
- the report's verdict table shows them for the arm, and they equal the
  totals of the arm's operand table (its per-operand "per step" cells and
  its total row);
- the terminal's table shows the same figures on the arm's row;
- the report has a heat map of FORMAT titled by its format (the figure's
  caption and the chart's label), with its own colour key, holding the
  arm's map (chart-FORMAT-heat-INDEX), and no other format's map holds the
  arm's FORMAT operands.
"""
import glob
import json
import os
import re
import sys
from html.parser import HTMLParser

NAMES = {"fp8": "FP8", "mxfp8": "MXFP8", "nvfp4": "NVFP4"}
study, table_txt = sys.argv[1], sys.argv[2]
wants = []
for a in sys.argv[3:]:
    arm, fmt = a.split(":")
    idx, name = arm.split("=")
    wants.append((int(idx), name, fmt))
fail = []


def family(o):
    if o["format"] == "nvfp4":
        return "nvfp4"
    if o["format"] in ("e4m3", "e5m2"):
        return "mxfp8" if o["scaling"] == "mx32" else "fp8"
    return None


def recompute(name, fmt):
    files = glob.glob(os.path.join(study, "runs", name, "seed-*", "metrics.jsonl"))
    if not files:
        sys.exit(f"formats_check: no metrics.jsonl under {study}/runs/{name}")
    tot, steps = [0.0, 0.0], 0
    for fn in files:
        for line in open(fn, encoding="utf-8"):
            s = json.loads(line)
            if "fp8" not in s or "test_acc" in s:
                continue
            ops = [o for o in s["fp8"] if family(o) == fmt]
            if not ops:
                continue
            steps += 1
            tot[0] += sum(o["flushed"] for o in ops)
            tot[1] += sum(o["saturated"] for o in ops)
    return [t / steps for t in tot] if steps else [0.0, 0.0]


class P(HTMLParser):
    """The verdict rows' telemetry, the operand tables, the figures."""

    def __init__(self):
        super().__init__()
        self.in_verdict = False
        self.row = -1            # verdict body row = arm index
        self.verdict = {}        # (arm, fmt) -> (flushed, saturated)
        self.op_arm = None       # operand table of which arm (by title)
        self.title = None
        self.in_title = False
        self.per_step = {}       # (arm name, kind) -> list of values
        self.totals = {}         # (arm name, fmt) -> (flushed, saturated)
        self.figure = None       # figure's data-format
        self.caption = {}        # format -> caption's <b> text
        self.in_b = False
        self.heat_key = set()    # formats with a heat-key in their figure
        self.charts = {}         # svg id -> (figure format, aria-label)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "table" and "verdict" in cls:
            self.in_verdict = True
        elif self.in_verdict and tag == "tbody":
            self.row = -1
        elif self.in_verdict and tag == "tr":
            self.row += 1
        elif self.in_verdict and tag == "div" and "fmt" in cls and "data-flushed" in a:
            self.verdict[(self.row, a["data-format"])] = (
                float(a["data-flushed"]), float(a["data-saturated"]))
        elif tag == "div" and "heat-title" in cls:
            self.in_title, self.title = True, ""
        elif tag == "table" and "fp8" in cls:
            self.op_arm = self.title
        elif self.op_arm and tag == "td" and "per-step" in cls:
            self.per_step.setdefault((self.op_arm, a["data-kind"]), []).append(float(a["data-value"]))
        elif self.op_arm and tag == "tr" and "total" in cls:
            self.totals[(self.op_arm, a["data-format"])] = (
                float(a["data-flushed"]), float(a["data-saturated"]))
        elif tag == "figure":
            self.figure = a.get("data-format")
        elif tag == "b" and self.figure and self.figure not in self.caption:
            self.in_b, self.caption[self.figure] = True, ""
        elif tag == "div" and "heat-key" in cls and self.figure:
            if a.get("data-format") == self.figure:
                self.heat_key.add(self.figure)
        elif tag == "svg" and "chart" in cls:
            self.charts[a.get("id")] = (self.figure, a.get("aria-label") or "")

    def handle_endtag(self, tag):
        if tag == "table":
            self.in_verdict = False
            self.op_arm = None
        elif tag == "div" and self.in_title:
            self.in_title = False
        elif tag == "b":
            self.in_b = False
        elif tag == "figure":
            self.figure = None

    def handle_data(self, data):
        if self.in_title and self.title is not None and not self.title.strip():
            self.title += data
        if self.in_b:
            self.caption[self.figure] += data


p = P()
p.feed(open(os.path.join(study, "report.html"), encoding="utf-8").read())
table = open(table_txt, encoding="utf-8").read().splitlines()


def close(x, y, rel):
    return abs(x - y) <= rel * max(abs(x), abs(y), 1e-12)


for idx, name, fmt in wants:
    fam = NAMES[fmt]
    want = recompute(name, fmt)
    what = f"{name} ({fam})"
    if not (want[0] > 0 and want[1] > 0):
        fail.append(f"{what}: the runs flushed {want[0]} and saturated {want[1]} values per step; "
                    "the test needs both nonzero")
    got = p.verdict.get((idx, fmt))
    if got is None:
        fail.append(f"{what}: the verdict table shows no {fam} flushed/saturated counts "
                    f"(it shows {sorted(k[1] for k in p.verdict if k[0] == idx) or 'none'})")
    else:
        for k, kind in enumerate(("flushed", "saturated")):
            if not close(got[k], want[k], 1e-6):
                fail.append(f"{what}: the verdict table says {got[k]} {kind} per step, the "
                            f"metrics.jsonl files {want[k]}")
    tot = p.totals.get((name, fmt))
    cells = [sum(p.per_step.get((name, kind), [])) for kind in ("flushed", "saturated")]
    if tot is None:
        fail.append(f"{what}: the operand table has no {fam} total row")
    elif got is not None:
        for k, kind in enumerate(("flushed", "saturated")):
            if not close(tot[k], got[k], 1e-6):
                fail.append(f"{what}: {kind}: the operand table's total {tot[k]}, the verdict {got[k]}")
            if not close(cells[k], got[k], 1e-6):
                fail.append(f"{what}: {kind}: the operand table's cells sum to {cells[k]}, the verdict {got[k]}")
    row = [l for l in table if re.match(re.escape(name) + r"( \(emulated\))? ", l)]
    txt = f"{fam} {want[0]:.4g} flushed, {want[1]:.4g} saturated /step"
    if len(row) != 1:
        fail.append(f"{what}: {len(row)} rows of the terminal table start with the arm's name")
    elif txt not in row[0]:
        fail.append(f"{what}: the terminal table's row lacks '{txt}': {row[0].strip()}")
    cid = f"chart-{fmt}-heat-{idx}"
    if cid not in p.charts:
        fail.append(f"{what}: no heat map {cid}")
    else:
        figfmt, label = p.charts[cid]
        cap = p.caption.get(figfmt, "")
        if figfmt != fmt or not cap.startswith(f"{fam} "):
            fail.append(f"{what}: the heat map {cid} is in the figure titled '{cap}' ({figfmt})")
        if not label.startswith(f"{fam} "):
            fail.append(f"{what}: the heat map {cid} is labelled '{label}'")
        if fmt not in p.heat_key:
            fail.append(f"{what}: the {fam} heat map has no colour key of its own")
    for other in NAMES:
        oid = f"chart-{other}-heat-{idx}"
        if other != fmt and oid in p.charts and all(w[0] != idx or w[2] != other for w in wants):
            fail.append(f"{what}: the arm also has a {NAMES[other]} heat map {oid}")
    print(f"formats_check: {what}: {want[0]:.4g} flushed, {want[1]:.4g} saturated per step")
for f in fail:
    print("formats_check:", f)
sys.exit(1 if fail else 0)
