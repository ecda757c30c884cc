"""Issue 23, item 1: the RESULTS.md rows of HTTPLoader against a bare AsyncHTTPClient over several passes.

Reads the passes http-passes.sh wrote (<dir>/<pass>/*.histogram.percentiles.tsv, the p50 of each benchmark's
iterations) and compares, per pass, the CPU time of `HTTP_<set>_c<c>_loaderOnly` with `HTTP_<set>_c<c>_bareAHC`.
A row shows the median pass's figures, the median CPU ratio and the worst pass's. run.sh imports `rows`;
`python3 http_passes.py <dir>` prints them.
"""

import glob
import os
import re
import statistics
import sys

SETS = [("small1000", 1000, "1,000 small JPEGs"), ("photo200", 200, "200 photos of 30–200 KB"),
        ("2MP100", 100, "100 2 MP JPEGs")]
GOAL = 1.15
UNITS = {"ns": 1, "μs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}


def read_pass(path):
    """{benchmark: {metric: p50}} of one pass (wall-clock in ns)."""
    found = {}
    for tsv in glob.glob(os.path.join(path, "**", "*.histogram.percentiles.tsv"), recursive=True):
        parts = os.path.basename(tsv).split(".")
        name, metric = parts[2], parts[3]
        lines = open(tsv).read().splitlines()
        p50 = float(next(l.split("\t")[1] for l in lines[1:] if l.split("\t")[0] == "50"))
        unit = re.search(r"\((ns|μs|us|ms|s)\)", lines[0])
        if unit and metric in ("wallClock", "cpuTotal", "cpuUser", "cpuSystem"):
            p50 *= UNITS[unit.group(1)]
        found.setdefault(name, {})[metric] = p50
    return found


def read_passes(directory):
    return [read_pass(p) for p in sorted(glob.glob(os.path.join(directory, "*")), key=os.path.basename)
            if os.path.isdir(p)]


def fmt_time(ns):
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns / 1e6:.2f} ms"


def rows(directory):
    """Markdown rows in RESULTS.md's columns: issue, comparison, SDK, baseline, wall ratio, CPU ratio, goal."""
    passes = read_passes(directory) if directory and os.path.isdir(directory) else []
    out = []
    for label, count, desc in SETS:
        for c in (6, 64):
            lo, bare = f"HTTP_{label}_c{c}_loaderOnly", f"HTTP_{label}_c{c}_bareAHC"
            measured = []
            for p in passes:
                a, b = p.get(lo, {}), p.get(bare, {})
                if a.get("cpuTimeNs") and b.get("cpuTimeNs") and a.get("wallClock") and b.get("wallClock"):
                    measured.append((a["cpuTimeNs"] / b["cpuTimeNs"], a, b))
            what = (f"{desc}, c={c}: `HTTPLoader` vs bare AsyncHTTPClient `execute` (bytes only), CPU per request; "
                    f"rate — {len(measured)} passes, median (worst pass)")
            if not measured:
                out.append(f"| 23 | {what} | n/a | n/a | n/a | n/a | CPU ≤ {GOAL}× |")
                continue
            measured.sort(key=lambda m: m[0])
            median_ratio = statistics.median(m[0] for m in measured)
            worst = measured[-1][0]
            _, a, b = measured[(len(measured) - 1) // 2]  # the median pass (lower middle for an even count)
            walls = statistics.median(m[1]["wallClock"] / m[2]["wallClock"] for m in measured)
            sdk = f"CPU {fmt_time(a['cpuTimeNs'] / count)}/req; {count / (a['wallClock'] / 1e9):,.0f} req/s"
            base = f"CPU {fmt_time(b['cpuTimeNs'] / count)}/req; {count / (b['wallClock'] / 1e9):,.0f} req/s"
            met = "✅" if median_ratio <= GOAL else "❌"
            out.append(f"| 23 | {what} | {sdk} | {base} | {walls:.2f}× | {median_ratio:.2f}× ({worst:.2f}×) "
                       f"| CPU ≤ {GOAL}× {met} |")
    return out


if __name__ == "__main__":
    print("| issue | comparison | SDK | baseline | ratio (wall) | ratio (CPU) | goal |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows(sys.argv[1])))
