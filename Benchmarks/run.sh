#!/usr/bin/env bash
# Runs every WebImage benchmark and its baselines in one go and prints one Markdown table of ratios
# (SDK / baseline, with the absolute numbers) to stdout and to Benchmarks/RESULTS.md.
#
#   Benchmarks/run.sh            everything (about 11 minutes on 2 cores once the package is built, measured 2026-11-24, plus
#                                about 5 for the five passes of HTTPLoader vs bare AsyncHTTPClient, http-passes.sh), then
#                                instructions.sh (RESULTS.md's last table) and profile.sh (PROFILE.md, flame graphs)
#   Benchmarks/run.sh --quick    fewer iterations for the external baselines, 10,000-entry sweep
#
# The disk-hit and store rows run five more passes (cache-passes.sh, about 5 minutes) and show the median and the
# worst pass.
#
# In-process (Swift benchmark package, release build): the SDK and the raw C libraries / plain Swift baselines.
# Out of process (this script): vips / vipsthumbnail (libvips-tools), Pillow (python3-pil), wrk, and a Python
# httpx + Pillow client, on the same input files and the same local nginx.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
SWIFT="${SWIFT:-swift}"
PY=/usr/bin/python3 # Debian's Python: python3-pil and python3-httpx install there
QUICK=0
[[ "${1:-}" == "--quick" ]] && QUICK=1
export WEBIMAGE_BENCH_SWEEP_ENTRIES="${WEBIMAGE_BENCH_SWEEP_ENTRIES:-$([[ $QUICK == 1 ]] && echo 10000 || echo 100000)}"
EXT_RUNS=$([[ $QUICK == 1 ]] && echo 3 || echo 7)
START_TIME=$(date +%s)
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
WORK="$(mktemp -d /tmp/webimage-bench.XXXXXX)"
chmod 755 "$WORK" # nginx workers run as nobody and must read the served files
RESULTS_DIR="$HERE/.build/bench-results"
# shellcheck source=lib/nginx.sh
source "$HERE/lib/nginx.sh"
NGINX_PID=""
REDIS_PID=""

log() { printf '\n==> %s (t=%ss)\n' "$*" "$(($(date +%s) - START_TIME))" >&2; }

cleanup() {
    if [[ -n "$NGINX_PID" ]] && kill -0 "$NGINX_PID" 2>/dev/null; then kill "$NGINX_PID" 2>/dev/null || true; fi
    if [[ -n "$REDIS_PID" ]] && kill -0 "$REDIS_PID" 2>/dev/null; then kill "$REDIS_PID" 2>/dev/null || true; fi
    rm -rf "$WORK" "${TMPDIR:-/tmp}/webimage-bench-sweep-$WEBIMAGE_BENCH_SWEEP_ENTRIES"
}
trap cleanup EXIT

# ---------------------------------------------------------------------------------------------------------------
log "1/7 system packages"
need=()
command -v vips >/dev/null && command -v vipsthumbnail >/dev/null || need+=(libvips-tools)
$PY -c 'import PIL' 2>/dev/null || need+=(python3-pil)
command -v wrk >/dev/null || need+=(wrk)
[[ -x /usr/sbin/nginx ]] || command -v nginx >/dev/null || need+=(nginx-light)
$PY -c 'import httpx' 2>/dev/null || need+=(python3-httpx)
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null || need+=(redis-server redis-tools)
for pkg in libturbojpeg0-dev libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev libavif-dev libheif-dev liblcms2-dev libjxl-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
    echo "installing: ${need[*]}" >&2
    SUDO=""; [[ $(id -u) == 0 ]] || SUDO="sudo"
    $SUDO apt-get update -qq >&2
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2 || true
fi
HTTP_CLIENT=httpx
if ! $PY -c 'import httpx' 2>/dev/null; then
    $PY -m pip install --quiet --break-system-packages httpx >&2 2>/dev/null || true
    $PY -c 'import httpx' 2>/dev/null || HTTP_CLIENT=requests
fi
NGINX_BIN="$(command -v nginx || echo /usr/sbin/nginx)"

# ---------------------------------------------------------------------------------------------------------------
log "2/7 build (release)"
# Target by target, so one SDK plugin that does not compile costs only its own rows (reported as n/a).
SKIP=()
"$SWIFT" build -c release --product ExportInputs >&2
# Issue 23 item 7: the peak resident set of 1,000 concurrent loads (run after the nginx start, step 6).
"$SWIFT" build -c release --product InFlightMemory >"$WORK/build-InFlightMemory.log" 2>&1 \
    || { echo "NOT MEASURED: InFlightMemory does not build" >&2; echo InFlightMemory >>"$WORK/not-built.txt"; }
# The SDK side of the thumbnail rows (thumbnails.py drives it between vipsthumbnail runs).
"$SWIFT" build -c release --product ThumbnailRunner >"$WORK/build-ThumbnailRunner.log" 2>&1 \
    || { echo "NOT MEASURED: ThumbnailRunner does not build" >&2; echo ThumbnailRunner >>"$WORK/not-built.txt"; }
for target in CoreBenchmarks CoderBenchmarks CacheBenchmarks TransformBenchmarks HTTPBenchmarks AVIFBenchmarks HEIFBenchmarks \
    RedisBenchmarks JXLBenchmarks APNGBenchmarks; do
    if ! "$SWIFT" build -c release --product "$target" >"$WORK/build-$target.log" 2>&1; then
        echo "NOT MEASURED: $target does not build; its errors:" >&2
        grep -E "error:" "$WORK/build-$target.log" | sort -u | head -10 >&2
        SKIP+=(--skip-target "$target")
        echo "$target" >>"$WORK/not-built.txt"
    fi
done
BIN="$("$SWIFT" build -c release --show-bin-path)"

log "3/7 export inputs"
INPUTS="$WORK/inputs"
"$BIN/ExportInputs" "$INPUTS" >&2
vips copy "$INPUTS/rgba12mp.png" "$INPUTS/rgba12mp.v"
vips copy "$INPUTS/rgba2mp.png" "$INPUTS/rgba2mp.v"
vips black "$INPUTS/tiny.v" 16 16 --bands 4
# The APNG inputs, written by Pillow's APNG encoder (APNGBenchmarks decodes them; step 6 times Pillow on them).
$PY "$HERE/apng_pillow.py" make "$INPUTS" >&2
export WEBIMAGE_BENCH_APNG_DIR="$INPUTS/apng"

# ---------------------------------------------------------------------------------------------------------------
log "4/7 nginx on 127.0.0.1"
start_nginx "$INPUTS/http" "$WORK/nginx" "$NGINX_BIN"
export WEBIMAGE_BENCH_HTTP_BASE="http://127.0.0.1:$PORT/"
# Redis for RedisBenchmarks (issue 11): a throwaway server, nothing saved.
REDIS_PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK" --loglevel warning &
REDIS_PID=$!
for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" PING 2>/dev/null | grep -q PONG && break; sleep 0.1; done
export WEBIMAGE_BENCH_REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
# Warm the page cache for everyone.
cat "$INPUTS"/http/small/* "$INPUTS"/http/large/* "$INPUTS"/http/photo/* >/dev/null

# ---------------------------------------------------------------------------------------------------------------
log "5/7 Swift benchmarks (SDK and in-process baselines)"
if [[ "${WEBIMAGE_BENCH_REUSE_SWIFT:-0}" == 1 && -d "$RESULTS_DIR" ]]; then
    echo "reusing the Swift results in $RESULTS_DIR (WEBIMAGE_BENCH_REUSE_SWIFT=1)" >&2
else
    rm -rf "$RESULTS_DIR"
    mkdir -p "$RESULTS_DIR"
    export WEBIMAGE_BENCH_PNG_SIZES="$RESULTS_DIR/png-stage-sizes.txt"
    # The plugin runs each benchmark in its own process and writes one TSV of percentiles per benchmark and metric.
    "$SWIFT" package --allow-writing-to-package-directory benchmark "${SKIP[@]}" \
        --format histogramPercentiles --path "$RESULTS_DIR" --no-progress >"$WORK/swift-benchmarks.log" 2>&1 || {
        echo "swift package benchmark failed; its log:" >&2
        tail -50 "$WORK/swift-benchmarks.log" >&2
        exit 1
    }
    grep -E "ASSERTION|failed|error" "$WORK/swift-benchmarks.log" >&2 || true
fi
# Issue 23 item 8 for the memory-hit, disk-hit and store rows: five passes of SDK and baseline, median and worst pass.
if [[ -f "$HERE/.build/bench-cache-passes/summary.json" && "${WEBIMAGE_BENCH_REUSE_SWIFT:-0}" == 1 ]]; then
    echo "reusing the cache passes in .build/bench-cache-passes" >&2
elif [[ " ${SKIP[*]:-} " == *" CacheBenchmarks "* ]]; then
    rm -rf "$HERE/.build/bench-cache-passes"
else
    "$HERE/cache-passes.sh" 5 >&2 || echo "cache-passes.sh failed: the memory-hit, disk-hit and store rows are single-pass" >&2
fi

# Issue 23: HTTPLoader vs bare AsyncHTTPClient (CPU per request) as five passes, median and worst pass.
HTTP_PASSES_DIR="$HERE/.build/bench-http-passes"
log "5b/7 HTTPLoader vs bare AsyncHTTPClient, ${WEBIMAGE_BENCH_HTTP_PASSES:-5} passes"
if grep -qx HTTPBenchmarks "$WORK/not-built.txt" 2>/dev/null; then
    rm -rf "$HTTP_PASSES_DIR"
elif [[ "${WEBIMAGE_BENCH_REUSE_SWIFT:-0}" == 1 && -d "$HTTP_PASSES_DIR" ]]; then
    echo "reusing the passes in $HTTP_PASSES_DIR (WEBIMAGE_BENCH_REUSE_SWIFT=1)" >&2
else
    SWIFT="$SWIFT" "$HERE/http-passes.sh" "${WEBIMAGE_BENCH_HTTP_PASSES:-5}" || rm -rf "$HTTP_PASSES_DIR"
fi

# ---------------------------------------------------------------------------------------------------------------
log "6/7 external baselines: vips, Pillow, wrk, $HTTP_CLIENT + Pillow"
EXT="$WORK/external.json"
$PY - "$INPUTS" "$EXT" "$EXT_RUNS" "$PORT" "$HTTP_CLIENT" <<'PYEOF'
import hashlib, io, json, os, re, resource, statistics, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor
from PIL import Image, ImageFilter

inputs, out_path, runs, port, client_kind = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
results = {}
Image.MAX_IMAGE_PIXELS = None

def cpu_now():
    # This process plus finished children (the vips CLI runs), in ns.
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime) * 1e9

def median_time(fn, runs, warmup=1, key=None):
    """Median wall time in ns; with `key`, also stores results[key] (wall) and results[key + '_cpu'] (CPU)."""
    for _ in range(warmup):
        fn()
    samples, cpus = [], []
    for _ in range(runs):
        c = cpu_now(); t = time.perf_counter(); fn()
        samples.append(time.perf_counter() - t); cpus.append(cpu_now() - c)
    wall = statistics.median(samples) * 1e9
    if key:
        results[key] = wall
        results[key + "_cpu"] = statistics.median(cpus)
    return wall

def fit(w, h, bw, bh):
    s = min(bw / w, bh / h)
    return max(1, round(w * s)), max(1, round(h * s))

def cli(args):
    return lambda: subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

# --- Pillow (single-threaded by design) ---
rgba12 = Image.open(f"{inputs}/rgba12mp.png"); rgba12.load()
rgba2 = Image.open(f"{inputs}/rgba2mp.png"); rgba2.load()
w, h = rgba12.size
size256, size1920 = fit(w, h, 256, 256), fit(w, h, 1920, 1080)
median_time(lambda: rgba12.resize(size256, Image.LANCZOS), runs, key="pillow_resize_fit256")
median_time(lambda: rgba12.resize(size1920, Image.LANCZOS), runs, key="pillow_resize_fit1920x1080")
# Pillow's own shortcut (box reduction by an integer factor first, then LANCZOS), as the SDK and vips do.
median_time(lambda: rgba12.resize(size256, Image.LANCZOS, reducing_gap=3.0), runs, key="pillow_resize_fit256_reducing")
median_time(lambda: rgba12.resize(size1920, Image.LANCZOS, reducing_gap=3.0), runs,
            key="pillow_resize_fit1920x1080_reducing")
median_time(lambda: rgba2.filter(ImageFilter.GaussianBlur(8)), runs, key="pillow_blur_sigma8")
jpeg_path = f"{inputs}/photo12mp.jpg"
def pillow_thumbnail():
    im = Image.open(jpeg_path); im.thumbnail((256, 256)); b = io.BytesIO(); im.save(b, "JPEG", quality=85)
def pillow_decode_lanczos():
    im = Image.open(jpeg_path); im.load()
    small = im.resize(fit(im.width, im.height, 256, 256), Image.LANCZOS)
    b = io.BytesIO(); small.save(b, "JPEG", quality=85)
median_time(pillow_thumbnail, runs, key="pillow_thumbnail")
median_time(pillow_decode_lanczos, runs, key="pillow_decode_lanczos_encode")

# --- vips command line (process start + libvips init included; 'overhead' is the same CLI on a 16x16 image) ---
v12, v2 = f"{inputs}/rgba12mp.v", f"{inputs}/rgba2mp.v"
tmp = f"{inputs}/vips-out.v"
median_time(cli(["vips", "resize", f"{inputs}/tiny.v", tmp, "0.5"]), runs, key="vips_overhead")
median_time(cli(["vips", "resize", v12, tmp, str(size256[0] / w), "--kernel", "lanczos3"]), runs, key="vips_resize_fit256")
median_time(cli(["vips", "resize", v12, tmp, str(size1920[1] / h), "--kernel", "lanczos3"]), runs, key="vips_resize_fit1920x1080")
median_time(cli(["vips", "gaussblur", v2, tmp, "8"]), runs, key="vips_blur_sigma8")
median_time(cli(["vipsthumbnail", jpeg_path, "-s", "256x256", "-o", f"{inputs}/thumb.jpg[Q=85]"]), runs, key="vipsthumbnail")

# --- wrk against the same nginx, same URL sets, same concurrency ---
for label, sub, count in [("small1000", "small", 1000), ("photo200", "photo", 200), ("2MP100", "large", 100)]:
    files = sorted(os.listdir(f"{inputs}/http/{sub}"))[:count]
    lua = f"{inputs}/{label}.lua"
    with open(lua, "w") as f:
        f.write("paths = {" + ",".join(f'"/{sub}/{n}"' for n in files) + "}\n")
        f.write("i = 0\nrequest = function()\n  i = i + 1\n  return wrk.format('GET', paths[(i % #paths) + 1])\nend\n")
    for c in (6, 64):
        out = subprocess.run(["wrk", "-t2", f"-c{c}", "-d4s", "-s", lua, f"http://127.0.0.1:{port}"],
                             check=True, capture_output=True, text=True).stdout
        rps = float(next(l for l in out.splitlines() if l.startswith("Requests/sec")).split()[1])
        tps = next(l for l in out.splitlines() if l.startswith("Transfer/sec")).split()[1]
        value, unit = re.fullmatch(r"([\d.]+)([KMG]?B)", tps).groups()
        results[f"wrk_{label}_c{c}_rps"] = rps
        results[f"wrk_{label}_c{c}_Bps"] = float(value) * {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}[unit]

# --- Python client: fetch + decode with Pillow, thread pool at the same concurrency ---
if client_kind == "httpx":
    import httpx
    def make_client(c):
        return httpx.Client(limits=httpx.Limits(max_connections=c, max_keepalive_connections=c), timeout=30)
else:
    import requests
    from requests.adapters import HTTPAdapter
    def make_client(c):
        s = requests.Session(); s.mount("http://", HTTPAdapter(pool_connections=c, pool_maxsize=c)); return s
for label, sub, count in [("small1000", "small", 1000), ("photo200", "photo", 200), ("2MP100", "large", 100)]:
    urls = [f"http://127.0.0.1:{port}/{sub}/{n}" for n in sorted(os.listdir(f"{inputs}/http/{sub}"))[:count]]
    for c in (6, 64):
        client = make_client(c)
        # Fetch, decode and the store the SDK's manager row does: the bytes written to a temp file and renamed into
        # a cache folder under a hash of the URL (a fresh folder per batch, as the SDK row's cold cache).
        store_root = [None]
        def fetch_decode_store(url):
            r = client.get(url); r.raise_for_status()
            im = Image.open(io.BytesIO(r.content)); im.load()
            name = hashlib.sha256(url.encode()).hexdigest()
            fd, tmp = tempfile.mkstemp(dir=store_root[0], prefix=".tmp-")
            with os.fdopen(fd, "wb") as f:
                f.write(r.content)
            os.replace(tmp, os.path.join(store_root[0], name))
            return im.size
        with ThreadPoolExecutor(max_workers=c) as pool:
            def batch_store():
                store_root[0] = tempfile.mkdtemp(dir=inputs, prefix="py-store-")
                list(pool.map(fetch_decode_store, urls))
            t = median_time(batch_store, max(2, runs // 2), key=f"pystore_{label}_c{c}")
            results[f"pystore_{label}_c{c}_ips"] = count / (t / 1e9)
        client.close()
results["http_client"] = client_kind
with open(out_path, "w") as f:
    json.dump(results, f, indent=1)
PYEOF

# Pillow's AVIF plugin (Debian's python3-pil has none): a venv with Pillow from PyPI, on the AVIF inputs.
AVIF_VENV="$HERE/.build/pillow-avif-venv"
[[ -x "$AVIF_VENV/bin/python" ]] || $PY -m venv "$AVIF_VENV" >&2 || true
"$AVIF_VENV/bin/python" -c 'from PIL import features; assert features.check("avif")' 2>/dev/null \
    || "$AVIF_VENV/bin/pip" install --quiet --upgrade pillow >&2 || true
"$AVIF_VENV/bin/python" "$HERE/avif_pillow.py" "$INPUTS" "$WORK/external-avif.json" "$EXT_RUNS" >&2 \
    || echo "Pillow AVIF baseline not measured (no Pillow with AVIF support)" >&2
# Pillow loading every frame of the APNG inputs (Debian's python3-pil, the Pillow of the other rows).
$PY "$HERE/apng_pillow.py" measure "$INPUTS" "$WORK/external-apng.json" "$EXT_RUNS" >&2 \
    || echo "Pillow APNG baseline not measured" >&2
# redis-benchmark GETs (one client, no pipelining) of values the size of the entries RedisBenchmarks stored:
# one SET writes key:__rand_int__ with that size, then `-t get` reads it; CPU is redis-benchmark's user + system.
for key in $(redis-cli -p "$REDIS_PORT" --scan --pattern 'bench-hit:*'); do
    size=$(redis-cli -p "$REDIS_PORT" STRLEN "$key")
    redis-benchmark -p "$REDIS_PORT" -t set -d "$size" -n 1 -c 1 -q >/dev/null
    /usr/bin/time -f '%U %S' -o "$WORK/redis-get-cpu" \
        redis-benchmark -p "$REDIS_PORT" -t get -d "$size" -n 20000 -c 1 --csv >"$WORK/redis-get.csv" 2>/dev/null
    $PY - "$EXT" "$size" "$WORK/redis-get.csv" "$WORK/redis-get-cpu" 20000 <<'PYEOF'
import csv, json, sys
path, size, csv_path, cpu_path, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
get = next(r for r in csv.DictReader(open(csv_path)) if r["test"] == "GET")
user, system = map(float, open(cpu_path).read().split()[-2:])
ext = json.load(open(path))
ext.setdefault("redis_get", {})[str(size)] = {
    "p50": float(get["p50_latency_ms"]) * 1e6, "per_op": 1e9 / float(get["rps"]), "cpu": (user + system) * 1e9 / n}
json.dump(ext, open(path, "w"), indent=1)
PYEOF
done

# Thumbnails per format and size (issue 23 items 5 and 8): the SDK and vipsthumbnail on the same files, five
# interleaved passes (median and worst pass printed), CPU time minus vips's own start-up.
THUMBS="$WORK/thumbnails.json"
if [[ -x "$BIN/ThumbnailRunner" ]]; then
    log "thumbnail rows: SDK vs vipsthumbnail, 5 interleaved passes"
    $PY "$HERE/thumbnails.py" "$BIN/ThumbnailRunner" "$INPUTS" 5 "$THUMBS" >&2 \
        || echo "thumbnails.py failed: no thumbnail rows this run" >&2
fi

# Memory for in-flight work (issue 23 items 7 and 8): 1,000 concurrent loads of distinct 2 MP photos from nginx, a
# 256 MB memory cache, five runs (a fresh process each: the peak is the process's VmHWM, reset after setup).
INFLIGHT="$WORK/inflight.jsonl"
if [[ -x "$BIN/InFlightMemory" ]]; then
    log "in-flight memory: 1,000 concurrent loads, 5 runs"
    for _ in 1 2 3 4 5; do
        "$BIN/InFlightMemory" "$WEBIMAGE_BENCH_HTTP_BASE" 1000 256 >>"$INFLIGHT" || true
        # Tuned for memory: glibc's mmap threshold fixed at 1 MiB (its dynamic threshold keeps freed 8 MB buffers
        # resident).
        MALLOC_MMAP_THRESHOLD_=1048576 \
            "$BIN/InFlightMemory" "$WEBIMAGE_BENCH_HTTP_BASE" 1000 256 >>"$WORK/inflight-mmap.jsonl" || true
        # Without the bound on downloads ahead of the decoder (what it saves).
        INFLIGHT_DOWNLOADS_AHEAD=max \
            "$BIN/InFlightMemory" "$WEBIMAGE_BENCH_HTTP_BASE" 1000 256 >>"$WORK/inflight-unbounded.jsonl" || true
    done
fi

# Thread scaling (issue 23 item 6): the whole path (fetch from nginx, decode, memory + disk store) and raw TurboJPEG
# decoding of the same bodies, each on a work pool of 1 and of 2 threads (HTTPPROFILE_THREADS), 2 MP photos at
# c=6, five interleaved passes of 3 rounds; images/s by wall clock.
SCALING="$WORK/scaling.txt"
"$SWIFT" build -c release --product HTTPProfile >"$WORK/build-HTTPProfile.log" 2>&1 || true
if [[ -x "$BIN/HTTPProfile" ]]; then
    log "thread scaling: whole path and decode alone on 1 and 2 threads, 5 passes"
    mkdir -p "$WORK/profile-files"
    for pass in 1 2 3 4 5; do
        for threads in 1 2; do
            for mode in manager managerSmall managerKept managerRetained decode; do
                # managerKept: the whole path with one 256 MB memory cache kept across rounds, full as a running
                # server's is (every load still a download; HTTPProfile/main.swift). managerRetained: the cold
                # path with glibc told to keep freed memory (no trimming, a fixed 32 MB mmap threshold), so a
                # round's pixel buffers reuse the pages of the round before instead of pages the kernel must zero:
                # a diagnosis of the cold rows, not a setting the SDK makes. managerSmall: the cold path with
                # pixel blocks in 4 KiB pages (`PixelPool.usesHugePages` off, the A/B of what huge pages give).
                kept=""; [[ $mode == managerKept ]] && kept=256
                env_retain=(); [[ $mode == managerRetained ]] \
                    && env_retain=(MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=4294967296)
                [[ $mode == managerSmall ]] && env_retain=(PIXELPOOL_SMALL_PAGES=1)
                env "${env_retain[@]}" HTTPPROFILE_DIR="$WORK/profile-files" HTTPPROFILE_THREADS=$threads \
                    HTTPPROFILE_MEMORY_MB=$kept \
                    "$BIN/HTTPProfile" "${mode%%[KRS]*}" "$WEBIMAGE_BENCH_HTTP_BASE" large 3 6 2>/dev/null \
                    | awk -v m="$mode" -v t="$threads" -v p="$pass" '/^wall:/ { print m, t, p, $2 }' >>"$SCALING" || true
            done
        done
    done
    rm -rf "$WORK/profile-files"
fi

# ---------------------------------------------------------------------------------------------------------------
log "7/7 report"
LOAD="$(cut -d' ' -f1-3 /proc/loadavg)"
$PY - "$RESULTS_DIR" "$EXT" "$HERE/RESULTS.md" "$LOAD" "$(($(date +%s) - START_TIME))" "$WEBIMAGE_BENCH_SWEEP_ENTRIES" "$LOAD_START" "$WORK/not-built.txt" "$HTTP_PASSES_DIR" "$HERE" "$THUMBS" <<'PYEOF'
import glob, json, os, re, sys, datetime
results_dir, ext_path, out_path, load, elapsed, sweep_n, load_start, not_built_path, http_passes_dir, here, thumbs_path = sys.argv[1:12]
sys.path.insert(0, here)
import http_passes  # issue 23's HTTPLoader rows, over several passes (http-passes.sh)
http_loader_rows = http_passes.rows(http_passes_dir)
not_built = open(not_built_path).read().split() if os.path.exists(not_built_path) else []
ext = json.load(open(ext_path))
avif_ext_path = os.path.join(os.path.dirname(ext_path), "external-avif.json")
if os.path.exists(avif_ext_path): ext.update(json.load(open(avif_ext_path)))
apng_ext_path = os.path.join(os.path.dirname(ext_path), "external-apng.json")
if os.path.exists(apng_ext_path):
    apng_ext = json.load(open(apng_ext_path))
    ext["pillow_apng_version"] = apng_ext.pop("pillow_version", "")
    ext.update(apng_ext)
UNITS = {"ns": 1, "μs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}

# One TSV per benchmark and metric: "<baseline>.<target>.<name>.<metric>.histogram.percentiles.tsv", rows
# "percentile<TAB>value"; wall-clock values carry their unit in the header, count metrics are raw.
swift = {}
for path in glob.glob(os.path.join(results_dir, "**", "*.histogram.percentiles.tsv"), recursive=True):
    parts = os.path.basename(path).split(".")
    name, metric = parts[2], parts[3]
    lines = open(path).read().splitlines()
    p50 = float(next(l.split("\t")[1] for l in lines[1:] if l.split("\t")[0] == "50"))
    m = re.search(r"\((ns|μs|us|ms|s)\)", lines[0])
    if m and metric in ("wallClock", "cpuTotal", "cpuUser", "cpuSystem"):
        p50 *= UNITS[m.group(1)]
    swift.setdefault(name, {})[metric] = p50

def t(name, metric="wallClock"):
    return swift.get(name, {}).get(metric)

def cpu(name):
    return t(name, "cpuTimeNs")

def fmt_time(ns):
    if ns is None: return "n/a"
    if ns < 1e3: return f"{ns:.0f} ns"
    if ns < 1e6: return f"{ns/1e3:.2f} µs"
    if ns < 1e9: return f"{ns/1e6:.2f} ms"
    return f"{ns/1e9:.2f} s"

def ratio(a, b):
    return "n/a" if a is None or b is None or b <= 0 else f"{a/b:.2f}×"

rows = []
def row(issue, what, sdk, base, wall_ratio, cpu_ratio, goal=""):
    rows.append(f"| {issue} | {what} | {sdk} | {base} | {wall_ratio} | {cpu_ratio} | {goal} |")

def pair(wall, cpu_ns):
    return fmt_time(wall) + (f" (CPU {fmt_time(cpu_ns)})" if cpu_ns is not None else "")

def time_row(issue, what, a, b, goal=""):
    """a, b: (wall ns, cpu ns or None)."""
    row(issue, what, pair(*a), pair(*b), ratio(a[0], b[0]), ratio(a[1], b[1]), goal)

def S(name):
    return (t(name), cpu(name))

def E(key, minus=None):
    wall, c = ext.get(key), ext.get(key + "_cpu")
    if minus and wall is not None:
        wall, c = wall - ext[minus], c - ext[minus + "_cpu"]
    return (wall, c)

# Issue 2 — core
time_row("2, 10", "memory hit: `loadImage` (callback) vs bare `MemoryCache` lookup, per load (one pass)",
         S("Core_memoryHit_managerLoadImage"), S("Core_memoryHit_bareMemoryCache"), "≤ 2 µs and ≤ 5×")
time_row("2", "memory hit: `async loadImage` vs bare lookup, per load (one pass)",
         S("Core_memoryHit_managerLoadImageAsync"), S("Core_memoryHit_bareMemoryCache"))
time_row("10", "memory hit with a `ResizeTransformer` in the context vs bare lookup of its key, per load (one pass)",
         S("Core_memoryHit_managerLoadImageTransformer"), S("Core_memoryHit_bareMemoryCacheTransformedKey"), "≤ 5×")
c = "Core_concurrentLoads_10000x100"
req = t(c, "loaderRequests")
row("2", "10,000 concurrent loads of 100 URLs (scripted loader, 2 ms latency): wall (CPU); peak RSS; mallocs; loader requests",
    f"{pair(t(c), cpu(c))}; {(t(c, 'peakMemoryResident') or 0)/2**20:.0f} MB; {(t(c, 'mallocCountTotal') or 0):,.0f}; {req:.0f} requests" if req is not None else "n/a",
    "—", "—", "—", "requests = 100 " + ("✅" if req == 100 else "❌"))

# Issue 3 — coders
for fmt in ["JPEG", "PNG", "WebP", "GIF"]:
    for size in ["12MP", "2MP", "small"]:
        n = f"{fmt}_{size}"
        time_row("10", f"{fmt} {size} decode through `CodersManager` (probe + decode): SDK vs raw C", S(f"{n}_decode_SDK"), S(f"{n}_decode_C"), "≤ 1.05×")
        if fmt == "JPEG":
            time_row("3", f"{fmt} {size} decode: SDK vs C, reused handle + buffer", S(f"{n}_decode_SDK"), S(f"{n}_decode_Creused"))
        time_row("3", f"{fmt} {size} encode: SDK vs raw C", S(f"{n}_encode_SDK"), S(f"{n}_encode_C"), "≤ 1.05×")
# Issue 34 — the PNG thumbnail stage by stage (2 MP photo PNG → fit 512: decode, reduce, encode) beside raw C calls
sizes_path = os.path.join(results_dir, "png-stage-sizes.txt")
png_sizes = dict(line.rstrip("\n").split("\t") for line in open(sizes_path)) if os.path.exists(sizes_path) else {}
def png_size(label):
    return f"{int(png_sizes[label]) / 1000:.1f} KB" if label in png_sizes else "size n/a"
sdk_decode = S("PNG_2MP_thumb512_decode_SDK")
time_row("34", "PNG 2 MP → fit 512: decode shrunk on load through `CodersManager` (fast reader + area reduce): "
         "SDK vs libpng's full decode (the raw call)", sdk_decode, S("PNG_2MP_thumb512_decode_Clibpng"), "≤ 1.05×")
time_row("34", "PNG 2 MP → fit 512: SDK decode vs libdeflate's inflate of the same IDAT alone (the floor of any "
         "PNG decode)", sdk_decode, S("PNG_2MP_inflate_Clibdeflate"))
time_row("34", "PNG 2 MP → 512 reduce alone (area average of decoded RGB): SDK `areaResampled` vs the C area "
         "resize", S("PNG_2MP_reduce512_SDK"), S("PNG_2MP_reduce512_C"))
time_row("34", f"PNG 512 px encode: SDK `.balanced` ({png_size('SDK balanced')}) vs libpng's default: zlib 6, "
         f"adaptive filters ({png_size('C libpng default')})", S("PNG_512_encode_SDK"), S("PNG_512_encode_Clibpng"),
         "≤ 1.05×")
time_row("34", f"PNG 512 px encode: SDK `.balanced` ({png_size('SDK balanced')}) vs libvips's settings through "
         f"libpng: zlib 6, no filter ({png_size('C libvips settings')})", S("PNG_512_encode_SDK"),
         S("PNG_512_encode_Cvips"))
thumb = S("Thumb_12MP_to256_SDK")
time_row("3", "12 MP JPEG → 256 px JPEG q85: SDK vs C pipeline", thumb, S("Thumb_12MP_to256_C"), "≤ 1.15×")
time_row("3", "thumbnail: SDK vs SDK full decode + Lanczos resize + encode", thumb, S("Thumb_12MP_to256_SDKfullDecodeResize"))
time_row("3, 10", "thumbnail: SDK vs `vipsthumbnail` CLI minus CLI start-up", thumb, E("vipsthumbnail", "vips_overhead"), "CPU ≤ 1.0×")
time_row("3", "thumbnail: SDK vs Pillow `thumbnail()` + save q85", thumb, E("pillow_thumbnail"))
time_row("3", "thumbnail: SDK vs Pillow decode + LANCZOS + save q85", thumb, E("pillow_decode_lanczos_encode"))

# Issue 23 items 5 and 8 — thumbnails per format and size against vipsthumbnail, interleaved passes (thumbnails.py)
thumbs = json.load(open(thumbs_path)) if os.path.exists(thumbs_path) else None
for fmt in ["JPEG", "WebP", "PNG", "AVIF"]:
    for size, label in [("12mp", "12 MP"), ("2mp", "2 MP")]:
        what = (f"thumbnail {label} {fmt} → 256 px JPEG q85: SDK (read, shrink-on-load decode, encode, write) vs "
                "`vipsthumbnail` minus its start-up; median pass of 5 interleaved (worst pass)")
        r = next((r for r in (thumbs or {}).get("rows", []) if r["format"] == fmt and r["size"] == size), None)
        if r is None or not r["passes"]:
            row("23", what, "n/a", "n/a", "n/a", "n/a", "CPU ≤ 1.0×")
            continue
        ps = r["passes"]
        med = lambda key: sorted(p[key] for p in ps)[len(ps) // 2] if all(p[key] is not None for p in ps) else None
        worst = lambda key: max(p[key] for p in ps) if all(p[key] is not None for p in ps) else None
        cpu_ratio, worst_ratio, wall_ratio = med("cpu_ratio"), worst("cpu_ratio"), med("wall_ratio")
        warm_ratio = med("warm_cpu_ratio")
        sizes = "" if r["sdk_size"] == r["vips_size"] else f" — sizes differ: SDK {r['sdk_size']}, vips {r['vips_size']}"
        baseline = (f"CPU {fmt_time(med('vips_cpu'))} = {fmt_time(med('vips_run_cpu'))} − start-up "
                    f"{fmt_time(med('vips_start_cpu'))}")
        if warm_ratio:
            baseline += f"; in a warm process {fmt_time(med('vips_warm_cpu'))}/image (SDK {warm_ratio:.2f}×)"
        row("23", what + sizes,
            f"CPU {fmt_time(med('sdk_cpu'))} (wall {fmt_time(med('sdk_wall'))})", baseline,
            f"{wall_ratio:.2f}×" if wall_ratio else "n/a",
            f"{cpu_ratio:.2f}× (worst {worst_ratio:.2f}×)" if cpu_ratio else "n/a",
            "CPU ≤ 1.0× " + ("✅" if cpu_ratio is not None and cpu_ratio <= 1.0 else "❌"))

# Issue 4 — caches
for threads in (1, 2):
    a, b = S(f"Cache_memoryHit_{threads}thread_MemoryCache"), S(f"Cache_memoryHit_{threads}thread_MutexDictionary")
    ops = lambda v: "n/a" if v is None or v == 0 else f"{threads * 1e9 / v / 1e6:.2f} M ops/s"
    row("4", f"memory hit, {threads} thread(s): MemoryCache vs Mutex<Dictionary> (ratio of time per hit)",
        f"{ops(a[0])}, {fmt_time(a[0] / threads) if a[0] else 'n/a'}/hit", f"{ops(b[0])}, {fmt_time(b[0] / threads) if b[0] else 'n/a'}/hit",
        ratio(a[0], b[0]), ratio(a[1], b[1]), "≤ 1.5× of 0.37 µs; no collapse at 2 threads")
# Memory for in-flight work (issue 23 item 7): peak RSS of 1,000 concurrent loads, five runs, median and worst.
for name, allocator in [("inflight.jsonl", "defaults (64 downloads ahead of the decoder)"),
                        ("inflight-mmap.jsonl", "defaults and `MALLOC_MMAP_THRESHOLD_=1048576`"),
                        ("inflight-unbounded.jsonl", "no bound on downloads ahead (`maxDownloadsAheadOfDecoding = Int.max`)")]:
    inflight_path = os.path.join(os.path.dirname(ext_path), name)
    inflight = [json.loads(l) for l in open(inflight_path) if l.strip()] if os.path.exists(inflight_path) else []
    inflight = [r for r in inflight if r.get("failures") == 0 and r.get("peak_reset")]
    if not inflight:
        row("23 (7)", f"1,000 concurrent loads of distinct 2 MP photos, {allocator}: peak RSS", "n/a", "n/a", "n/a",
            "n/a", "≤ cache limit + 64 MB")
        continue
    peaks = sorted(r["peak_rss_mb"] for r in inflight)
    above = sorted(r["peak_rss_mb"] - r["start_rss_mb"] for r in inflight)
    limit = inflight[0]["cache_limit_mb"] + 64
    mid = len(peaks) // 2
    row("23 (7)", f"1,000 concurrent loads of distinct 2 MP photos (local nginx), `MemoryCache` of "
        f"{inflight[0]['cache_limit_mb']} MB, {allocator}: peak RSS (VmHWM) — {len(peaks)} runs, median (worst)",
        f"{peaks[mid]:.0f} MB ({peaks[-1]:.0f} MB); {above[mid]:.0f} MB above the process before the loads",
        f"cache limit + 64 MB = {limit} MB", f"{peaks[mid] / limit:.2f}× ({peaks[-1] / limit:.2f}×)", "—",
        f"≤ {limit} MB " + ("✅" if peaks[mid] <= limit else "❌"))
# Thread scaling (issue 23 item 6): images/s of the whole path and of decoding alone on 1 and 2 threads, per pass;
# each ratio is taken within a pass (runs that saw the same machine), then the median and the worst pass.
scaling_path = os.path.join(os.path.dirname(ext_path), "scaling.txt")
scaling = {}
if os.path.exists(scaling_path):
    for line in open(scaling_path):
        mode, threads, scaling_pass, rate = line.split()
        scaling[(mode, int(threads), scaling_pass)] = float(rate)
scaling_passes = sorted({k[2] for k in scaling}, key=int)
def med(values):
    values = sorted(v for v in values if v)
    return values[len(values) // 2] if values else None
def per_pass(num, den):
    return [scaling[num + (p,)] / scaling[den + (p,)] for p in scaling_passes
            if scaling.get(num + (p,)) and scaling.get(den + (p,))]
def pass_row(item, label, num, den, goal):
    ratios = per_pass(num, den)
    rate_num = med(scaling.get(num + (p,)) for p in scaling_passes)
    rate_den = med(scaling.get(den + (p,)) for p in scaling_passes)
    fmt_ips = lambda v: f"{v:,.0f} img/s" if v else "n/a"
    shown = f"{med(ratios):.2f}× (worst {min(ratios):.2f}×)" if ratios else "n/a"
    verdict = "" if goal is None else f"≥ {goal}× " + ("✅" if ratios and med(ratios) >= goal else "❌")
    row(item, f"{label} — {len(ratios)} passes, median (worst pass)", fmt_ips(rate_num), fmt_ips(rate_den), shown,
        "—", verdict)
pass_row("23 (6)", "whole path (fetch from nginx, decode, memory + disk store), 2 MP photos, c=6: a work pool of 2 "
         "threads vs 1", ("manager", 2), ("manager", 1), 1.8)
pass_row("23 (6)", "raw TurboJPEG decode of the same bodies: 2 threads vs 1 (what the cores allow)", ("decode", 2),
         ("decode", 1), None)
for threads in (1, 2):
    pass_row("23 (6)", f"whole path vs decoding alone, both on {threads} thread(s)", ("manager", threads),
             ("decode", threads), 0.9)
# The same path with its memory cache full, as a running server's (each store evicts an image, whose pages the next
# decode can reuse); the cold rows above fill an empty cache, so every decode writes pages the kernel must zero.
pass_row("23 (6)", "whole path, memory cache kept full (256 MB, each store evicts): 2 threads vs 1",
         ("managerKept", 2), ("managerKept", 1), 1.8)
for threads in (1, 2):
    pass_row("23 (6)", f"whole path, memory cache kept full (256 MB), vs decoding alone, both on {threads} thread(s)",
             ("managerKept", threads), ("decode", threads), 0.9)
# Huge pages (PixelPool.usesHugePages, on by default), A/B within each pass: the cold path faults in 512× fewer pages;
# the kernel still zeroes every fresh one.
for threads in (1, 2):
    pass_row("34 (3)", f"cold whole path, pixel blocks on huge pages (the default) vs 4 KiB pages, both on {threads} "
             "thread(s)", ("manager", threads), ("managerSmall", threads), None)
for threads in (1, 2):
    pass_row("34 (3)", f"cold whole path with pixel blocks in 4 KiB pages vs decoding alone, both on {threads} "
             "thread(s)", ("managerSmall", threads), ("decode", threads), None)
for threads in (1, 2):
    pass_row("23 (6)", f"diagnosis: the cold whole path with glibc keeping freed memory (no trim, fixed mmap "
             f"threshold) vs decoding alone, both on {threads} thread(s)", ("managerRetained", threads),
             ("decode", threads), None)
# Memory hit, disk hit and store (issue 23 items 2, 3, 4): five passes by cache-passes.sh, the median and the worst pass.
passes_path = os.path.join(os.path.dirname(out_path), ".build", "bench-cache-passes", "summary.json")
cache_passes = json.load(open(passes_path)) if os.path.exists(passes_path) else None
if cache_passes:
    for r in cache_passes["rows"]:
        label = f"{r['what']} — {cache_passes['passes']} passes, median (worst pass)"
        if not r["passes"]:
            row("23", label, "n/a", "n/a", "n/a", "n/a", f"≤ {r['goal']}×"); continue
        met = "✅" if r["cpu_median"] <= r["goal"] else "❌"
        row(f"23 ({r['item']})", label, pair(r["sdk_wall"], r["sdk_cpu"]), pair(r["base_wall"], r["base_cpu"]),
            f"{r['wall_median']:.2f}× ({r['wall_worst']:.2f}×)", f"{r['cpu_median']:.2f}× ({r['cpu_worst']:.2f}×)",
            f"≤ {r['goal']}× {met} (CPU per pass: " + ", ".join(f"{p['cpu']:.2f}×" for p in r["passes"]) + ")")
else:
    time_row("4, 10", "disk hit 50 KB: `DiskCache.entry` vs raw open+read of the same file (one pass)", S("Cache_diskHit_50KB_DiskCache"), S("Cache_diskHit_50KB_rawOpenRead"), "≤ 1.2×")
time_row("10", "disk hit 50 KB with `verifiesChecksums` (XXH64 of the body) vs raw open+read", S("Cache_diskHit_50KB_DiskCacheVerified"), S("Cache_diskHit_50KB_rawOpenRead"))
if not cache_passes:
    store_writers = sorted({int(m.group(1)) for m in (re.match(r"Cache_store_50KB_(\d+)writers_DiskCache", n) for n in swift) if m}) or [1]
    for w in store_writers:
        time_row("10", f"store 50 KB, {w} writer thread(s): `DiskCache.storeData` (temp + rename) vs raw write+rename, same threads (one pass)", S(f"Cache_store_50KB_{w}writers_DiskCache"), S(f"Cache_store_50KB_{w}writers_rawWriteRename"), "≤ 1.3×")
    time_row("10", f"store 50 KB: async `store` on the write pool vs raw write+rename with {store_writers[-1]} writer thread(s) (one pass)", S("Cache_store_50KB_asyncPool_DiskCache"), S(f"Cache_store_50KB_{store_writers[-1]}writers_rawWriteRename"), "≤ 1.3×")
swept = next((re.match(r"Cache_sweep_(\d+)_DiskCache", n).group(1) for n in swift if re.match(r"Cache_sweep_(\d+)_DiskCache", n)), sweep_n)
time_row("4", f"sweep of {int(swept):,} entries (nothing to trim) vs readdir+stat walk", S(f"Cache_sweep_{swept}_DiskCache"), S(f"Cache_sweep_{swept}_rawReaddirStat"), "≤ 2×")

# Issue 6 — transformers
for label, key in [("resize 12 MP RGBA → fit 256×256 (Lanczos-3)", "resize_12MP_fit256"),
                   ("resize 12 MP RGBA → fit 1920×1080 (Lanczos-3)", "resize_12MP_fit1920x1080"),
                   ("Gaussian blur σ=8, 2 MP RGBA", "blur_2MP_sigma8")]:
    sdk = S(f"Transform_{key}_SDK")
    ext_key = key.replace("_12MP", "").replace("_2MP", "")
    time_row("6", f"{label}: SDK vs Pillow", sdk, E(f"pillow_{ext_key}"), "< 1×")
    if ext_key.startswith("resize"):
        time_row("10", f"{label}: SDK vs Pillow with `reducing_gap=3` (box reduction first, as the SDK does)", sdk,
                 E(f"pillow_{ext_key}_reducing"))
    time_row("6", f"{label}: SDK vs `vips` CLI minus start-up ({fmt_time(ext.get('vips_' + ext_key))} raw)", sdk,
             E(f"vips_{ext_key}", "vips_overhead"), "≤ 1.5×")

# Issue 5 — HTTP (rates: higher is better; the CPU column compares CPU time per image)
for label, count, desc in [("small1000", 1000, "1,000 small JPEGs"), ("photo200", 200, "200 photos of 30–200 KB"),
                           ("2MP100", 100, "100 2 MP JPEGs")]:
    dec = t(f"HTTP_{label}_decodeOne_SDK")
    for c in (6, 64):
        lo = f"HTTP_{label}_c{c}_loaderOnly"
        bare = f"HTTP_{label}_c{c}_bareAHC"
        # Issues 10 and 23: what HTTPLoader adds on top of its client (CPU per request is the goal; rate beside
        # it), from the passes when they ran, else from the single run above.
        pass_row = next((r for r in http_loader_rows if f"{desc}, c={c}:" in r and "n/a" not in r), None)
        if pass_row:
            rows.append(pass_row)
        elif cpu(lo) and cpu(bare) and t(lo) and t(bare):
            row("10, 23", f"{desc}, c={c}: `HTTPLoader` vs bare AsyncHTTPClient `execute` (bytes only), CPU per request; rate",
                f"CPU {fmt_time(cpu(lo) / count)}/req; {count / (t(lo) / 1e9):,.0f} req/s",
                f"CPU {fmt_time(cpu(bare) / count)}/req; {count / (t(bare) / 1e9):,.0f} req/s",
                ratio(t(lo), t(bare)), ratio(cpu(lo), cpu(bare)), "CPU ≤ 1.15× " + ("✅" if cpu(lo) <= 1.15 * cpu(bare) else "❌") + " (one run)")
        else:
            row("23", f"{desc}, c={c}: `HTTPLoader` vs bare AsyncHTTPClient `execute`", "n/a", "n/a", "n/a", "n/a", "CPU ≤ 1.15×")
        rps = count / (t(lo) / 1e9) if t(lo) else None
        mbps = t(lo, "bytes") / (t(lo) / 1e9) / 2**20 if t(lo) and t(lo, "bytes") else None
        wrk_rps, wrk_bps = ext.get(f"wrk_{label}_c{c}_rps"), ext.get(f"wrk_{label}_c{c}_Bps")
        row("5", f"{desc}, c={c}: loader only vs wrk (req/s; MB/s)",
            f"{rps:,.0f} req/s; {mbps:,.1f} MB/s; CPU {fmt_time(cpu(lo) / count)}/req" if rps and mbps and cpu(lo) else "n/a",
            f"{wrk_rps:,.0f} req/s; {wrk_bps/2**20:,.1f} MB/s" if wrk_rps else "n/a", ratio(rps, wrk_rps), "—", "≥ 0.5×")
        mp = f"HTTP_{label}_c{c}_managerPath"
        ips = count / (t(mp) / 1e9) if t(mp) else None
        py, py_cpu = ext.get(f"pystore_{label}_c{c}_ips"), ext.get(f"pystore_{label}_c{c}_cpu")
        row("10", f"{desc}, c={c}: manager path (fetch, decode, memory + disk store) vs {ext.get('http_client', 'httpx')} + Pillow + the same atomic disk store (img/s; CPU per image)",
            f"{ips:,.0f} img/s; CPU {fmt_time(cpu(mp) / count)}/img" if ips and cpu(mp) else "n/a",
            f"{py:,.0f} img/s; CPU {fmt_time(py_cpu / count)}/img" if py and py_cpu else "n/a",
            ratio(ips, py), ratio(cpu(mp), py_cpu), "≥ 3×")
        limit = 2 / (dec / 1e9) if dec else None
        row("5", f"{desc}, c={c}: manager path vs decode-bound limit (2 cores ÷ {fmt_time(dec)} per decode)",
            f"{ips:,.0f} img/s" if ips else "n/a", f"{limit:,.0f} img/s" if limit else "n/a", ratio(ips, limit), "—", "≥ 0.8×")

# Issue 12 — AVIF (2 MP; one thread; quantizer 9 = quality 0.85; Pillow bundles its own, newer libavif)
time_row("12", "AVIF 2 MP decode: SDK vs raw libavif", S("AVIF_2MP_decode_SDK"), S("AVIF_2MP_decode_C"), "≤ 1.05×")
time_row("12", f"AVIF 2 MP decode: SDK vs Pillow {ext.get('pillow_version', '')} (libavif {ext.get('pillow_libavif', 'n/a')})",
         S("AVIF_2MP_decode_SDK"), E("pillow_avif_2MP_decode"))
for label, speed in [("fast", 10), ("balanced", 6)]:
    time_row("12", f"AVIF 2 MP encode, speed {speed}: SDK vs raw libavif", S(f"AVIF_2MP_encode_{label}_SDK"),
             S(f"AVIF_2MP_encode_{label}_C"), "≤ 1.05×")
    time_row("12", f"AVIF 2 MP encode, speed {speed}: SDK vs Pillow", S(f"AVIF_2MP_encode_{label}_SDK"),
             E(f"pillow_avif_2MP_encode_{label}"))
# Issue 24 — HEIC (libheif 1.15: libde265 decodes, x265 encodes; tiles on the calling thread) and sRGB conversion
time_row("24", "HEIC 2 MP decode (libheif-encoded, one item): SDK (probe + decode) vs raw libheif",
         S("HEIC_2MP_decode_SDK"), S("HEIC_2MP_decode_C"), "≤ 1.05×")
time_row("24", "HEIC 12 MP iPhone grid decode (corpus-heic IMG_2927, 48 tiles): SDK vs raw libheif",
         S("HEIC_12MP_grid_decode_SDK"), S("HEIC_12MP_grid_decode_C"), "≤ 1.05×")
time_row("24", "HEIC 2 MP encode (quality 0.85, preset fast, 4:2:0): SDK vs raw libheif",
         S("HEIC_2MP_encode_SDK"), S("HEIC_2MP_encode_C"), "≤ 1.05×")
time_row("24", "Display P3 → sRGB, 2 MP RGB: `LCMSColorConverter` vs raw lcms2 `cmsDoTransform` (transform made once)",
         S("Color_2MP_P3toSRGB_SDK"), S("Color_2MP_P3toSRGB_C"))
# Issue 24 — JPEG XL (one thread, 8-bit output, every frame) and APNG (every frame composited)
for name, what in [("JXL_2MP_lossy", "JPEG XL 2 MP lossy (distance 1)"), ("JXL_2MP_lossless", "JPEG XL 2 MP lossless"),
                   ("JXL_anim30_480x270", "JPEG XL animation, 30 frames of 480x270, every frame")]:
    time_row("24", f"{what} decode through `CodersManager`: SDK vs raw libjxl (djxl's decode loop)",
             S(f"{name}_decode_SDK"), S(f"{name}_decode_C"), "≤ 1.05×")
for label, what in [("rgb_source", "RGB, 60 frames (mostly small changed rectangles), blend source"),
                    ("rgba_over", "RGBA, 60 whole frames, blend over")]:
    pillow = f"Pillow {ext.get('pillow_apng_version', '')}"
    time_row("24", f"APNG 480x270 {what}, every frame held (`.preloadAllFrames`): SDK vs {pillow} keeping each "
             "frame as RGBA", S(f"APNG_{label}_decode_SDK"), E(f"pillow_apng_{label}_kept"), "≤ 1.05×")
    time_row("24", f"APNG 480x270 {what}, every frame on demand, each dropped: SDK vs {pillow} seek + load "
             "(one image updated in place)", S(f"APNG_{label}_decodeOnDemand_SDK"), E(f"pillow_apng_{label}"),
             "≤ 1.05×")
# Issue 11 — Redis: a hit vs redis-benchmark GET of the same value size (smaller stored value = "small")
gets = sorted((int(k), v) for k, v in ext.get("redis_get", {}).items())
for (label, (size, get)) in zip(["small", "2MP"], gets):
    for kind, what in [("fetch", "fetch"), ("fetchDecode", "fetch + JPEG decode")]:
        time_row("11", f"Redis hit, {size:,} B value: `RedisCache` {what} vs `redis-benchmark -t get -c 1` (p50; CPU/op)",
                 S(f"Redis_hit_{label}_{kind}"), (get["p50"], get["cpu"]))
for replicas in (2, 3):
    base_name = f"Redis_fleet_{replicas}replicas_memoryOnly"
    nr, nh = t(base_name, "loaderRequests"), t(base_name, "hitRatioPermille")
    for mode, what in [("redis", "Redis, coalescing off"), ("redisCoalescing", "Redis + fleet coalescing")]:
        wr, wh = t(f"Redis_fleet_{replicas}replicas_{mode}", "loaderRequests"), t(f"Redis_fleet_{replicas}replicas_{mode}", "hitRatioPermille")
        row("11", f"{replicas} replicas × 200 URLs (local nginx origin): origin requests; hit ratio — {what} vs memory only",
            f"{wr:.0f} requests; {wh / 10:.1f} % hits" if wr is not None and wh is not None else "n/a",
            f"{nr:.0f} requests; {nh / 10:.1f} % hits" if nr is not None and nh is not None else "n/a",
            ratio(wr, nr), "—", "requests = 200 with coalescing")

head = [
    "# WebImage benchmark results",
    "",
    f"Run {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')} on {os.cpu_count()} cores; load average "
    f"{load_start} at the start and {load} at the end; total {int(elapsed)//60} min {int(elapsed)%60} s. "
    "Swift figures are medians (p50) from the benchmark package, external ones medians of repeated runs. "
    "Ratio = SDK ÷ baseline: for times lower is better; for rates (req/s, img/s, ops/s) higher is better. "
    "The CPU ratio compares process CPU time (exact clock, all threads) and is the steadier figure when the "
    "machine is shared; for the ops/s rows it is CPU per hit, for the img/s rows CPU per image (lower is better). "
    "See README.md for what each row compares.",
    "",
] + ([f"**Not measured:** {', '.join(not_built)} did not build (an SDK plugin it needs does not compile); "
      "their rows show n/a.", ""] if not_built else []) + [
    "| issue | comparison | SDK | baseline | ratio (wall) | ratio (CPU) | goal |",
    "|---|---|---|---|---|---|---|",
]
text = "\n".join(head + rows) + "\n"
open(out_path, "w").write(text)
print(text)
PYEOF
# Instruction counts of the hot paths (callgrind): steady where the timed rows above are not.
log "instructions per operation (callgrind)"
"$HERE/instructions.sh" "$HERE/RESULTS.md" >&2 || echo "instructions.sh failed: no instruction table this run" >&2
# The whole path per image beside its raw stages, and the flame graphs (PROFILE.md); its table is copied into
# RESULTS.md so that file shows every goal.
append_profile_table() {
    {
        echo ""
        echo "## The whole path per image beside the sum of its raw stages (profile.sh; goal ≤ 1.3×)"
        echo ""
        grep -m1 '^Run ' "$HERE/PROFILE.md"
        echo ""
        sed -n '/^| images/,/^$/p' "$HERE/PROFILE.md"
        echo "Flame graphs and the split by stage: [PROFILE.md](PROFILE.md)."
    } >>"$HERE/RESULTS.md"
}
log "whole path per stage (profile.sh)"
if "$HERE/profile.sh" >&2; then
    append_profile_table
else
    echo "profile.sh failed: PROFILE.md not updated this run" >&2
fi
log "done"
