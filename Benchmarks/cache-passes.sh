#!/usr/bin/env bash
# The memory-hit, disk-hit and store rows of issue 23 (items 2, 3, 4) over five passes (item 8): each pass runs the
# SDK rows and their baselines of CoreBenchmarks (memory hits) and CacheBenchmarks (disk) in the same benchmark
# process run, each pass gives one ratio per row (SDK median ÷ baseline median, wall and CPU), and the table shows
# the median and the worst pass.
#
#   Benchmarks/cache-passes.sh [passes]   default 5; writes .build/bench-cache-passes/summary.json and prints the
#                                         rows; run.sh calls it and puts the rows in RESULTS.md
#
# A row meets its goal at the median of the passes; the worst pass says how far one run can stray on this machine.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
SWIFT="${SWIFT:-swift}"
PASSES="${1:-5}"
OUT="$HERE/.build/bench-cache-passes"
FILTER='^Cache_(diskHit_50KB_(DiskCache|rawOpenRead)|store_50KB_.*)$'
CORE_FILTER='^Core_memoryHit_.*$'
rm -rf "$OUT"
mkdir -p "$OUT"
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
for pass in $(seq 1 "$PASSES"); do
    printf '==> cache rows, pass %s of %s\n' "$pass" "$PASSES" >&2
    mkdir -p "$OUT/pass-$pass"
    "$SWIFT" package --allow-writing-to-package-directory benchmark --target CacheBenchmarks --filter "$FILTER" \
        --format histogramPercentiles --path "$OUT/pass-$pass" --no-progress >"$OUT/pass-$pass.log" 2>&1 || {
        echo "pass $pass failed; its log:" >&2
        tail -30 "$OUT/pass-$pass.log" >&2
        exit 1
    }
    "$SWIFT" package --allow-writing-to-package-directory benchmark --target CoreBenchmarks --filter "$CORE_FILTER" \
        --format histogramPercentiles --path "$OUT/pass-$pass" --no-progress >"$OUT/pass-$pass-core.log" 2>&1 || {
        echo "pass $pass (memory hits) failed; its log:" >&2
        tail -30 "$OUT/pass-$pass-core.log" >&2
        exit 1
    }
done
LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"

/usr/bin/python3 - "$OUT" "$PASSES" "$LOAD_START" "$LOAD_END" <<'PYEOF'
import glob, json, os, re, statistics, sys
out, passes, load_start, load_end = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
UNITS = {"ns": 1, "μs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}

def read_pass(directory):
    """p50 of each benchmark and metric in one pass: {name: {metric: ns or count}}."""
    values = {}
    for path in glob.glob(os.path.join(directory, "**", "*.histogram.percentiles.tsv"), recursive=True):
        parts = os.path.basename(path).split(".")
        name, metric = parts[2], parts[3]
        lines = open(path).read().splitlines()
        p50 = float(next(l.split("\t")[1] for l in lines[1:] if l.split("\t")[0] == "50"))
        m = re.search(r"\((ns|μs|us|ms|s)\)", lines[0])
        if m and metric in ("wallClock", "cpuTotal"):
            p50 *= UNITS[m.group(1)]
        values.setdefault(name, {})[metric] = p50
    return values

runs = [read_pass(os.path.join(out, f"pass-{k}")) for k in range(1, passes + 1)]
writers = sorted({int(m.group(1)) for run in runs for n in run
                  for m in [re.match(r"Cache_store_50KB_(\d+)writers_DiskCache", n)] if m})
rows = [("memory hit: `loadImage` (callback) vs bare `MemoryCache` lookup, per load", "2",
         "Core_memoryHit_managerLoadImage", "Core_memoryHit_bareMemoryCache", 5.0),
        ("memory hit: `async loadImage` vs bare lookup, per load", "2",
         "Core_memoryHit_managerLoadImageAsync", "Core_memoryHit_bareMemoryCache", 5.0),
        ("memory hit with a `ResizeTransformer` in the context vs bare lookup of its key, per load", "2",
         "Core_memoryHit_managerLoadImageTransformer", "Core_memoryHit_bareMemoryCacheTransformedKey", 5.0),
        ("disk hit 50 KB: `DiskCache.entry` vs raw open+read of the same file", "3",
         "Cache_diskHit_50KB_DiskCache", "Cache_diskHit_50KB_rawOpenRead", 1.2)]
for w in writers:
    rows.append((f"store 50 KB, {w} writer thread(s): `DiskCache.storeData` (temp + rename) vs raw write+rename, same threads",
                 "4", f"Cache_store_50KB_{w}writers_DiskCache", f"Cache_store_50KB_{w}writers_rawWriteRename", 1.3))
if writers:
    rows.append((f"store 50 KB: async `store` on the write pool vs raw write+rename with {writers[-1]} writer thread(s)",
                 "4", "Cache_store_50KB_asyncPool_DiskCache", f"Cache_store_50KB_{writers[-1]}writers_rawWriteRename", 1.3))

summary = {"passes": passes, "load_start": load_start, "load_end": load_end, "rows": []}
for what, item, sdk, base, goal in rows:
    per_pass = []
    for run in runs:
        s, b = run.get(sdk, {}), run.get(base, {})
        if s.get("wallClock") and b.get("wallClock") and s.get("cpuTimeNs") and b.get("cpuTimeNs"):
            per_pass.append({"sdk_wall": s["wallClock"], "sdk_cpu": s["cpuTimeNs"], "base_wall": b["wallClock"],
                             "base_cpu": b["cpuTimeNs"], "wall": s["wallClock"] / b["wallClock"],
                             "cpu": s["cpuTimeNs"] / b["cpuTimeNs"]})
    if not per_pass:
        summary["rows"].append({"what": what, "item": item, "goal": goal, "passes": []})
        continue
    med = lambda key: statistics.median(p[key] for p in per_pass)
    summary["rows"].append({
        "what": what, "item": item, "goal": goal, "passes": per_pass,
        "sdk_wall": med("sdk_wall"), "sdk_cpu": med("sdk_cpu"), "base_wall": med("base_wall"), "base_cpu": med("base_cpu"),
        "wall_median": med("wall"), "cpu_median": med("cpu"),
        "wall_worst": max(p["wall"] for p in per_pass), "cpu_worst": max(p["cpu"] for p in per_pass)})
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)

def fmt(ns):
    return f"{ns/1e3:.2f} µs" if ns < 1e6 else f"{ns/1e6:.2f} ms"
print(f"Memory-hit, disk-hit and store rows over {passes} passes (load average {load_start} before, {load_end} after):")
for r in summary["rows"]:
    if not r["passes"]:
        print(f"- {r['what']}: n/a"); continue
    met = "met" if r["cpu_median"] <= r["goal"] else "NOT met"
    print(f"- {r['what']}: SDK {fmt(r['sdk_wall'])} (CPU {fmt(r['sdk_cpu'])}), baseline {fmt(r['base_wall'])} "
          f"(CPU {fmt(r['base_cpu'])}); ratio median {r['wall_median']:.2f}× wall / {r['cpu_median']:.2f}× CPU, "
          f"worst pass {r['wall_worst']:.2f}× / {r['cpu_worst']:.2f}×; CPU per pass "
          + ", ".join(f"{p['cpu']:.2f}×" for p in r["passes"]) + f"; goal ≤ {r['goal']}× {met} at the median")
PYEOF
