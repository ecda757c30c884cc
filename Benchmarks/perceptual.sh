#!/usr/bin/env bash
# Issue 35 item 4: the perceptual quality target against fixed q 80 (bytes, worst distance, CPU per image, encodes
# per image) and the placeholders' cost, on the corpus photos at fit 512 and fit 256, per format (JPEG, WebP, AVIF).
#
#   Benchmarks/perceptual.sh
#
# Builds PerceptualRunner (release), runs it, and writes its own section of RESULTS.md (replacing the one an earlier
# run wrote; the rest of the file is left alone, so it runs without run.sh), the chart perceptual.png and the raw rows
# perceptual.tsv. The chart needs matplotlib: a virtualenv in .build/perceptual-venv (PyPI, pinned). Needs the shared
# corpus's photos ($IMAGE_CORPUS or ../shared/corpus). About 10 minutes on 2 idle cores.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
SWIFT="${SWIFT:-swift}"
CORPUS="${IMAGE_CORPUS:-$HERE/../../shared/corpus}"
PHOTOS="$CORPUS/photos"
[[ -d "$PHOTOS" ]] || { echo "perceptual.sh: no corpus photos in $PHOTOS (set IMAGE_CORPUS)" >&2; exit 1; }

"$SWIFT" build -c release --product PerceptualRunner >&2
BIN="$("$SWIFT" build -c release --show-bin-path)"
VENV="$HERE/.build/perceptual-venv"
if ! "$VENV/bin/python" -c 'import matplotlib' 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q 'matplotlib==3.9.2' >&2
fi
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
STARTED="$(date '+%Y-%m-%d %H:%M')"
"$BIN/PerceptualRunner" "$PHOTOS" "$HERE/perceptual.tsv"
LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"
"$VENV/bin/python" "$HERE/perceptual_report.py" "$HERE/perceptual.tsv" "$HERE/RESULTS.md" "$HERE/perceptual.png" \
    "$STARTED" "$LOAD_START" "$LOAD_END" "$(git -C "$HERE" rev-parse --short HEAD)"
