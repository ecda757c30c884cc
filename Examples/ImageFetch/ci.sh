#!/usr/bin/env bash
# Builds image-fetch and runs it against a local static server (python3 -m http.server on 127.0.0.1, random free
# port) serving JPEG, PNG and WebP files made here with Pillow; checks the files it writes with Pillow too.
set -euo pipefail
cd "$(dirname "$0")"
swift=${SWIFT:-swift}
# EXAMPLES_SCRATCH (set by scripts/test.sh): one build folder for every example, so the SDK and its dependencies
# compile once for all of them.
scratch=()
[ -n "${EXAMPLES_SCRATCH:-}" ] && scratch=(--scratch-path "$EXAMPLES_SCRATCH")
fail() { echo "ImageFetch ci: FAIL: $*" >&2; exit 1; }

# Pillow comes from Debian's python3-pil, which is /usr/bin/python3's; a python3 earlier on PATH may lack it.
python=""
for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c 'import PIL' 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || fail "no python3 with Pillow (apt-get install python3-pil)"

$swift build "${scratch[@]}"
tool="$($swift build "${scratch[@]}" --show-bin-path)/image-fetch"

work=$(mktemp -d)
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

"$tool" --help | tee "$work/help.txt"
for option in --input --output --max-size --format --quality --progress; do
    grep -q -- "$option" "$work/help.txt" || fail "--help does not mention $option"
done

mkdir -p "$work/site"
"$python" - "$work/site" <<'PY'
import sys
from PIL import Image, ImageDraw
site = sys.argv[1]
photo = Image.new("RGB", (800, 600), (70, 130, 220))
ImageDraw.Draw(photo).ellipse((500, 80, 700, 280), fill=(250, 210, 80))
photo.save(f"{site}/photo.jpg", quality=90)
logo = Image.new("RGBA", (300, 200), (0, 0, 0, 0))
ImageDraw.Draw(logo).rounded_rectangle((20, 20, 280, 180), 30, fill=(220, 60, 90, 255))
logo.save(f"{site}/logo.png")
photo.resize((400, 300)).save(f"{site}/banner.webp", quality=80)
PY

port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$python" -m http.server "$port" --bind 127.0.0.1 --directory "$work/site" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
base="http://127.0.0.1:$port"
printf '%s\n' "# the samples" "$base/photo.jpg" "$base/logo.png" "" "$base/banner.webp" >"$work/urls.txt"

# check FOLDER NAME FORMAT MAXW MAXH: the file decodes with Pillow as FORMAT within MAXW x MAXH.
check() {
    "$python" - "$@" <<'PY' || fail "bad output file $1/$2"
import sys
from PIL import Image
folder, name, fmt, max_w, max_h = sys.argv[1:]
with Image.open(f"{folder}/{name}") as image:
    image.load()
    assert image.format == fmt, (image.format, fmt)
    assert image.width <= int(max_w) and image.height <= int(max_h), image.size
    print(f"  {name}: {image.format} {image.width}x{image.height}")
PY
}

cd "$work"
echo "==> originals, cold cache"
timeout 120 "$tool" --input urls.txt --output originals --cache-dir cache --progress always 2>progress.txt \
    | tee run1.txt
grep -q '3/3 100%' progress.txt || fail "no progress bar on stderr"
grep -q 'fetched 3 of 3 .*: 3 from the network, 0 from memory, 0 from disk' run1.txt || fail "expected 3 downloads"
for name in photo.jpg logo.png banner.webp; do
    cmp "site/$name" "originals/$name" || fail "$name was not written as downloaded"
done

echo "==> resized to 64x64 and re-encoded as PNG, new process over the same disk cache"
timeout 120 "$tool" --input urls.txt --output thumbs --cache-dir cache --max-size 64x64 --format png | tee run2.txt
grep -q ': 0 from the network, 0 from memory, 3 from disk' run2.txt || fail "expected 3 disk cache hits"
check thumbs photo.png PNG 64 64
check thumbs logo.png PNG 64 64
check thumbs banner.png PNG 64 64

echo "==> the other encoders: jpeg, webp, gif"
timeout 60 "$tool" "$base/photo.jpg" --output jpeg --cache-dir cache --format jpeg --quality 60 --max-size 200x200
check jpeg photo.jpg JPEG 200 200
timeout 60 "$tool" "$base/logo.png" --output webp --cache-dir cache --format webp
check webp logo.webp WEBP 300 200
timeout 60 "$tool" "$base/banner.webp" --output gif --cache-dir cache --format gif --max-size 100x100
check gif banner.gif GIF 100 100

echo "==> avif: encode, then fetch the AVIF back from the server and decode it to PNG"
timeout 120 "$tool" "$base/logo.png" --output avif --cache-dir cache --format avif --quality 70 --max-size 150x150
"$python" - avif/logo.avif <<'PY' || fail "avif/logo.avif is not an AVIF file"
import sys
data = open(sys.argv[1], "rb").read()
assert data[4:8] == b"ftyp" and b"avif" in data[8:32], data[:32]
print(f"  logo.avif: AVIF, {len(data)} bytes")
PY
cp avif/logo.avif site/logo.avif
timeout 60 "$tool" "$base/logo.avif" --output avif-back --cache-dir cache --format png
check avif-back logo.png PNG 150 150

echo "==> a missing image fails the run"
if timeout 60 "$tool" "$base/missing.png" --output missing --cache-dir cache 2>missing.txt; then
    fail "a 404 did not fail the run"
fi
grep -q 'error http://127.0.0.1:.*/missing.png' missing.txt || fail "no error line for the 404"

echo "ImageFetch ci: ok"
