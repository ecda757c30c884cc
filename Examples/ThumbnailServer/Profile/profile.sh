#!/usr/bin/env bash
# Where a result miss of the thumbnail server spends its time, stage by stage (issue 22, deliver A).
#
#   Examples/ThumbnailServer/Profile/profile.sh    → Profile/PROFILE.md and Profile/flamegraph-miss.svg
#
# The workload of the issue's benchmark: ~2 MP photos (50 distinct 1920x1280 JPEGs cut from the shared corpus's
# camera photos with vips, quality 90) served by a local nginx; every request a fit-inside 512x512 in the source's
# format, a result-cache miss (the box's height varies from 512 down, which leaves the output at 512x341 but gives
# every request its own result), at concurrency 2. Two phases against one release server with its default
# configuration (unsigned requests and the origin's address allowed): `cold` asks each source once (origin
# misses), `steady` runs wrk for PROFILE_SECONDS (default 20) over sources the server has cached (source hits,
# result misses), with perf sampling the server. Stage times are the server's own histograms (sum ÷ count over
# the phase); CPU per request is the server process's user+system time (/proc) over the phase ÷ requests.
# A baseline runs in the same run: raw TurboJPEG decoding of the same sources at each DCT scale (a small C program
# built with gcc against libturbojpeg), the floor of the decode stage. On a busy machine the stage histograms (wall
# time) stretch with the wait for a core; the CPU split from perf does not. Not in CI. Environment: IMAGE_CORPUS
# (default ../shared/corpus), PROFILE_SECONDS, SWIFT.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
EXAMPLE="$(dirname "$HERE")"
ROOT="$(cd "$EXAMPLE/../.." && pwd)"
SWIFT="${SWIFT:-swift}"
CORPUS="${IMAGE_CORPUS:-$(cd "$ROOT/.." && pwd)/shared/corpus}"
SECONDS_STEADY=${PROFILE_SECONDS:-20}
WORK="$(mktemp -d /tmp/thumbs-profile.XXXXXX)"
chmod 755 "$WORK"
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
log() { printf '\n==> %s\n' "$*" >&2; }
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
for tool in vips wrk nginx perf curl gcc; do command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || {
    echo "profile.sh: $tool missing (apt-get install libvips-tools wrk nginx-light linux-perf curl)" >&2; exit 1; }; done

log "sources: 50 crops of 1920x1280 from $CORPUS/photos"
mkdir -p "$WORK/www"
n=0
for photo in "$CORPUS"/photos/*.jpg; do
    width=$(vipsheader -f width "$photo"); height=$(vipsheader -f height "$photo")
    ((width >= 1920 && height >= 1280)) || continue
    for i in $(seq 0 9); do
        left=$(( (width - 1920) * i / 9 )); top=$(( (height - 1280) * (9 - i) / 9 ))
        vips crop "$photo" "$WORK/www/$(printf %02d $n).jpg[Q=90,strip]" "$left" "$top" 1920 1280
        n=$((n + 1))
    done
done
((n >= 50)) || { echo "profile.sh: only $n sources (need the corpus's camera photos)" >&2; exit 1; }
SOURCE_BYTES=$(du -cb "$WORK"/www/*.jpg | tail -1 | cut -f1)

log "baseline: raw TurboJPEG (tjDecompress2) per source at each DCT scale, one thread, CPU time"
cat >"$WORK/tjbench.c" <<'EOF2'
#include <turbojpeg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    const int num[] = {1, 1, 3, 1}, den[] = {1, 2, 8, 4};
    double total[4] = {0};
    tjhandle h = tjInitDecompress();
    for (int a = 1; a < argc; a++) {
        FILE *f = fopen(argv[a], "rb"); fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
        unsigned char *in = malloc(n); if (fread(in, 1, n, f) != (size_t)n) return 1; fclose(f);
        int w, ht, ss, cs; tjDecompressHeader3(h, in, n, &w, &ht, &ss, &cs);
        for (int k = 0; k < 4; k++) {
            int sw = (w * num[k] + den[k] - 1) / den[k], sh = (ht * num[k] + den[k] - 1) / den[k];
            unsigned char *out = malloc((size_t)sw * sh * 3);
            double t0 = cpu();
            for (int r = 0; r < 4; r++) tjDecompress2(h, in, n, out, sw, sw * 3, sh, TJPF_RGB, 0);
            total[k] += (cpu() - t0) / 4; free(out);
        }
        free(in);
    }
    for (int k = 0; k < 4; k++) printf("%d/%d %.2f\n", num[k], den[k], total[k] / (argc - 1) * 1000);
    return 0;
}
EOF2
gcc -O2 "$WORK/tjbench.c" -o "$WORK/tjbench" -lturbojpeg
"$WORK/tjbench" "$WORK"/www/*.jpg >"$WORK/tjbench.txt"
cat "$WORK/tjbench.txt" >&2

log "nginx"
ORIGIN_PORT=$(free_port)
mkdir -p "$WORK/nginx/logs" "$WORK/nginx/tmp"
cat >"$WORK/nginx/nginx.conf" <<EOF
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/logs/error.log warn;
daemon off;
events { worker_connections 1024; }
http {
    access_log off; sendfile on; keepalive_requests 1000000; keepalive_timeout 120s;
    client_body_temp_path $WORK/nginx/tmp; proxy_temp_path $WORK/nginx/tmp; fastcgi_temp_path $WORK/nginx/tmp;
    uwsgi_temp_path $WORK/nginx/tmp; scgi_temp_path $WORK/nginx/tmp;
    types { image/jpeg jpg; }
    server { listen 127.0.0.1:$ORIGIN_PORT; root $WORK/www; }
}
EOF
"$(command -v nginx || echo /usr/sbin/nginx)" -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" &
PIDS+=($!)

log "build (release)"
"$SWIFT" build -c release --package-path "$EXAMPLE" --product thumbnail-server >&2
BIN="$("$SWIFT" build -c release --package-path "$EXAMPLE" --show-bin-path)/thumbnail-server"

log "server (default configuration)"
PORT=$(free_port); METRICS_PORT=$(free_port)
PORT=$PORT METRICS_PORT=$METRICS_PORT ALLOW_UNSIGNED=1 ALLOWED_ADDRESSES=127.0.0.1/32 CACHE_DIR="$WORK/cache" \
    "$BIN" 2>"$WORK/server.log" &
SERVER=$!
PIDS+=("$SERVER")
for _ in $(seq 200); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.05; done
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"

path() { # source index, box height
    printf '/thumbnail?url=http%%3A%%2F%%2F127.0.0.1%%3A%s%%2F%02d.jpg&w=512&h=%d&format=source\n' "$ORIGIN_PORT" "$1" "$2"
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER/stat"; }
metrics() { curl -fs "http://127.0.0.1:$METRICS_PORT/metrics"; }
# name → value of an unlabelled sample in a metrics snapshot
sample() { awk -v n="$2" '$1 == n { print $2 }' "$1"; }

log "cold phase: each source once (origin misses)"
metrics >"$WORK/m0"; t0=$(cpu_ticks); s0=$(date +%s.%N)
for i in $(seq 0 49); do curl -fs -o "$WORK/out.jpg" "http://127.0.0.1:$PORT$(path "$i" 512)"; done
s1=$(date +%s.%N); t1=$(cpu_ticks); metrics >"$WORK/m1"
vipsheader "$WORK/out.jpg" >&2

log "steady phase: wrk -t1 -c2 for ${SECONDS_STEADY}s (source hits, result misses), perf sampling"
: >"$WORK/paths"
for h in $(seq 511 -1 342); do for i in $(seq 0 49); do path "$i" "$h" >>"$WORK/paths"; done; done
perf record -q -F 499 --call-graph dwarf,16384 -p "$SERVER" -o "$WORK/perf.data" -- sleep $((SECONDS_STEADY - 2)) \
    2>/dev/null &
PERF=$!
t2=$(cpu_ticks)
PATHS="$WORK/paths" wrk -t1 -c2 -d"${SECONDS_STEADY}s" --latency -s "$HERE/rotate.lua" "http://127.0.0.1:$PORT" \
    >"$WORK/wrk.txt"
t3=$(cpu_ticks); metrics >"$WORK/m2"
wait "$PERF" || true
LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"
cat "$WORK/wrk.txt" >&2
PEAK_RSS=$(awk '/VmHWM/ { print $2 }' "/proc/$SERVER/status")
RSS_NOW=$(awk '/VmRSS/ { print $2 }' "/proc/$SERVER/status")

perf script -i "$WORK/perf.data" 2>/dev/null |
    /usr/bin/python3 "$HERE/stages.py" "$HERE/flamegraph-miss.svg" "thumbnail server, result misses (source hits)" \
    >"$WORK/stages.json"

/usr/bin/python3 - "$WORK" "$LOAD_START" "$LOAD_END" "$SECONDS_STEADY" "$((t1 - t0))" "$((t3 - t2))" \
    "$s0" "$s1" "$PEAK_RSS" "$RSS_NOW" "$SOURCE_BYTES" >"$HERE/PROFILE.md" <<'EOF'
import json, re, sys
work, load_start, load_end, seconds, cold_ticks, steady_ticks, s0, s1, peak, rss_now, source_bytes = sys.argv[1:]
tick = 10.0  # ms per clock tick (CLK_TCK 100)

def snapshot(name):
    values = {}
    for line in open(f"{work}/{name}"):
        if line.startswith("#") or " " not in line:
            continue
        key, value = line.rsplit(" ", 1)
        values[key] = float(value)
    return values

m0, m1, m2 = snapshot("m0"), snapshot("m1"), snapshot("m2")

def stage(a, b, name):
    count = b.get(f"thumbnail_{name}_seconds_count", 0) - a.get(f"thumbnail_{name}_seconds_count", 0)
    total = b.get(f"thumbnail_{name}_seconds_sum", 0) - a.get(f"thumbnail_{name}_seconds_sum", 0)
    return count, (1000 * total / count if count else 0)

wrk = open(f"{work}/wrk.txt").read()
requests = int(re.search(r"(\d+) requests in", wrk).group(1))
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", wrk).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", wrk)
latency = {p: re.search(rf"\s{p}%\s+([\d.]+\w+)", wrk).group(1) for p in ("50", "99")}
stages = json.load(open(f"{work}/stages.json"))
samples = stages.pop("samples")

print("# Where a result miss goes: the thumbnail server stage by stage\n")
print(f"Run by `Examples/ThumbnailServer/Profile/profile.sh` on this 2-core machine, shared with other work "
      f"(load average {load_start} at the start, {load_end} at the end). Release build, default configuration. "
      f"50 distinct 1920x1280 JPEGs (quality 90, {int(source_bytes) / 50 / 1024:.0f} KB on average) from a local "
      f"nginx; every request `w=512&h=<512…342>&format=source`: a fit-inside 512x512 (output 512x341 JPEG), "
      f"each a result-cache miss. Stage times are the server's histograms over the phase (sum ÷ count); CPU is the "
      f"server process's user + system time ÷ requests.\n")
print("| phase | requests | req/s | CPU per request | origin | decode (DCT-scaled) | resize | encode | store |")
print("|---|---|---|---|---|---|---|---|---|")
cold_seconds = float(s1) - float(s0)
for label, a, b, n, ticks, rate_text in (
    ("cold: origin misses, sequential", m0, m1, 50, int(cold_ticks), f"{50 / cold_seconds:.1f}"),
    (f"steady: source hits, c=2, {seconds} s", m1, m2, requests, int(steady_ticks), f"{rate:.1f}"),
):
    cells = []
    for name in ("origin", "decode", "resize", "encode", "store"):
        count, mean = stage(a, b, name)
        cells.append(f"{mean:.2f} ms ({int(count)})" if count else "—")
    print(f"| {label} | {n} | {rate_text} | {int(ticks) * tick / n:.2f} ms | " + " | ".join(cells) + " |")
cpu_steady = int(steady_ticks) * tick / requests
print("\nWhere the CPU of a steady-phase request goes, from the profile: " + ", ".join(
    f"{k} {v / samples * cpu_steady:.2f} ms" for k, v in stages.items()) + f" (of {cpu_steady:.2f} ms).\n")
raw = dict(line.split() for line in open(f"{work}/tjbench.txt"))
print("Baseline measured in the same run, one thread: raw `tjDecompress2` of these sources, CPU per image, at each "
      "DCT scale: " + ", ".join(f"{scale} {float(ms):.2f} ms" for scale, ms in raw.items()) + ". The server asks "
      "for 3/8 (720x480, the smallest scale that still covers 512x341), then area-averages to 512x341.\n")
print(f"Steady phase latency: p50 {latency['50']}, p99 {latency['99']}"
      + (f"; {errors.group(1)} non-2xx answers" if errors else "; no errors") + ". "
      f"Peak RSS {int(peak) / 1024:.0f} MB ({int(rss_now) / 1024:.0f} MB at the end).\n")
print(f"Whole-request profile of the steady phase ([flamegraph-miss.svg](flamegraph-miss.svg), perf at 499 Hz, "
      f"{samples} samples): " + ", ".join(f"{k} {100 * v / samples:.1f}%" for k, v in stages.items()) + ".\n")
print("A sample counts for the first stage whose code is on its stack: area average (the JPEG coder's exact step "
      "after DCT scaling, ImageCore's AreaResampler), encode (libjpeg-turbo's compressor, the encoders), decode "
      "(TurboJPEG's decompressor and DCT scaling, the other decoders), resize "
      "(crop and Lanczos), store (DiskCache, the memory caches, ext4), network (Hummingbird, NIO, AsyncHTTPClient, "
      "the kernel's TCP); bookkeeping is the rest (routing, keys, metrics, logging, the Swift runtime, malloc). A "
      "stage histogram's count is how often the stage ran: one decode, one resize and one encode per miss.")
EOF
cat "$HERE/PROFILE.md"
