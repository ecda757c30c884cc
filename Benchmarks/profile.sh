#!/usr/bin/env bash
# Where the time of the whole path goes, per image (issue 10): the raw cost of each stage and the SDK's whole path,
# measured in one run against one local nginx, and a perf profile of the whole path as a flame graph.
#
#   Benchmarks/profile.sh      writes Benchmarks/PROFILE.md and Benchmarks/flamegraph-whole-path-{photo,small}.svg
#
# Stages, each with the same bodies at the same concurrency: fetch = bare AsyncHTTPClient `execute` (bytes only),
# decode = raw TurboJPEG on as many threads as cores, store = raw write+rename with as many writers as cores. The
# path's limit is the sum of the three per image; the SDK row is `ImageManager.loadImage` with HTTPLoader, the JPEG
# coder, and a cold MemoryCache + DiskCache (each load fetches, decodes and stores). CPU is the process's CPU time
# (all threads, kernel included) per image, from HTTPProfile.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
SWIFT="${SWIFT:-swift}"
CONCURRENCY=${PROFILE_CONCURRENCY:-6}
WORK="$(mktemp -d /tmp/webimage-profile.XXXXXX)"
chmod 755 "$WORK"
NGINX_PID=""
trap '[[ -n "$NGINX_PID" ]] && kill "$NGINX_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
# shellcheck source=lib/nginx.sh
source "$HERE/lib/nginx.sh"
log() { printf '\n==> %s\n' "$*" >&2; }

need=()
command -v perf >/dev/null || need+=(linux-perf)
[[ -x /usr/sbin/nginx ]] || command -v nginx >/dev/null || need+=(nginx-light)
if ((${#need[@]})); then
    SUDO=""; [[ $(id -u) == 0 ]] || SUDO="sudo"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

log "build (release)"
"$SWIFT" build -c release --product ExportInputs >&2
"$SWIFT" build -c release --product HTTPProfile >&2
BIN="$("$SWIFT" build -c release --show-bin-path)"
"$BIN/ExportInputs" "$WORK/inputs" >&2
start_nginx "$WORK/inputs/http" "$WORK/nginx" "$(command -v nginx || echo /usr/sbin/nginx)"
BASE="http://127.0.0.1:$PORT/"
cat "$WORK"/inputs/http/*/* >/dev/null
# Stored files stay until the end (see HTTPProfile's freshDirectory): no mode pays for another's deletions.
export HTTPPROFILE_DIR="$WORK/files"
mkdir -p "$HTTPPROFILE_DIR"
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"

# set rounds → "mode pass ns-per-image failures" lines; modes interleaved over PASSES passes. The report keeps the
# median per mode, and the SDK ÷ sum ratio of each pass (its modes ran back to back, so they saw the same file
# system: on ext4 a file created soon after many deletions costs several times more, which moves the store stage
# and the whole path together from one pass to the next).
PASSES=${PROFILE_PASSES:-5}
measure() {
    local set=$1 rounds=$2
    for pass in $(seq "$PASSES"); do
        for mode in bare decode store manager; do
            "$BIN/HTTPProfile" "$mode" "$BASE" "$set" "$rounds" "$CONCURRENCY" |
                awk -v m="$mode" -v p="$pass" '/ns\/image/ { for (i = 1; i <= NF; i++) if ($i == "failures,") f = $(i-1);
                    print m, p, $(NF-1), f }'
        done
    done
}
log "stages and whole path: 200 photos (5 rounds), 1,000 small JPEGs (3 rounds), c=$CONCURRENCY"
measure photo 5 >"$WORK/photo.txt"
measure small 3 >"$WORK/small.txt"

# DWARF unwinding: the Debian C libraries have no frame pointers, and a frame-pointer walk through them loses the
# Swift caller, so a decode would show as a root of its own. PROFILE_PERF_SCRIPT=PREFIX keeps perf's samples as text
# (PREFIX-photo.txt, PREFIX-small.txt) for a closer look.
profile() { # set rounds description
    log "perf profile of the whole path ($3)"
    perf record -q -F 499 --call-graph dwarf,16384 -o "$WORK/perf-$1.data" \
        "$BIN/HTTPProfile" manager "$BASE" "$1" "$2" "$CONCURRENCY" >&2
    local keep=/dev/null
    [[ -n "${PROFILE_PERF_SCRIPT:-}" ]] && keep="$PROFILE_PERF_SCRIPT-$1.txt"
    perf script -i "$WORK/perf-$1.data" 2>/dev/null | tee "$keep" |
        /usr/bin/python3 "$HERE/flamegraph.py" "$HERE/flamegraph-whole-path-$1.svg" \
            "ImageManager.loadImage, $3, c=$CONCURRENCY (perf, $(date '+%Y-%m-%d'))" >"$WORK/split-$1.json"
}
profile photo 5 "200 photos × 5"
profile small 3 "1,000 small JPEGs × 3"
LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"

/usr/bin/python3 - "$WORK" "$HERE/PROFILE.md" "$LOAD_START" "$LOAD_END" "$CONCURRENCY" "$PASSES" <<'PYEOF'
import json, statistics, sys, datetime
work, out, load_start, load_end, concurrency, passes = sys.argv[1:7]

def read(path):
    """→ (median per mode, SDK ÷ sum of each pass)."""
    runs, by_pass = {}, {}
    for line in open(path):
        mode, pass_number, ns, failures = line.split()
        if int(failures) != 0:
            sys.exit(f"profile.sh: {mode} had {failures} failed images")
        runs.setdefault(mode, []).append(int(ns))
        by_pass.setdefault(pass_number, {})[mode] = int(ns)
    ratios = sorted(p["manager"] / (p["bare"] + p["decode"] + p["store"]) for p in by_pass.values())
    return {mode: statistics.median(values) for mode, values in runs.items()}, ratios

def us(ns): return f"{ns / 1000:,.1f} µs"

lines = [
    "# Where the time goes: the whole path per image",
    "",
    f"Run {datetime.datetime.now():%Y-%m-%d %H:%M} by `Benchmarks/profile.sh` on this machine (load average "
    f"{load_start} at the start, {load_end} at the end). CPU time of the process (all threads, kernel included) "
    f"per image, median of {passes} passes, c={concurrency}, against a local nginx. The path's limit is the sum of "
    "the raw stage costs; the whole path is `ImageManager.loadImage` with HTTPLoader, the JPEG coder and a cold "
    "MemoryCache + DiskCache, so each load fetches, decodes and stores (goal: ≤ 1.3× the sum).",
    "",
    "| images | fetch: bare AsyncHTTPClient | decode: raw TurboJPEG | store: raw write+rename | sum of stages | "
    "whole path (SDK) | SDK ÷ sum | SDK ÷ sum per pass |",
    "|---|---|---|---|---|---|---|---|",
]
for label, name in [("200 camera-like photos, 640×480 to 1,280×960, 13–231 KB (median 71 KB)", "photo"), ("1,000 small JPEGs (128 px)", "small")]:
    m, ratios = read(f"{work}/{name}.txt")
    total = m["bare"] + m["decode"] + m["store"]
    lines.append(f"| {label} | {us(m['bare'])} | {us(m['decode'])} | {us(m['store'])} | {us(total)} | "
                 f"{us(m['manager'])} | {m['manager'] / total:.2f}× | "
                 f"{', '.join(f'{r:.2f}×' for r in ratios)} (median {statistics.median(ratios):.2f}×) |")
lines.append("")
for name, label in [("photo", "the photo set"), ("small", "the small set")]:
    split = json.load(open(f"{work}/split-{name}.json"))
    samples = split["samples"]
    lines.append(
        f"- Whole-path profile of {label} ([flamegraph-whole-path-{name}.svg](flamegraph-whole-path-{name}.svg), "
        f"perf at 499 Hz, {samples:,} samples): "
        + ", ".join(f"{stage} {100 * split[stage] / samples:.1f}%" for stage in ("fetch", "decode", "store", "bookkeeping"))
        + ".")
lines += [
    "",
    "A sample counts for the stage whose code is on its stack (TurboJPEG or the JPEG coder: decode; DiskCache or "
    "ext4: store; NIO, AsyncHTTPClient, HTTPLoader or the network stack: fetch); bookkeeping is the rest: the "
    "manager, the memory cache, the Swift runtime and malloc outside those stages. The graphs are drawn as icicles "
    "(callers above callees); open them in a browser to hover over a frame.",
    "",
    "The store stage moves most between runs: ext4 allocates inodes slowly for a while after many files were "
    "deleted (the previous run's clean-up), so read the per-pass ratios, where each pass's stages and whole path "
    "ran back to back, beside the medians.",
    "",
]
open(out, "w").write("\n".join(lines))
print("\n".join(lines))
PYEOF
