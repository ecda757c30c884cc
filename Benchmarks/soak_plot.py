#!/usr/bin/env python3
"""Plots a soak run (image-soak --csv) to a PNG: RSS, open descriptors, threads and loads per second.

Usage: soak_plot.py soak.csv soak.png [title]
Needs matplotlib (Debian: python3-matplotlib; run with /usr/bin/python3 if another python3 comes first).
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    source, target = sys.argv[1], sys.argv[2]
    title = sys.argv[3] if len(sys.argv) > 3 else "image-soak"
    with open(source, newline="") as handle:
        rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(handle)]
    t = [r["seconds"] / 60 for r in rows]
    rate = [0.0] + [
        (b["completed_loads"] - a["completed_loads"]) / max(1e-9, b["seconds"] - a["seconds"])
        for a, b in zip(rows, rows[1:])
    ]
    fig, axes = plt.subplots(4, 1, figsize=(10, 10), sharex=True)
    memory = [r.get("rss_trimmed_bytes", r["rss_bytes"]) / 1048576 for r in rows]
    heap = [r["heap_in_use_bytes"] / 1048576 for r in rows] if "heap_in_use_bytes" in rows[0] else None
    series = [
        (memory, "RSS after malloc_trim (MiB)" + (", heap in use (orange)" if heap else "")),
        ([r["open_fds"] for r in rows], "open file descriptors"),
        ([r["threads"] for r in rows], "threads"),
        (rate, "loads completed per second"),
    ]
    if heap:
        axes[0].plot(t, heap, linewidth=0.8, color="tab:orange")
    for axis, (values, label) in zip(axes, series):
        axis.plot(t, values, linewidth=0.8, color="tab:blue")
        axis.set_ylabel(label)
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
    axes[-1].set_xlabel("minutes")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(target, dpi=90)


if __name__ == "__main__":
    main()
