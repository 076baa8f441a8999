#!/usr/bin/env python3
"""memory_check.py OUTDIR TERMINAL_TXT ARM...

The memory split of an `amptrain ab` study, checked against the runs'
summary.json files (OUTDIR/runs/ARM/seed-*/summary.json): the terminal's
"memory by category" table and report.html's table (id memory-categories)
list every category of memory_peak_bytes that is nonzero in some arm, each
arm's bytes are the mean over its seeds, and the parts (every category but
total and device_used) add up to the total row, arm by arm."""
import glob
import json
import re
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def expected(out, arms):
    mem = {}
    for arm in arms:
        files = sorted(glob.glob("%s/runs/%s/seed-*/summary.json" % (out, arm)))
        if not files:
            fail("no summary.json under %s/runs/%s" % (out, arm))
        rows = [json.load(open(p))["memory_peak_bytes"] for p in files]
        mem[arm] = {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
    cats = [k for k in mem[arms[0]] if k != "total" and any(mem[a][k] > 0 for a in arms)]
    return mem, cats + ["total"]


def check(where, table, mem, cats, arms):
    if list(table) != cats:
        fail("%s: categories %s, summary.json's nonzero ones are %s" % (where, list(table), cats))
    for i, arm in enumerate(arms):
        for k in cats:
            if table[k][i] != round(mem[arm][k]):
                fail("%s: %s %s is %d bytes, summary.json says %d" % (where, arm, k, table[k][i], mem[arm][k]))
        parts = sum(table[k][i] for k in cats if k not in ("total", "device_used"))
        if parts != table["total"][i]:
            fail("%s: %s's categories add up to %d, its total row is %d" % (where, arm, parts, table["total"][i]))
    print("ok  %s: %d categories x %d arms, the parts add up to the total" % (where, len(cats), len(arms)))


def terminal(path, arms):
    text = open(path).read()
    at = text.find("memory by category")
    if at < 0:
        fail("%s: no \"memory by category\" table" % path)
    lines = text[at:].splitlines()[1:]
    if lines[0].split() != ["category"] + arms:
        fail("%s: header %r, expected the arms %s" % (path, lines[0], arms))
    table = {}
    for line in lines[1:]:
        if not line.strip() or line.startswith("("):
            break
        name = line.split()[0]
        # each arm's bytes lead its cell; the change that follows is signed
        nums = re.findall(r"(?<![+\-\d,])(\d[\d,]*)(?![\d,%])", line[len(name):])
        table[name] = [int(n.replace(",", "")) for n in nums]
        if len(table[name]) != len(arms):
            fail("%s: row %r has %d byte counts for %d arms" % (path, line, len(table[name]), len(arms)))
    return table


def report(path):
    html = open(path).read()
    m = re.search(r'<table class="runs" id="memory-categories">.*?</table>', html, re.S)
    if not m:
        fail("%s: no table id=memory-categories" % path)
    table = {}
    for row in re.findall(r"<tr[^>]*><td>([^<]+)</td>(.*?)</tr>", m.group(0), re.S):
        table[row[0]] = [int(v) for v in re.findall(r'data-bytes="(\d+)"', row[1])]
    return table


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        sys.exit(2)
    out, txt, arms = sys.argv[1], sys.argv[2], sys.argv[3:]
    mem, cats = expected(out, arms)
    check("terminal", terminal(txt, arms), mem, cats, arms)
    check("report.html", report(out + "/report.html"), mem, cats, arms)


main()
