#!/usr/bin/env bash
# The raw libwebp floor of issue 34's WebP row, side by side with libvips: raw_libwebp.c, built against the system
# libwebp (the one the ThumbnailServer links), and vips_worker.py (bench-proxy's libvips, WebP at Q 80), alternated
# on one core over bench-proxy's WebP sources. Run `make bench-vips` (or bench-proxy) once first: it makes the
# sources and the virtualenv. ROUNDS pairs (default 3), SECONDS per libvips run (default 10), CPU (default 0).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="$HERE/.build"
SOURCES="$BUILD/sources"
[[ -d "$SOURCES/webp" && -x "$BUILD/venv/bin/python" ]] ||
    { echo "raw_libwebp: no sources or virtualenv in $BUILD (run make bench-vips first)" >&2; exit 1; }
"${CC:-cc}" -O2 -Wall "$HERE/raw_libwebp.c" -o "$BUILD/raw_libwebp" -lwebp
cpu="${CPU:-0}"
for round in $(seq 1 "${ROUNDS:-3}"); do
    raw="$(taskset -c "$cpu" "$BUILD/raw_libwebp" 2 "$SOURCES"/webp/*.webp)"
    vips="$(VIPS_CONCURRENCY=1 taskset -c "$cpu" "$BUILD/venv/bin/python" "$HERE/vips_worker.py" --sources "$SOURCES" \
        --folder webp --format webp --seconds "${SECONDS_VIPS:-10}" --warmup 1 --save '{"Q": 80}')"
    RAW="$raw" VIPS="$vips" ROUND="$round" python3 - <<'PY'
import json, os, re
raw = os.environ["RAW"]
vips = json.loads(os.environ["VIPS"])
raw_ms = float(re.search(r"= ([0-9.]+);", raw).group(1))
vips_ms = vips["cpu_s"] / vips["thumbnails"] * 1e3
assert vips["wrong_answers"] == 0, vips["wrong"]
print(f"round {os.environ['ROUND']}: {raw}")
print(f"  libvips {vips['libvips']}: {vips['thumbnails']} thumbnails, CPU {vips_ms:.1f} ms per thumbnail, "
      f"mean {vips['bytes'] / vips['thumbnails'] / 1000:.1f} KB; raw libwebp / libvips = {raw_ms / vips_ms:.2f}x")
PY
done
