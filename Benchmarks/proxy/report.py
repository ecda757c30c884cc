"""Turns the proxy benchmark's results.json into RESULTS.md and results.png.

Usage: report.py [results.json [OUT_DIR]]   (bench_proxy.py calls write() at the end of a run)

Per configuration, output format and concurrency: the median over rounds of req/s, CPU ms per request, p50 and
p99 latency, and the largest peak RSS of any round. Ratios are to thumbor's best configuration at that format and
concurrency (the one with the highest median req/s), and the goals of issue 22 are marked met or not.
"""

import json
import os
import statistics
import sys

# Issue 22's goals and the published imgproxy ratios to thumbor it quotes (three independent runs).
GOAL_RPS = {"jpeg": 2.0, "png": 2.0, "webp": 2.0, "avif": 1.3}
GOAL_RSS = 1.5
IMGPROXY = {"jpeg": "1.34–1.54×", "png": "1.64–2.16×", "webp": "1.45–1.67×", "avif": "1.0–1.26×"}
NAMES = {"jpeg": "JPEG", "png": "PNG", "webp": "WebP", "avif": "AVIF"}


def summarize(data):
    """{(config, format, concurrency): {...medians...}}"""
    groups = {}
    for run in data["runs"]:
        groups.setdefault((run["config"], run["format"], run["concurrency"]), []).append(run)
    table = {}
    for key, runs in groups.items():
        med = lambda name: statistics.median(r[name] for r in runs)  # noqa: E731
        table[key] = {
            "rounds": len(runs), "rps": med("rps"), "rps_min": min(r["rps"] for r in runs),
            "rps_max": max(r["rps"] for r in runs), "cpu": med("cpu_ms_per_request"), "p50": med("p50_ms"),
            "p99": med("p99_ms"), "rss": max(r["peak_rss_mb"] for r in runs),
            "requests": sum(r["requests"] for r in runs),
            "bad": sum(r["bad_status"] + r["bad_format"] + r["bad_size"] for r in runs),
            "socket_errors": sum(sum(r["socket_errors"].values()) for r in runs),
            "sample_problems": [p for r in runs for p in r["sample_problems"]],
            "origin": sum(r.get("origin_requests_nginx", 0) for r in runs),
            "machine_busy": statistics.median(r["machine_busy_cores"] for r in runs),
            "server_cores": statistics.median(r["server_cpu_cores"] for r in runs),
        }
    return table


def best_thumbor(table, configs, fmt, concurrency):
    candidates = [(table[(c["id"], fmt, concurrency)]["rps"], c["id"]) for c in configs
                  if c["server"] == "thumbor" and (c["id"], fmt, concurrency) in table]
    return max(candidates)[1] if candidates else None


def mark(ok):
    return "**met**" if ok else "not met"


def vips_section(data, table, formats, add):
    """Issue 34's table: the ThumbnailServer's CPU per request against libvips's per thumbnail, mean output sizes
    and 2-core rates, per format, from the same run."""
    meta = data["meta"]
    runs = data.get("vips_runs") or []
    if not runs:
        return
    first = runs[0]
    add(f"## Against libvips {first['libvips']} in-process (issue 34)")
    add("")
    add(f"libvips {first['libvips']} through pyvips {first['pyvips']} (the `pyvips-binary` wheel's libvips, "
        "from PyPI), in-process on the same sources held in memory: no HTTP, no cache, one libvips thread per "
        f"process, {first['processes']} processes side by side on CPUs {meta['cpus']} (vips_worker.py). Each "
        "thumbnail is `thumbnail_buffer(source, 512, height=512)` then `write_to_buffer` in the source's format "
        "with libvips's default save settings and the ThumbnailServer's quality for the format: "
        + "; ".join(f"{NAMES[f]} `{json.dumps(r['save']) if r['save'] else 'defaults'}`"
                    for f, r in {r['format']: r for r in runs}.items())
        + " (libvips's PNG defaults: zlib level 6, no row filter; its AVIF default, effort 4, is libaom speed 5, where "
        "the ThumbnailServer encodes AVIF at libavif speed 6, its default since 2026-11-29 (speed 10 before): the "
        "AVIF row compares the two defaults, not equal efforts). libvips's CPU is measured inside its calls "
        "(process CPU time, every thread), so it leaves out the loop and the checks around them; the "
        "ThumbnailServer's is all its CPU per answered request (HTTP, fetch from nginx, decode, resize, encode, "
        "cache stores). Goal (issue 34): CPU per request ≤ 0.8× libvips's per thumbnail (the larger of the 2- "
        "and 8-client figures), mean output ≤ libvips's, for every format. Mean sizes: every source's thumbnail "
        "once on each side (the same sources).")
    add("")
    add("| output | ours: CPU ms/request (2 / 8 clients) | libvips: CPU ms/thumbnail | ratio | ≤ 0.8× | "
        "ours: mean KB | libvips: mean KB | ≤ libvips | ours: req/s (2 / 8 clients) | libvips: thumbnails/s "
        "(2 processes) | checked |")
    add("| --- | ---: | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | --- |")
    surveys = meta.get("sdk_size_survey", {})
    for fmt in formats:
        vips = [r for r in runs if r["format"] == fmt]
        if not vips:
            continue
        cpu_vips = statistics.median(r["cpu_ms_per_thumbnail"] for r in vips)
        rate_vips = statistics.median(r["rate"] for r in vips)
        survey_runs = [r for r in vips if r.get("first_pass_sizes")]
        vips_kb = statistics.mean(survey_runs[0]["first_pass_sizes"]) / 1000 if survey_runs else float("nan")
        ours = [table.get(("sdk", fmt, c)) for c in meta["concurrency"]]
        ours = [o for o in ours if o]
        survey = surveys.get(fmt, {})
        ours_kb = statistics.mean(survey["sizes"]) / 1000 if survey.get("sizes") else None
        wrong = sum(r["wrong"] for r in vips)
        checked = (f"libvips: all {sum(r['checked_ok'] for r in vips):,} right" if wrong == 0 else
                   f"libvips: **{wrong} wrong** ({'; '.join(vips[0]['wrong_examples'][:2])})")
        if survey.get("wrong"):
            checked += f"; ours: **{len(survey['wrong'])} wrong in the survey** ({survey['wrong'][0]})"
        if not ours:
            add(f"| {NAMES[fmt]} | — | {cpu_vips:.1f} | — | — | — | {vips_kb:.1f} | — | — | {rate_vips:.1f} | "
                f"{checked} |")
            continue
        cpu_ours = max(o["cpu"] for o in ours)
        ratio = cpu_ours / cpu_vips
        size_cell = f"{ours_kb:.1f}" if ours_kb is not None else "—"
        size_goal = mark(ours_kb <= vips_kb) if ours_kb is not None else "—"
        cpu_cells = " / ".join(f"{o['cpu']:.1f}" for o in ours)
        rate_cells = " / ".join(f"{o['rps']:.1f}" for o in ours)
        add(f"| {NAMES[fmt]} | {cpu_cells} | {cpu_vips:.1f} | {ratio:.2f}× | {mark(ratio <= 0.8)} | {size_cell} | "
            f"{vips_kb:.1f} | {size_goal} | {rate_cells} | {rate_vips:.1f} | {checked} |")
    add("")
    busy = [r["machine_busy_cores"] for r in runs if r["machine_busy_cores"] is not None]
    if busy:
        add(f"libvips's runs kept {statistics.median(busy):.2f} cores of the machine busy (median over runs; "
            f"{first['processes']} processes). On a shared machine the rates measure who won more of a contended "
            "CPU; the CPU figures, measured side by side in the same run, are the steadier comparison.")
        add("")


def write(data, out_dir):
    meta, configs = data["meta"], data["configs"]
    labels = {c["id"]: c["label"] for c in configs}
    table = summarize(data)
    formats = [f for f in meta["formats"] if any(k[1] == f for k in table)]
    lines = []
    add = lines.append
    # `make bench-vips` runs no thumbor: its sections (issue 22's goals, the ratio column) would be empty.
    has_thumbor = any(k[0] != "sdk" for k in table)
    target = "make bench-proxy" if has_thumbor else "make bench-vips"
    add("# Image-proxy benchmark: ThumbnailServer vs " +
        " and ".join((["thumbor 7.8"] if has_thumbor else []) + (["libvips"] if data.get("vips_runs") else [])))
    add("")
    add(f"Measured {meta['started']} → {meta['finished']} by `{target}` (Benchmarks/proxy/bench.sh); "
        "see README.md beside this file for the method.")
    add("")
    dirty = " (with uncommitted changes to the server or SDK)" if meta["server_tree_dirty"] else ""
    source = meta.get("server_source_commit", meta["server_commit"])
    add(f"- **Server measured**: the ThumbnailServer and SDK as of commit `{source}` (the last commit that changed "
        "`Examples/ThumbnailServer`, `Sources`, `Plugins` or `Package.swift`), built from the checkout at "
        f"`{meta['server_commit']}` (branch `{meta['server_branch']}`){dirty}, release build of "
        f"{meta['server_binary_built']}. Request: `{meta['server_path']}`, output format asked for with "
        "`Accept: image/<format>`; default configuration (memory and disk caches on).")
    if has_thumbor:
        add(f"- **Baseline**: thumbor {meta['thumbor']} from PyPI (Pillow {meta['pillow']}: libjpeg-turbo "
            f"{meta['libjpeg']}, libwebp {meta['libwebp']}, libavif {meta['libavif']}), `{meta['thumbor_path']}`, "
            "no source storage, no result storage, quality 80, pycurl.")
    add(f"- **Workload**: {meta['sources']} distinct photos ({', '.join(meta['source_sizes'])}) cut from the "
        "corpus's camera JPEGs, served by a local nginx in each format; every request a fit-inside 512x512 in the "
        "source's format, its source URL never asked before (so every request is a result-cache miss on both "
        "servers and fetches its source). wrk, rotating through the list; "
        f"{meta['duration_s']} s measured (AVIF: {meta.get('duration_avif_s', meta['duration_s'])} s) after "
        f"{meta['warmup_s']} s of warm-up per run; {meta['rounds']} rounds, "
        "the configurations alternated within each round; figures are medians over rounds (peak RSS: the largest).")
    # Cores busy outside the measured server (nginx and wrk included), median over runs: the evidence for or against
    # "shared with other work", rather than a sentence written whatever the run saw.
    others = statistics.median(max(0.0, s["machine_busy"] - s["server_cores"]) for s in table.values())
    if others > 0.25:
        sharing = (f"**The machine was shared with other work** during this run ({others:.2f} cores busy outside the "
                   "server, median over runs), so req/s and latency are depressed and noisy; CPU ms per request is "
                   "the steadier figure.")
    else:
        sharing = (f"Nothing else ran: {others:.2f} cores busy outside the measured server (nginx and wrk "
                   "included), median over runs.")
    add(f"- **Machine**: {meta['cores']} cores ({meta['cpu']}); both servers pinned to CPUs {meta['cpus']} "
        "(nginx and wrk share them). Load average at start "
        f"{meta['loadavg_start']}, at the end {meta['loadavg_end']}. {sharing} The last column of the table below: "
        "cores the server used / cores busy on the whole machine, servers included, in the measured window.")
    meta["_shared"] = others > 0.25
    for note in meta.get("notes", []):
        add(f"- **Note**: {note}")
    for fmt, problems in meta.get("preflight_failures", {}).items():
        add(f"- **{NAMES.get(fmt, fmt)} not comparable**: {'; '.join(problems)}")
    add("")

    vips_section(data, table, formats, add)
    if has_thumbor:
        thumbor_goals(data, table, formats, add)
    every_configuration(data, table, formats, add, labels)
    herd_section(data, add)

    add("## Reproduce")
    add("")
    add("```sh")
    add(f"{target:<38} # installs, builds (release), measures, writes this file")
    add(f"DURATION={meta['duration_s']} WARMUP={meta['warmup_s']} ROUNDS={meta['rounds']} {target}   "
        "# this run's settings")
    add("```")
    add("")
    with open(os.path.join(out_dir, "RESULTS.md"), "w") as f:
        f.write("\n".join(lines))
    if has_thumbor:
        chart(data, table, formats, os.path.join(out_dir, "results.png"))
    else:
        vips_chart(data, table, formats, os.path.join(out_dir, "results.png"))


def thumbor_goals(data, table, formats, add):
    """Issue 22's table: the ThumbnailServer against thumbor's best configuration per format and concurrency."""
    meta, configs = data["meta"], data["configs"]
    add("## Goals of issue 22")
    add("")
    add("Ratios are the ThumbnailServer's figure over thumbor's best configuration at the same format and "
        "concurrency (named in the table below). Goals: req/s ≥ 2.0× thumbor's best on JPEG, PNG and WebP, "
        "≥ 1.3× on "
        "AVIF; p99 ≤ thumbor's; peak RSS ≤ 1.5× thumbor's (all its processes summed).")
    add("")
    add("| output | clients | req/s ratio | goal | p99: ours / thumbor's | peak RSS ratio | CPU/req ratio | "
        "imgproxy (published) |")
    add("| --- | ---: | ---: | --- | --- | --- | ---: | ---: |")
    for fmt in formats:
        for c in meta["concurrency"]:
            sdk = table.get(("sdk", fmt, c))
            best = best_thumbor(table, configs, fmt, c)
            if not sdk or not best:
                continue
            t = table[(best, fmt, c)]
            ratio = sdk["rps"] / t["rps"]
            rss = sdk["rss"] / t["rss"]
            add(f"| {NAMES[fmt]} | {c} | {ratio:.2f}× | ≥ {GOAL_RPS[fmt]}×: {mark(ratio >= GOAL_RPS[fmt])} | "
                f"{sdk['p99']:.0f} / {t['p99']:.0f} ms: {mark(sdk['p99'] <= t['p99'])} | "
                f"{rss:.1f}× ({sdk['rss']:.0f} / {t['rss']:.0f} MB): {mark(rss <= GOAL_RSS)} | "
                f"{sdk['cpu'] / t['cpu']:.2f}× | {IMGPROXY[fmt]} |")
    add("")
    sdk_runs = [r for r in data["runs"] if r["config"] == "sdk"]
    if sdk_runs:
        most = max(r["requests"] for r in sdk_runs)
        add(f"Peak RSS is read at the end of each run, after warm-up and at most {most:,} measured answers per run "
            "here. The ThumbnailServer keeps thumbnails in its memory cache by default, so its peak RSS grows with "
            "the answers a run makes until that cache is full: a longer or quieter run than this one gives a larger "
            "figure (issue 22 measured 1.2–2.0 GB after longer runs of JPEG).")
        add("")
    add("A CPU/req ratio above 1 means the ThumbnailServer spends more CPU per thumbnail than thumbor; its inverse "
        "estimates the req/s ratio both would reach saturating the same idle cores. On a shared machine (see the "
        "last column below: the cores the server got) the req/s ratios also measure who won more of a contended "
        "CPU, so read them with the CPU ratio beside them. The imgproxy "
        "column is imgproxy's published req/s ratio to thumbor on the same kind of workload (2 clients, 2 vCPUs); "
        "imgproxy cannot be built here, so it stands in for the Go servers.")
    add("")


def every_configuration(data, table, formats, add, labels):
    """Every configuration's figures; the ratio column (to thumbor's best) only when thumbor ran."""
    meta, configs = data["meta"], data["configs"]
    add("## Every configuration")
    add("")
    add("| output | clients | server | req/s (min–max) | ratio | CPU ms/req | p50 ms | p99 ms | peak RSS MB | "
        "checked | cores: server / machine |")
    add("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for fmt in formats:
        for c in meta["concurrency"]:
            best = best_thumbor(table, configs, fmt, c)
            for config in configs:
                s = table.get((config["id"], fmt, c))
                if not s:
                    continue
                ratio = f"{s['rps'] / table[(best, fmt, c)]['rps']:.2f}×" if best else "—"
                name = labels[config["id"]] + (" (thumbor's best)" if config["id"] == best else "")
                checked = (f"all {s['requests']:,} right" if s["bad"] == 0 and not s["sample_problems"]
                           else f"**{s['bad']} wrong**" + (f", samples: {s['sample_problems'][0]}"
                                                            if s["sample_problems"] else ""))
                if s["socket_errors"]:
                    checked += f", {s['socket_errors']} socket errors"
                add(f"| {NAMES[fmt]} | {c} | {name} | {s['rps']:.1f} ({s['rps_min']:.1f}–{s['rps_max']:.1f}) | "
                    f"{ratio} | {s['cpu']:.1f} | {s['p50']:.0f} | {s['p99']:.0f} | {s['rss']:.0f} | {checked} | "
                    f"{s['server_cores']:.2f} / {s['machine_busy']:.2f} |")
    add("")
    add("\"checked\": every answer's status, format (magic bytes) and size (longest side 512, the source's aspect "
        "ratio: 512x341 or 341x512 for 3:2 sources, ±1 pixel of rounding) in wrk's Lua `response()`, and three "
        "answers per run decoded fully with Pillow. Origin requests counted by nginx in the measured windows: "
        + ", ".join(f"{labels[c['id']]} {sum(s['origin'] for k, s in table.items() if k[0] == c['id']):,} for "
                    f"{sum(s['requests'] for k, s in table.items() if k[0] == c['id']):,} answers"
                    for c in configs)
        + " (a few more origin requests than answers: requests still in flight when wrk stopped).")
    add("")


def herd_section(data, add):
    """The herd of identical cold requests, when the run made one."""
    if data.get("herd"):
        add("## Herd: 100 concurrent identical cold requests to one ThumbnailServer")
        add("")
        add("| output | answers 200 | distinct bodies | origin requests (nginx log) | " +
            " | ".join(data["herd"][0]["metrics"].keys()) + " | seconds |")
        add("| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in data["herd"][0]["metrics"]) + " | ---: |")
        for h in data["herd"]:
            cells = [("not exposed" if v is None else f"{v['delta']:g}") for v in h["metrics"].values()]
            add(f"| {NAMES[h['format']]} | {h['ok']} / {h['requests']} | {h['distinct_bodies']} | "
                f"{h['origin_requests_nginx']} | " + " | ".join(cells) + f" | {h['seconds']:.2f} |")
        exposed = sorted({v["metric"] for h in data["herd"] for v in h["metrics"].values() if v})
        add("")
        add("The goal: one origin request, one decode, one resize, one encode. Metric columns are the change of the "
            f"server's counters over the herd (read from its metrics: {', '.join(f'`{m}`' for m in exposed)}); "
            "\"not exposed\" means this server version has no counter for it (names in servers.py).")
        add("")


def vips_chart(data, table, formats, path):
    """`make bench-vips`: CPU per thumbnail per format, the ThumbnailServer's per request (each concurrency) beside
    libvips's per thumbnail in-process (log scale; bar labels in ms)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meta, runs = data["meta"], data.get("vips_runs") or []
    series = [(f"ThumbnailServer, {c} clients", "#d62728" if i == 0 else "#ff9896",
               [table[("sdk", f, c)]["cpu"] if ("sdk", f, c) in table else None for f in formats])
              for i, c in enumerate(meta["concurrency"])]
    series.append(("libvips in-process", "#2ca02c",
                   [statistics.median(r["cpu_ms_per_thumbnail"] for r in runs if r["format"] == f)
                    if any(r["format"] == f for r in runs) else None for f in formats]))
    fig, ax = plt.subplots(figsize=(8, 5))
    width = 0.8 / len(series)
    for i, (label, color, values) in enumerate(series):
        xs = [x + (i - (len(series) - 1) / 2) * width for x, v in enumerate(values) if v is not None]
        ys = [v for v in values if v is not None]
        bars = ax.bar(xs, ys, width, label=label, color=color)
        for bar, value in zip(bars, ys):
            ax.annotate(f"{value:.3g}", (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                        va="bottom", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("CPU ms per thumbnail (log; lower is better)")
    ax.set_xticks(range(len(formats)), [NAMES[f] for f in formats])
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    commit = meta.get("server_source_commit", meta["server_commit"])
    ax.set_title(f"Fit-inside 512x512 of ~2.5 MP photos: ThumbnailServer {commit} vs libvips in-process\n"
                 f"{meta['started'][:10]}, {meta['cores']} cores (load {meta['loadavg_start']} at start)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def chart(data, table, formats, path):
    """Top: req/s relative to thumbor's best configuration (the goal and imgproxy's published range marked);
    bottom: CPU ms per request (log scale). One column per concurrency."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    meta, configs = data["meta"], data["configs"]
    concurrencies = meta["concurrency"]
    fig, axes = plt.subplots(2, len(concurrencies), figsize=(6.5 * len(concurrencies), 9), squeeze=False)
    colors = {"sdk": "#d62728", "thumbor1": "#08519c", "thumbor2": "#4292c6", "thumbor2c": "#9ecae1"}
    width = 0.8 / len(configs)
    for col, c in enumerate(concurrencies):
        best = {f: best_thumbor(table, configs, f, c) for f in formats}
        for row in (0, 1):
            ax = axes[row][col]
            for i, config in enumerate(configs):
                xs, values, texts = [], [], []
                for x, f in enumerate(formats):
                    s = table.get((config["id"], f, c))
                    if not s or not best[f]:
                        continue
                    xs.append(x + (i - (len(configs) - 1) / 2) * width)
                    if row == 0:
                        values.append(s["rps"] / table[(best[f], f, c)]["rps"])
                        texts.append(f"{s['rps']:.3g}")
                    else:
                        values.append(s["cpu"])
                        texts.append(f"{s['cpu']:.3g}")
                bars = ax.bar(xs, values, width, label=config["label"], color=colors.get(config["id"], "#999999"))
                for bar, text in zip(bars, texts):
                    ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center",
                                va="bottom", fontsize=7)
            if row == 0:
                for x, f in enumerate(formats):
                    ax.hlines(GOAL_RPS[f], x - 0.45, x + 0.45, colors="black", linestyles="dashed", linewidth=1)
                    low, high = (float(v) for v in IMGPROXY[f].rstrip("×").split("–"))
                    ax.fill_between([x - 0.45, x + 0.45], low, high, color="#2ca02c", alpha=0.15, linewidth=0)
                ax.set_ylabel("req/s ÷ thumbor's best (bar labels: req/s)")
                ax.set_title(f"throughput, {c} clients (dashed: goal; green: imgproxy published)", fontsize=10)
            else:
                ax.set_yscale("log")
                ax.set_ylabel("CPU ms per request (log)")
                ax.set_title(f"CPU per request, {c} clients (lower is better)", fontsize=10)
            ax.set_xticks(range(len(formats)), [NAMES[f] for f in formats])
            ax.grid(axis="y", alpha=0.3)
            if row == 0 and col == 0:
                ax.legend(fontsize=7, loc="upper left")
    commit = meta.get("server_source_commit", meta["server_commit"])
    fig.suptitle(f"Fit-inside 512x512 of ~2.5 MP photos in the source's format: ThumbnailServer "
                 f"{commit} vs thumbor {meta['thumbor']}\n{meta['started'][:10]}, {meta['cores']} cores"
                 f"{' shared with other work' if meta.get('_shared') else ''} (load {meta['loadavg_start']} at start)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    source = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "results.json")
    with open(source) as f:
        loaded = json.load(f)
    write(loaded, sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(source)))
