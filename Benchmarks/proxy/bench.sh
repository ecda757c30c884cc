#!/usr/bin/env bash
# The image-proxy benchmark of issue 22: the ThumbnailServer example (release) against thumbor 7.8, on the same
# ~2 MP photos served by a local nginx, each request a fit-inside 512x512 in the source's format. Not in CI.
# See Benchmarks/proxy/README.md. Usage (from anywhere):
#
#   Benchmarks/proxy/bench.sh            # or: make bench-proxy
#
# Environment: IMAGE_CORPUS (default ../shared/corpus from the repository root), DURATION (seconds measured per
# run, default 15; AVIF: DURATION_AVIF, default twice that), WARMUP (default 3), ROUNDS (default 3), CONCURRENCY
# (default "2 8"), FORMATS (default "jpeg png webp avif"), CONFIGS (ids from servers.py, default all: sdk thumbor1
# thumbor2 thumbor2c vips; `make bench-vips` is CONFIGS="sdk vips" HERD=0 OUT=Benchmarks/proxy/vips), OUT (the
# folder for RESULTS.md, results.json and results.png; default this one), VIPS_PROCESSES (default 2), CPUS (cores
# both servers are pinned to, default 0,1), HERD (requests, default 100; 0 skips), HERD_FORMATS (default
# "jpeg png"), SERVER_BIN (a built thumbnail-server: skips the build), SERVER_SCRATCH (the server's SwiftPM
# scratch path), and the SERVER_* overrides of servers.py.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="$HERE/.build"
# Where RESULTS.md, results.json and results.png go (make bench-vips: vips/, beside thumbor's table).
OUT="${OUT:-$HERE}"
mkdir -p "$OUT"
VENV="$BUILD/venv"
THUMBOR_SPEC="thumbor==7.8.*"
# libvips 8.18 in-process (issue 34): pyvips with the binary wheel that bundles libvips (no libvips-dev needed).
VIPS_SPECS=("pyvips[binary]==3.2.0" "pyvips-binary==8.18.7")
log() { printf '\n== bench-proxy: %s\n' "$*" >&2; }

mkdir -p "$BUILD"

# --- 1. Debian packages: nginx, wrk, Python's venv, curl (pycurl and Pillow come as wheels from PyPI) -----------
SUDO=""
[[ "$(id -u)" -ne 0 ]] && SUDO="sudo"
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
need=()
for p in nginx-light wrk python3-venv curl util-linux procps; do installed "$p" || need+=("$p"); done
# Only if pip finds no wheel for this Python and has to build pycurl and Pillow from source (see README.md).
[[ "${BENCH_PROXY_BUILD_DEPS:-0}" = 1 ]] && for p in build-essential python3-dev libcurl4-openssl-dev libssl-dev \
    libjpeg62-turbo-dev zlib1g-dev libwebp-dev libavif-dev; do installed "$p" || need+=("$p"); done
if [[ "${#need[@]}" -gt 0 ]]; then
    log "apt-get install ${need[*]}"
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# --- 2. thumbor 7.8 from PyPI in a virtualenv inside the build folder (Debian's python3; system site untouched) --
if ! "$VENV/bin/python" -c 'import thumbor, pycurl, matplotlib, pyvips' 2>/dev/null; then
    log "virtualenv $VENV: $THUMBOR_SPEC, pycurl, matplotlib, ${VIPS_SPECS[*]}"
    [[ -x "$VENV/bin/python" ]] || /usr/bin/python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --upgrade pip
    # Fails early and loudly when PyPI is unreachable or a dependency does not build.
    "$VENV/bin/pip" install --quiet "$THUMBOR_SPEC" "pycurl>=7.45.2,<8" matplotlib "${VIPS_SPECS[@]}"
fi
"$VENV/bin/python" - <<'EOF'
import sys
from PIL import features
import thumbor, PIL
assert thumbor.__version__.startswith("7.8"), thumbor.__version__
for f in ("jpg", "webp", "avif", "zlib"):
    assert features.check(f), f"Pillow {PIL.__version__} lacks {f}: thumbor could not serve it"
import pyvips
assert (pyvips.version(0), pyvips.version(1)) == (8, 18), f"libvips {pyvips.version(0)}.{pyvips.version(1)}, not 8.18"
for suffix in (".jpg", ".png", ".webp", ".avif"):
    assert pyvips.Image.black(8, 8, bands=3).write_to_buffer(suffix), f"this libvips cannot write {suffix}"
EOF

# --- 3. The sources: made from the corpus's camera photos, never copied into the repository ---------------------
CORPUS="${IMAGE_CORPUS:-$ROOT/../shared/corpus}"
PHOTOS="$CORPUS/photos"
[[ -d "$PHOTOS" ]] || { echo "bench-proxy: no photos at $PHOTOS (set IMAGE_CORPUS)" >&2; exit 1; }
SOURCES="$BUILD/sources"
stamp="v$(sed -n 's/^VERSION = \([0-9]*\).*/\1/p' "$HERE/make_sources.py") $(ls -l "$PHOTOS" | md5sum | cut -c1-12)"
if [[ "$(cat "$SOURCES/.stamp" 2>/dev/null)" != "$stamp" ]]; then
    log "making the sources from $PHOTOS (a few minutes: AVIF encoding)"
    rm -rf "$SOURCES"
    "$VENV/bin/python" "$HERE/make_sources.py" "$PHOTOS" "$SOURCES" 55 >/dev/null
    echo "$stamp" >"$SOURCES/.stamp"
fi

# --- 4. The ThumbnailServer, release ----------------------------------------------------------------------------
if [[ -z "${SERVER_BIN:-}" ]]; then
    scratch=("--scratch-path" "${SERVER_SCRATCH:-$ROOT/Examples/ThumbnailServer/.build}")
    log "swift build -c release --package-path Examples/ThumbnailServer (a cold build takes 10+ minutes)"
    swift build -c release --package-path "$ROOT/Examples/ThumbnailServer" "${scratch[@]}" -j 2 \
        --product thumbnail-server >&2
    SERVER_BIN="$(swift build -c release --package-path "$ROOT/Examples/ThumbnailServer" "${scratch[@]}" \
        --show-bin-path)/thumbnail-server"
fi
[[ -x "$SERVER_BIN" ]] || { echo "bench-proxy: no server binary at $SERVER_BIN" >&2; exit 1; }
export SERVER_BIN

# --- 5. The runs, the table, the chart ---------------------------------------------------------------------------
configs=(${CONFIGS:-sdk thumbor1 thumbor2 thumbor2c vips})
log "measuring (about $(( ${ROUNDS:-3} * 2 * ${#configs[@]} * 4 * (${DURATION:-15} + ${WARMUP:-3} + 6) / 60 )) minutes)"
"$VENV/bin/python" "$HERE/bench_proxy.py" --build "$BUILD" --sources "$SOURCES" --venv "$VENV" --root "$ROOT" \
    --out "$OUT"
