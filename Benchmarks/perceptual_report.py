#!/usr/bin/env python3
"""Turns PerceptualRunner's rows into RESULTS.md's perceptual section and the bytes-saved chart (issue 35 item 4).

    perceptual_report.py rows.tsv RESULTS.md chart.png started load-start load-end commit
"""
import csv
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows_path, results_path, chart_path, started, load_start, load_end, commit = sys.argv[1:8]
rows = list(csv.DictReader(open(rows_path), delimiter="\t"))
for r in rows:
    for k, v in r.items():
        if k not in ("format", "photo"):
            r[k] = float(v)

HEADER = "## Perceptual quality target and placeholders (issue 35; perceptual.sh)"


def ms(ns):
    return f"{ns / 1e6:.2f} ms" if ns >= 1e6 else f"{ns / 1e3:.0f} µs"


def mark(ok):
    return "✅" if ok else "❌"


groups = {}
for r in rows:
    groups.setdefault((int(r["size"]), r["format"], r["cap"]), []).append(r)

lines = [
    HEADER,
    "",
    f"Run {started} on {commit} by `Benchmarks/perceptual.sh` (load average {load_start} at the start, {load_end} at "
    "the end; 2 cores, shared). The corpus photos (8) decoded to fit each size (shrink-on-load), then per format at "
    "its default effort: fixed q 80, and the target = the median butteraugli distance (max norm) q 80 reaches on the "
    "set. CPU is process CPU time of one encode call (q 80: median of 5; target: the whole search, one run), "
    "single-threaded. Distances are measured on the decoded output against the pixels encoded.",
    "",
    "| size | format | quality cap | target (median q 80 distance) | mean bytes: target vs q 80 | worst distance: target vs q 80 "
    "| CPU per image: target vs one q 80 encode | encodes per image (mean, max) | mean quality chosen "
    "| butteraugli per evaluation (in q 80 encodes) | CPU ratio with a free metric (encodes × (encode + decode)) | goals (bytes ≤ 0.85×, "
    "worst ≤ q 80's, CPU ≤ 3×) |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
]
for (size, fmt, cap), g in sorted(
    groups.items(), key=lambda kv: (-kv[0][0], ["JPEG", "WebP", "AVIF"].index(kv[0][1]), -kv[0][2])
):
    target = g[0]["target"]
    bytes_q80 = statistics.mean(r["q80_bytes"] for r in g)
    bytes_t = statistics.mean(r["target_bytes"] for r in g)
    worst_q80 = max(r["q80_distance"] for r in g)
    worst_t = max(r["target_distance"] for r in g)
    cpu_q80 = statistics.mean(r["q80_cpu_ns"] for r in g)
    cpu_t = statistics.mean(r["target_cpu_ns"] for r in g)
    encodes = [r["target_encodes"] for r in g]
    metric = statistics.mean(r["metric_cpu_ns"] for r in g)
    # What the search would cost with a free metric: its encodes and decodes, each at the q 80 encode's and
    # decode's measured cost (an estimate from measured parts; subtracting the metric from the search's CPU is
    # noisier than the JPEG encode it would leave).
    cpu_without = statistics.mean(r["target_encodes"] * (r["q80_cpu_ns"] + r["decode_cpu_ns"]) for r in g)
    quality = statistics.mean(r["target_quality"] for r in g)
    bytes_ratio = bytes_t / bytes_q80
    cpu_ratio = cpu_t / cpu_q80
    goals = f"{mark(bytes_ratio <= 0.85)} {mark(worst_t <= worst_q80)} {mark(cpu_ratio <= 3)}"
    lines.append(
        f"| fit {size} | {fmt} | {'none' if cap >= 1 else f'q {cap * 100:.0f}'} | {target:.2f} | {bytes_t:,.0f} vs {bytes_q80:,.0f} B = {bytes_ratio:.2f}× "
        f"| {worst_t:.2f} vs {worst_q80:.2f} | {ms(cpu_t)} vs {ms(cpu_q80)} = {cpu_ratio:.1f}× "
        f"| {statistics.mean(encodes):.2f}, {max(encodes):.0f} | {quality:.2f} | {ms(metric)} ({metric / cpu_q80:.0f}×) "
        f"| {cpu_without / cpu_q80:.1f}× | {goals} |"
    )

lines += [
    "",
    "| size | BlurHash 4×3 per image (reduce to 32 px + hash) | ThumbHash per image (reduce to 100 px + hash) "
    "| one q 80 JPEG encode, for scale |",
    "|---|---|---|---|",
]
for size in sorted({int(r["size"]) for r in rows}, reverse=True):
    g = [r for r in rows if int(r["size"]) == size and r["format"] == "JPEG" and r["cap"] >= 1]
    lines.append(
        f"| fit {size} | {ms(statistics.mean(r['blurhash_cpu_ns'] for r in g))} "
        f"| {ms(statistics.mean(r['thumbhash_cpu_ns'] for r in g))} "
        f"| {ms(statistics.mean(r['q80_cpu_ns'] for r in g))} |"
    )
lines += ["", "Bytes saved per image: [perceptual.png](perceptual.png); every row: [perceptual.tsv](perceptual.tsv).", ""]
section = "\n".join(lines)

text = open(results_path).read()
if HEADER in text:
    start = text.index(HEADER)
    rest = text[start + len(HEADER):]
    nxt = rest.find("\n## ")
    text = text[:start] + section + (rest[nxt + 1:] if nxt >= 0 else "")
else:
    text = text.rstrip("\n") + "\n\n" + section
open(results_path, "w").write(text)
print(section)

fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
for ax, capped in zip(axes, [False, True]):
    labels, data = [], []
    for (size, fmt, cap), g in sorted(
        groups.items(), key=lambda kv: (["JPEG", "WebP", "AVIF"].index(kv[0][1]), -kv[0][0])
    ):
        if (cap < 1) != capped:
            continue
        labels.append(f"{fmt}\nfit {size}")
        data.append([100 * (1 - r["target_bytes"] / r["q80_bytes"]) for r in g])
    floor = -150
    clipped = [[max(v, floor) for v in values] for values in data]
    ax.boxplot(clipped, tick_labels=labels, showmeans=True, showfliers=False)
    for i, values in enumerate(data, start=1):
        inside = [v for v in values if v > floor]
        below = [v for v in values if v <= floor]
        ax.scatter([i] * len(inside), inside, s=14, alpha=0.6)
        ax.scatter([i] * len(below), [floor] * len(below), s=30, marker="v", color="red")
        for k, v in enumerate(below):
            ax.annotate(f"{v:.0f} %", (i, floor), textcoords="offset points", xytext=(6, 4 + 9 * k), fontsize=7)
    ax.set_ylim(floor - 10, 60)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.axhline(15, color="green", linewidth=0.8, linestyle="--", label="15 % saved (the goal, on the mean)")
    ax.set_title("target capped at q 80" if capped else "target alone (quality up to 100)", fontsize=10)
axes[0].set_ylabel("bytes saved vs fixed q 80 (%), per image (▼: below -150 %)")
axes[1].legend(loc="lower right", fontsize=8)
axes[1].annotate("▲ mean of the per-image savings; box: quartiles", (0.02, 0.02), xycoords="axes fraction", fontsize=8)
fig.suptitle("Perceptual target = median q 80 butteraugli distance (max norm), corpus photos", fontsize=11)
fig.tight_layout()
fig.savefig(chart_path, dpi=110)
