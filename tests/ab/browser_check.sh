#!/bin/sh
# browser_check.sh REPORT.html NARMS [CHART-ID...]
# Renders an `amptrain ab` report in headless Chromium (Debian's `chromium`)
# and checks the DOM it built: no console messages (no script errors, nothing
# blocked), nothing fetched from outside the file, and every chart present
# with data: chart-loss, chart-eval, chart-scale, chart-steptime, chart-memory
# and one chart-heat-<i> per arm, each holding a series per arm whose path
# `d` holds coordinates (or whose rects have a size). Each CHART-ID named
# after NARMS must be there too; one ending in -<i> is arm i's chart. The
# recommendation must head the page (before the verdict table), and an
# argument emulated:NAME says arm NAME must carry the "emulated" mark.
# The page is rendered in a 1,280 px wide window, and the verdict table must
# fit it: no cell's right edge past the viewport, no sideways scrolling (a
# copy of the report gets a script that measures the layout after load).
# Exit 77 (CTest skip) when chromium is not installed.
set -u
report=$1
narms=$2
shift 2
command -v chromium >/dev/null 2>&1 || { echo "chromium is not installed: skipping"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "python3 is not installed: skipping"; exit 77; }
[ -r "$report" ] || { echo "browser_check: $report is missing"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ab_browser.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# The copy, with the probe before </body>: the viewport's width, the page's
# scroll width and the rightmost edge of the verdict table and its cells.
probe='<script>addEventListener("load",function(){var t=document.querySelector("table.verdict"),d=document.documentElement,o=document.createElement("pre"),r=-1;if(t){r=t.getBoundingClientRect().right;t.querySelectorAll("th,td").forEach(function(c){r=Math.max(r,c.getBoundingClientRect().right)})}o.id="layout-probe";o.textContent=JSON.stringify({viewport:d.clientWidth,scroll:d.scrollWidth,right:r});document.body.appendChild(o)})</script>'
python3 -c 'import sys; s = open(sys.argv[1], encoding="utf-8").read(); i = s.rindex("</body>"); open(sys.argv[2], "w", encoding="utf-8").write(s[:i] + sys.argv[3] + s[i:])' \
    "$report" "$tmp/report.html" "$probe" || exit 1
# A private profile: nothing from the user's, and no first-run noise.
timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$tmp/profile" --enable-logging=stderr --v=0 --window-size=1280,900 \
    --dump-dom "file://$tmp/report.html" >"$tmp/dom.html" 2>"$tmp/stderr"
rc=$?
if [ "$rc" -ne 0 ] || [ ! -s "$tmp/dom.html" ]; then
    echo "browser_check: chromium failed (exit $rc):"
    cat "$tmp/stderr"
    exit 1
fi
if grep -E ':CONSOLE[:(]|Uncaught' "$tmp/stderr"; then
    echo "browser_check: the page logged console messages (above)"
    exit 1
fi
python3 - "$tmp/dom.html" "$narms" "$@" <<'PY'
import json, re, sys
from html.parser import HTMLParser

dom, narms = open(sys.argv[1], encoding="utf-8").read(), int(sys.argv[2])
fail = []

class P(HTMLParser):
    def __init__(self):
        super().__init__()
        self.svg = None          # id of the chart svg we are in
        self.charts = {}         # id -> list of (tag, attrs) of data elements
        self.external = []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("src", "href", "xlink:href"):
            v = a.get(k) or ""
            if re.match(r"^(https?:)?//", v):
                self.external.append(v)
        if tag in ("script", "link", "iframe", "img") and (a.get("src") or a.get("href")):
            self.external.append(f"<{tag}>")
        if tag == "svg" and "chart" in (a.get("class") or "").split():
            self.svg = a.get("id")
            self.charts[self.svg] = []
        elif self.svg and "data" in (a.get("class") or "").split():
            self.charts[self.svg].append((tag, a))
    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None

p = P()
p.feed(dom)
if p.external:
    fail.append(f"the report loads external resources: {p.external}")
want = ["chart-loss", "chart-eval", "chart-scale", "chart-steptime", "chart-memory"]
want += [f"chart-heat-{i}" for i in range(narms)]
marks = [a[len("emulated:"):] for a in sys.argv[3:] if a.startswith("emulated:")]
sys.argv[3:] = [a for a in sys.argv[3:] if not a.startswith("emulated:")]
want += sys.argv[3:]
num = re.compile(r"-?\d+(\.\d+)?")
for cid in want:
    if cid not in p.charts:
        fail.append(f"{cid}: no <svg class=chart id={cid}>")
        continue
    items = p.charts[cid]
    arms = set()
    for tag, a in items:
        if tag == "path":
            d = a.get("d", "")
            if len(num.findall(d)) < 2:
                fail.append(f"{cid}: a data path has no coordinates: d={d!r}")
        elif tag == "rect":
            if not (float(a.get("width", 0)) > 0 and float(a.get("height", 0)) > 0):
                fail.append(f"{cid}: a data rect has no size")
        arms.add(a.get("data-arm"))
    per_arm = cid.startswith("chart-heat-") or cid in sys.argv[3:] and re.search(r"-\d+$", cid)
    need = {cid.rsplit("-", 1)[1]} if per_arm else {str(i) for i in range(narms)}
    if not need <= arms:
        fail.append(f"{cid}: series for arms {sorted(need - arms)} are missing (has {sorted(arms)})")
# the loss curves need more than one point each
for tag, a in p.charts.get("chart-loss", []):
    if tag == "path" and len(re.findall(r"[ML]", a.get("d", ""))) < 2:
        fail.append(f"chart-loss: arm {a.get('data-arm')} has a single point")
if "Verdict" not in dom or "<table" not in dom:
    fail.append("the verdict table is missing")
rec = dom.find('id="recommendation"')
if rec < 0 or "<b>Use " not in dom[rec:rec + 400]:
    fail.append("the recommendation is missing")
elif rec > dom.find("<h2>Verdict</h2>"):
    fail.append("the recommendation is not above the verdict table")
for name in marks:
    if not re.search(re.escape(name) + r' <span class="pill na emulated" title="[^"]+">emulated</span>', dom):
        fail.append(f"arm {name} is not marked emulated")
m = re.search(r'<pre id="layout-probe">([^<]*)</pre>', dom)
if not m:
    fail.append("the layout probe did not run")
else:
    lay = json.loads(m.group(1))
    if lay["viewport"] > 1280 or lay["viewport"] < 1200:
        fail.append(f"the window is not 1,280 px wide: the viewport is {lay['viewport']} px")
    if lay["right"] < 0:
        fail.append("the verdict table is missing (no table.verdict)")
    elif lay["right"] > lay["viewport"]:
        fail.append(f"the verdict table is cut off at 1,280 px: its right edge is at "
                    f"{lay['right']:.0f} px, the viewport {lay['viewport']} px wide")
    if lay["scroll"] > lay["viewport"]:
        fail.append(f"the page scrolls sideways at 1,280 px: {lay['scroll']} px wide")
for f in fail:
    print("browser_check:", f)
if not fail:
    print(f"browser_check: {len(want)} charts rendered, {sum(len(v) for v in p.charts.values())} "
          f"data elements; the verdict table's right edge at {lay['right']:.0f} of {lay['viewport']} px")
sys.exit(1 if fail else 0)
PY
