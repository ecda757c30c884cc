#!/usr/bin/env bash
# Issue 23, item 1: HTTPLoader against a bare AsyncHTTPClient (`HTTPClient.execute`, bytes only, same concurrency,
# same client configuration), CPU per request, as PASSES passes of HTTPBenchmarks' loaderOnly and bareAHC rows
# (1,000 small JPEGs, 200 photos, 100 2 MP JPEGs; c=6 and c=64). Each pass runs every row once, the two rows of a
# pair back to back, so a pass's ratio compares runs that saw the same machine; the report gives the median
# ratio and the worst pass.
#
#   Benchmarks/http-passes.sh [PASSES]   standalone: exports the inputs, starts nginx, runs the passes and prints
#                                        the rows (about 5 minutes for 5 passes once built)
#
# run.sh calls it with WEBIMAGE_BENCH_HTTP_BASE set (its nginx) and prints the rows in RESULTS.md. Results go to
# .build/bench-http-passes/<pass>/ (one TSV of percentiles per benchmark and metric).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
SWIFT="${SWIFT:-swift}"
PASSES="${1:-${WEBIMAGE_BENCH_HTTP_PASSES:-5}}"
OUT="$HERE/.build/bench-http-passes"
FILTER='HTTP_(small1000|photo200|2MP100)_c(6|64)_(loaderOnly|bareAHC)'
WORK=""
NGINX_PID=""

cleanup() {
    if [[ -n "$NGINX_PID" ]] && kill -0 "$NGINX_PID" 2>/dev/null; then kill "$NGINX_PID" 2>/dev/null || true; fi
    if [[ -n "$WORK" ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

if [[ -z "${WEBIMAGE_BENCH_HTTP_BASE:-}" ]]; then
    # shellcheck source=lib/nginx.sh
    source "$HERE/lib/nginx.sh"
    WORK="$(mktemp -d /tmp/webimage-http-passes.XXXXXX)"
    chmod 755 "$WORK"  # nginx workers run as nobody and must read the served files
    "$SWIFT" build -c release --product ExportInputs >&2
    "$("$SWIFT" build -c release --show-bin-path)/ExportInputs" "$WORK/inputs" >&2
    start_nginx "$WORK/inputs/http" "$WORK/nginx" "$(command -v nginx || echo /usr/sbin/nginx)"
    export WEBIMAGE_BENCH_HTTP_BASE="http://127.0.0.1:$PORT/"
    cat "$WORK"/inputs/http/*/* >/dev/null  # warm the page cache
fi

rm -rf "$OUT"
for pass in $(seq "$PASSES"); do
    echo "HTTPLoader vs bare AsyncHTTPClient: pass $pass of $PASSES" >&2
    mkdir -p "$OUT/$pass"
    "$SWIFT" package --allow-writing-to-package-directory benchmark --target HTTPBenchmarks --filter "$FILTER" \
        --format histogramPercentiles --path "$OUT/$pass" --no-progress >"$OUT/$pass.log" 2>&1 || {
        echo "pass $pass failed; its log:" >&2
        tail -30 "$OUT/$pass.log" >&2
        exit 1
    }
done

if [[ -n "$WORK" ]]; then
    /usr/bin/python3 "$HERE/http_passes.py" "$OUT"
fi
